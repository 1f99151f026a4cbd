package sqlite_test

import (
	"testing"

	"github.com/trovehq/trove/storage/storagetest"
)

// FuzzMemorySearch: no query reaches FTS5 syntax; hits agree with the
// highlighter's word rule (storagetest.FuzzMemorySearch).
func FuzzMemorySearch(f *testing.F) {
	storagetest.FuzzMemorySearch(f, openTest(f))
}
