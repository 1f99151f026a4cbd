package coretest

import (
	"fmt"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// BenchDiffPaging times following a whole-store diff page by page
// (DiffStorePage at the default limit of 20) over a store of n memories
// of 64 bytes where every memory differs between the two moments, far
// more than 2,000 versions apart:
//
//   - "whole": from before the first write to now (the whole store, as in
//     docs/perf/timemachine.md): every memory added, with a patch;
//   - "added": from before the first write to the n memories written
//     (one MemoryInsertBatch), a moment in the middle of the history;
//   - "moved": from the n memories written to after a RenameDirectory of
//     all of them: every memory moved (two recent moments).
//
// maxPages > 0 stops after that many pages (to time a slow method's page
// without following all of it). Next to it, in the same run, the baseline
// "pass": listing both whole states through ListMemoriesAsOf (pages of
// 1,000). It reports ms/page, pages, ms/diff (the pages followed) and
// diff/pass, the ratio to quote: about 1 when a whole diff costs one pass
// over the two states, about pages when each page reads them whole.
func BenchDiffPaging(b *testing.B, open func(testing.TB) storage.Driver, n, maxPages int) {
	d := open(b)
	svc, ctx, p := benchService(b, d)
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "diff"})
	if err != nil {
		b.Fatal(err)
	}
	before := time.Now().Add(-time.Minute)
	err = d.Write(ctx, func(tx storage.Tx) error {
		now := time.Now().UTC().Truncate(time.Microsecond)
		var ms []*trove.Memory
		var vs []*trove.MemoryVersion
		for i := range n {
			c := fmt.Sprintf("memory %06d\n%051d\n", i, i)
			m := &trove.Memory{ID: trove.NewID(trove.PrefixMemory, now), StoreID: st.ID, Path: fmt.Sprintf("/d/m%06d.md", i),
				Content: &c, SizeBytes: len(c), SHA256: sha(c), VersionID: trove.NewID(trove.PrefixVersion, now), CreatedAt: now, UpdatedAt: now}
			v := &trove.MemoryVersion{ID: m.VersionID, StoreID: st.ID, MemoryID: m.ID, Operation: trove.OpCreated, Path: &m.Path,
				Content: &c, SizeBytes: &m.SizeBytes, SHA256: &m.SHA256, CreatedBy: &p.Actor, CreatedAt: now}
			ms, vs = append(ms, m), append(vs, v)
		}
		return tx.MemoryInsertBatch(ctx, ms, vs)
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.RenameDirectory(ctx, st.ID, trove.RenameDirectoryParams{From: "/d", To: "/e"}); err != nil {
		b.Fatal(err)
	}
	seeded, renamed := trove.Moment{Seq: int64(n)}, trove.Moment{Seq: int64(2 * n)}
	for _, c := range []struct {
		name     string
		from, to trove.Moment
		kind     trove.DiffKind
	}{
		{"whole", trove.Moment{Time: &before}, trove.Moment{}, trove.DiffAdded},
		{"added", trove.Moment{Time: &before}, seeded, trove.DiffAdded},
		{"moved", seeded, renamed, trove.DiffMoved},
	} {
		b.Run(c.name, func(b *testing.B) {
			pass := func() {
				for _, at := range []trove.Moment{c.from, c.to} {
					q := trove.ListMemoriesParams{Limit: 1000}
					for {
						pg, err := svc.ListMemoriesAsOf(ctx, st.ID, at, q)
						if err != nil {
							b.Fatal(err)
						}
						if q.Cursor = pg.NextPage; q.Cursor == "" {
							break
						}
					}
				}
			}
			start := time.Now()
			pass()
			passTime := time.Since(start)
			var pages, changes int
			b.ResetTimer()
			for range b.N {
				pages, changes = 0, 0
				q := trove.DiffParams{From: c.from, To: c.to}
				for {
					pg, err := svc.DiffStorePage(ctx, st.ID, q)
					if err != nil {
						b.Fatal(err)
					}
					pages++
					for _, ch := range pg.Changes {
						if ch.Kind != c.kind {
							b.Fatalf("change %s is %s, want %s", ch.MemoryID, ch.Kind, c.kind)
						}
					}
					changes += len(pg.Changes)
					if pg.NextPage == "" || pages == maxPages {
						break
					}
					q = trove.DiffParams{Cursor: pg.NextPage}
				}
			}
			b.StopTimer()
			if maxPages == 0 && changes != n {
				b.Fatalf("the diff holds %d changes, want %d", changes, n)
			}
			per := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(per.Microseconds())/1000/float64(pages), "ms/page")
			b.ReportMetric(float64(pages), "pages")
			b.ReportMetric(float64(per.Microseconds())/1000, "ms/diff")
			b.ReportMetric(float64(passTime.Microseconds())/1000, "ms/pass")
			b.ReportMetric(per.Seconds()/passTime.Seconds(), "diff/pass")
		})
	}
}
