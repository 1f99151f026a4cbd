package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/sqlite"
)

// BenchmarkDiffPaging follows whole-store diffs of 2,000 and 20,000
// memories, every one changed, page by page (coretest.BenchDiffPaging).
// TROVE_BENCH_DIFF_PAGES > 0 stops each diff after that many pages:
//
//	go test -run '^$' -bench DiffPaging -benchtime 1x ./storage/sqlite/
func BenchmarkDiffPaging(b *testing.B) {
	maxPages, _ := strconv.Atoi(os.Getenv("TROVE_BENCH_DIFF_PAGES"))
	for _, n := range []int{2000, 20000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			coretest.BenchDiffPaging(b, func(tb testing.TB) storage.Driver {
				db, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
				if err != nil {
					tb.Fatal(err)
				}
				tb.Cleanup(func() { db.Close() })
				return db
			}, n, maxPages)
		})
	}
}
