package cli

import "github.com/trovehq/trove/internal/textdiff"

// unifiedDiff is the one place the CLI diffs texts: a unified diff of old
// and new with three lines of context, "" when they are equal.
func unifiedDiff(oldLabel, newLabel, old, new string) string {
	return textdiff.Unified(oldLabel, newLabel, old, new)
}
