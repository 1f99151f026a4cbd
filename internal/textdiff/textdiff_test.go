package textdiff

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLines(t *testing.T) {
	for _, c := range []struct {
		name     string
		old, new string
		want     []Line
	}{
		{"equal", "a\n", "a\n", nil},
		{"change", "a\nb\n", "a\nc\n", []Line{
			{Header, "--- x"}, {Header, "+++ y"}, {Hunk, "@@ -1,2 +1,2 @@"},
			{Context, " a"}, {Removed, "-b"}, {Added, "+c"},
		}},
		// Lines that look like headers inside the body stay changes.
		{"header-like body", "-- a\n", "++ b\n", []Line{
			{Header, "--- x"}, {Header, "+++ y"}, {Hunk, "@@ -1 +1 @@"},
			{Removed, "--- a"}, {Added, "+++ b"},
		}},
		{"no final newline", "a", "b", []Line{
			{Header, "--- x"}, {Header, "+++ y"}, {Hunk, "@@ -1 +1 @@"},
			{Removed, "-a"}, {Note, `\ No newline at end of file`}, {Added, "+b"}, {Note, `\ No newline at end of file`},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Lines("x", "y", c.old, c.new)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("Lines (-want +got):\n%s\nunified:\n%s", diff, Unified("x", "y", c.old, c.new))
			}
		})
	}
}
