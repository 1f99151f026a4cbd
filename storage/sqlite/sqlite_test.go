package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/storagetest"
)

// openTest opens a fresh, migrated database in a temporary directory and
// closes it when the test ends.
func openTest(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func TestDriverConformance(t *testing.T) {
	storagetest.RunDriver(t, func(t *testing.T) storage.Driver { return openTest(t) })
}
