// Package textdiff is the one place Trove diffs texts (the CLI's diff and
// conflict output, the console's diff views): unified diffs from go-udiff,
// and the same diff as typed lines for rendering.
package textdiff

import (
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// Unified returns a unified diff of old and new with three lines of
// context, "" when they are equal.
func Unified(oldLabel, newLabel, old, new string) string {
	return udiff.Unified(oldLabel, newLabel, old, new)
}

// Kind is what a diff line is.
type Kind string

const (
	Header  Kind = "header"  // "--- a", "+++ b"
	Hunk    Kind = "hunk"    // "@@ -1,3 +1,4 @@"
	Context Kind = "context" // unchanged
	Added   Kind = "added"
	Removed Kind = "removed"
	Note    Kind = "note" // "\ No newline at end of file"
)

// Line is one line of a unified diff with its kind; Text keeps the line's
// leading marker.
type Line struct {
	Kind Kind
	Text string
}

// Lines returns Unified's diff split into typed lines (nil when the texts
// are equal).
func Lines(oldLabel, newLabel, old, new string) []Line {
	return Split(Unified(oldLabel, newLabel, old, new))
}

// Split types the lines of a unified diff u as Unified writes it (nil
// for ""), for a diff computed elsewhere (a store diff's patch).
func Split(u string) []Line {
	if u == "" {
		return nil
	}
	var out []Line
	for _, l := range strings.SplitAfter(u, "\n") {
		if l == "" {
			continue
		}
		l = strings.TrimSuffix(l, "\n")
		k := Context
		switch {
		case strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ "):
			if len(out) < 2 {
				k = Header
			} else if l[0] == '-' {
				k = Removed
			} else {
				k = Added
			}
		case strings.HasPrefix(l, "@@"):
			k = Hunk
		case strings.HasPrefix(l, "+"):
			k = Added
		case strings.HasPrefix(l, "-"):
			k = Removed
		case strings.HasPrefix(l, `\`):
			k = Note
		}
		out = append(out, Line{Kind: k, Text: l})
	}
	return out
}
