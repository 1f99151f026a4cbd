package racechild

import "testing"

func TestSetenv(t *testing.T) {
	for _, tc := range []struct{ name, before, want string }{
		{"unset", "", "atexit_sleep_ms=0"},
		{"other options kept", "halt_on_error=1", "halt_on_error=1 atexit_sleep_ms=0"},
		{"caller's own pause kept", "atexit_sleep_ms=200", "atexit_sleep_ms=200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GORACE", tc.before)
			if got := Setenv(); got != tc.want {
				t.Errorf("Setenv() = %q, want %q", got, tc.want)
			}
		})
	}
}
