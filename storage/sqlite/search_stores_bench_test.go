package sqlite_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/loadgen"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// BenchmarkSearchOneStore: what a search of one store costs as the
// database around it grows (issue 24, item 3): the driver's MemorySearch
// (storage.ReadSearch, limit 21, as core asks for a page of 20) of the
// first store, on a database of 1 store and on one of 10 stores, each
// store holding searchStoreSize memories of the search corpus
// (internal/loadgen, 1 KiB), the query classes of loadgen.SearchQueries
// in turn, the two databases in alternating rounds. Reports each class's
// median process CPU per search at each size (<class>-1-us, <class>-10-us)
// and their ratio (<class>-ratio: 10 stores ÷ 1; flat is 1), and the
// ratio of the classes' CPU summed (all-ratio).
//
//	go test -run '^$' -bench SearchOneStore -benchtime 1x ./storage/sqlite/
func BenchmarkSearchOneStore(b *testing.B) {
	const searchStoreSize, rounds, perRound = 2000, 7, 5
	ctx := context.Background()
	corpus := loadgen.NewCorpus()
	queries := loadgen.SearchQueries(corpus.Vocab)
	classes := slices.Sorted(maps.Keys(queries))
	build := func(stores int) (storage.Driver, string) {
		db, err := sqlite.Open(ctx, sqlitetest.Path(b), sqlite.Options{AutoMigrate: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		var first string
		for s := range stores {
			now := time.Now()
			st := &trove.Store{ID: trove.NewID(trove.PrefixStore, now), WorkspaceID: "wrkspc_b", Name: fmt.Sprint(s), CreatedAt: now, UpdatedAt: now}
			if s == 0 {
				first = st.ID
			}
			if err := db.Write(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, st) }); err != nil {
				b.Fatal(err)
			}
			for lo := 0; lo < searchStoreSize; lo += 500 {
				var ms []*trove.Memory
				var vs []*trove.MemoryVersion
				for i := lo; i < lo+500; i++ {
					c := corpus.Text(s*searchStoreSize + i)
					m := &trove.Memory{ID: trove.NewID(trove.PrefixMemory, now), StoreID: st.ID, Path: fmt.Sprintf("/notes/m%05d.md", i),
						Content: &c, SizeBytes: len(c), SHA256: "-", VersionID: trove.NewID(trove.PrefixVersion, now), CreatedAt: now, UpdatedAt: now}
					ms = append(ms, m)
					vs = append(vs, &trove.MemoryVersion{ID: m.VersionID, StoreID: st.ID, MemoryID: m.ID, Operation: trove.OpCreated,
						Path: &m.Path, Content: &c, SizeBytes: &m.SizeBytes, SHA256: &m.SHA256,
						CreatedBy: &trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_b"}, CreatedAt: now})
				}
				if err := db.Write(ctx, func(tx storage.Tx) error { return tx.MemoryInsertBatch(ctx, ms, vs) }); err != nil {
					b.Fatal(err)
				}
			}
		}
		return db, first
	}
	type side struct {
		db    storage.Driver
		store string
		cpu   map[string][]float64
	}
	var sides []*side
	for _, n := range []int{1, 10} {
		db, first := build(n)
		sides = append(sides, &side{db: db, store: first, cpu: map[string][]float64{}})
	}
	search := func(s *side, q string) {
		sq, err := trove.ParseSearchQuery(q)
		if err != nil {
			b.Fatal(err)
		}
		if err := storage.ReadSearch(ctx, s.db, func(tx storage.Tx) error {
			_, err := tx.MemorySearch(ctx, storage.MemorySearchParams{WorkspaceID: "wrkspc_b", StoreIDs: []string{s.store}, Query: sq, Limit: 21})
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	for _, s := range sides { // the index caught up, every statement prepared
		for _, c := range classes {
			for range 3 {
				search(s, queries[c])
			}
		}
	}
	b.ResetTimer()
	for range b.N * rounds {
		for _, s := range sides {
			for _, c := range classes {
				c0 := loadgen.ProcessCPU()
				for range perRound {
					search(s, queries[c])
				}
				s.cpu[c] = append(s.cpu[c], float64((loadgen.ProcessCPU()-c0).Microseconds())/perRound)
			}
		}
	}
	b.StopTimer()
	med := func(xs []float64) float64 { s := slices.Clone(xs); slices.Sort(s); return s[len(s)/2] }
	var sum1, sum10 float64
	for _, c := range classes {
		one, ten := med(sides[0].cpu[c]), med(sides[1].cpu[c])
		sum1, sum10 = sum1+one, sum10+ten
		b.ReportMetric(one, c+"-1-us")
		b.ReportMetric(ten, c+"-10-us")
		b.ReportMetric(ten/one, c+"-ratio")
	}
	b.ReportMetric(sum10/sum1, "all-ratio")
}
