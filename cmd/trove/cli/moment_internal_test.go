package cli

import (
	"bytes"
	"testing"
	"time"
	_ "time/tzdata" // the zones the tests use (TZ=Europe/Paris), wherever they run
)

func TestAgo(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 4, 52, 50, 0, time.UTC)
	for _, c := range []struct {
		name string
		d    time.Duration
		want string
	}{
		{"now", 0, "now"},
		{"under a second", 400 * time.Millisecond, "now"},
		{"seconds", 42 * time.Second, "42s ago"},
		{"minutes", 5 * time.Minute, "5m ago"},
		{"minutes and seconds", 5*time.Minute + 3*time.Second, "5m3s ago"},
		{"hours", 2 * time.Hour, "2h ago"},
		{"two units at most", 2*time.Hour + 30*time.Minute + 10*time.Second, "2h30m ago"},
		{"days", 3 * 24 * time.Hour, "3d ago"},
		{"days and hours", 36 * time.Hour, "1d12h ago"},
		{"no gap units", 24*time.Hour + 5*time.Minute, "1d ago"},
		{"to come", -90 * time.Minute, "in 1h30m"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := ago(now.Add(-c.d), now); got != c.want {
				t.Errorf("ago(now-%v) = %q, want %q", c.d, got, c.want)
			}
		})
	}
}

// TestParseMomentEcho: a moment read as a time is echoed in UTC with how
// long ago it is; version numbers and IDs are not echoed; a bad moment is
// a usage error naming the flag.
func TestParseMomentEcho(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		flag, in, want string
		fail           bool
	}{
		{"--as-of", "2h", "as of ", false},
		{"FROM", "2h ago", "from ", false},
		{"TO", "2026-01-02T03:04:05Z", "to 2026-01-02T03:04:05Z (", false},
		{"--since", "12", "", false},
		{"--as-of", "memver_x", "", false},
		{"--as-of", "yesterday", "", true},
	} {
		var w bytes.Buffer
		m, err := parseMoment(&w, c.flag, c.in)
		if (err != nil) != c.fail {
			t.Errorf("parseMoment(%s %q): %v", c.flag, c.in, err)
			continue
		}
		if c.fail {
			if exitCode(err) != exitUsage {
				t.Errorf("parseMoment(%s %q): exit %d, want %d", c.flag, c.in, exitCode(err), exitUsage)
			}
			continue
		}
		got := w.String()
		if (c.want == "") != (got == "") || !bytes.HasPrefix(w.Bytes(), []byte(c.want)) {
			t.Errorf("parseMoment(%s %q) echoed %q, want it to start with %q", c.flag, c.in, got, c.want)
		}
		if m.Time != nil && !bytes.HasSuffix(w.Bytes(), []byte(")\n")) {
			t.Errorf("parseMoment(%s %q) echoed %q", c.flag, c.in, got)
		}
		if c.in == "2h" && !bytes.Contains(w.Bytes(), []byte("Z (2h ago)")) {
			t.Errorf("parseMoment(2h) echoed %q, want …Z (2h ago)", got)
		}
	}
}
