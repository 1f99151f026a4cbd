package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/sqlite"
)

// BenchmarkFork10k: core.ForkStore of a 10,000-memory store (1 KiB each) on
// SQLite, next to the same rows written in one transaction (fork/seed).
//
//	go test -run '^$' -bench Fork10k -benchtime 3x ./storage/sqlite/
func BenchmarkFork10k(b *testing.B) {
	coretest.BenchFork(b, func(tb testing.TB) storage.Driver {
		db, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { db.Close() })
		return db
	})
}
