package console

import (
	"testing"
	"time"
)

func TestAgo(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		d    time.Duration // how long before now
		want string
	}{
		{"seconds", 59 * time.Second, "just now"},
		{"one minute", time.Minute, "1 minute ago"},
		{"minutes", 3*time.Minute + 59*time.Second, "3 minutes ago"},
		{"one hour", time.Hour, "1 hour ago"},
		{"hours", 23 * time.Hour, "23 hours ago"},
		{"yesterday", 30 * time.Hour, "yesterday"},
		{"days", 29 * 24 * time.Hour, "29 days ago"},
		{"months", 61 * 24 * time.Hour, "2 months ago"},
		{"one year", 400 * 24 * time.Hour, "1 year ago"},
		{"years", 800 * 24 * time.Hour, "2 years ago"},
		{"another clock, ahead", -2 * time.Minute, "in 2 minutes"},
		{"another clock, a day ahead", -25 * time.Hour, "tomorrow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ago(now, now.Add(-tc.d)); got != tc.want {
				t.Errorf("ago(%v before) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
	got := string(timeHTML(now, time.Date(2026, 12, 2, 11, 57, 0, 0, time.FixedZone("X", 3600))))
	if want := `<time datetime="2026-12-02T10:57:00Z" title="2026-12-02 10:57:00 UTC">1 hour ago</time>`; got != want {
		t.Errorf("timeHTML = %s, want %s", got, want)
	}
}
