package postgres_test

import (
	"testing"

	"github.com/trovehq/trove/storage/storagetest"
)

// FuzzMemorySearch: no query reaches tsquery syntax; hits agree with the
// highlighter's word rule (storagetest.FuzzMemorySearch).
func FuzzMemorySearch(f *testing.F) {
	testURL(f)
	storagetest.FuzzMemorySearch(f, openDB(f))
}
