package cli

import "github.com/aymanbagabas/go-udiff"

// unifiedDiff is the one place the CLI diffs texts: a unified diff of old
// and new with three lines of context, "" when they are equal.
func unifiedDiff(oldLabel, newLabel, old, new string) string {
	return udiff.Unified(oldLabel, newLabel, old, new)
}
