package postgres_test

import (
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage"
)

// BenchmarkFork10k: core.ForkStore of a 10,000-memory store (1 KiB each) on
// PostgreSQL, next to the same rows written in one transaction (fork/seed).
//
//	go test -run '^$' -bench Fork10k -benchtime 3x ./storage/postgres/
func BenchmarkFork10k(b *testing.B) {
	coretest.BenchFork(b, func(tb testing.TB) storage.Driver { return openDB(tb) })
}
