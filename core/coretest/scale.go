package coretest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage"
)

// ForkScale is how many memories BenchFork's source store holds, each of
// ForkContentBytes.
const (
	ForkScale        = 10000
	ForkContentBytes = 1024
)

// BenchFork times core.ForkStore of a store of ForkScale memories of 1 KiB
// over the driver open returns, next to a baseline measured in the same
// run: the driver writing the same memories and versions in one
// transaction with one MemoryInsertBatch (what seeding the source costs), so
// fork/seed is what reading the store as of the moment and the service add. It reports ms/fork,
// memories/s and fork/seed (the ratio to quote on a shared machine), and
// after the forks checks that each fork holds every memory and that a
// write to the source after the fork leaves the fork as it was.
func BenchFork(b *testing.B, open func(testing.TB) storage.Driver) {
	d := open(b)
	svc, ctx, p := benchService(b, d)
	src, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "source"})
	if err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("x", ForkContentBytes-16)
	start := time.Now()
	var first *trove.Memory
	err = d.Write(ctx, func(tx storage.Tx) error {
		now := time.Now().UTC().Truncate(time.Microsecond)
		var ms []*trove.Memory
		var vs []*trove.MemoryVersion
		for i := range ForkScale {
			c := fmt.Sprintf("%015d\n", i) + body
			m := &trove.Memory{ID: trove.NewID(trove.PrefixMemory, now), StoreID: src.ID, Path: fmt.Sprintf("/d%02d/m%05d.md", i%50, i),
				Content: &c, SizeBytes: len(c), SHA256: sha(c), VersionID: trove.NewID(trove.PrefixVersion, now), CreatedAt: now, UpdatedAt: now}
			v := &trove.MemoryVersion{ID: m.VersionID, StoreID: src.ID, MemoryID: m.ID, Operation: trove.OpCreated, Path: &m.Path,
				Content: &c, SizeBytes: &m.SizeBytes, SHA256: &m.SHA256, CreatedBy: &p.Actor, CreatedAt: now}
			ms, vs = append(ms, m), append(vs, v)
		}
		first = ms[0]
		return tx.MemoryInsertBatch(ctx, ms, vs)
	})
	if err != nil {
		b.Fatal(err)
	}
	seed := time.Since(start)
	var forks []*trove.ForkResult
	b.ResetTimer()
	for i := range b.N {
		r, err := svc.ForkStore(ctx, src.ID, trove.ForkStoreParams{Name: fmt.Sprintf("fork %d", i)})
		if err != nil {
			b.Fatal(err)
		}
		forks = append(forks, r)
	}
	b.StopTimer()
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(per.Microseconds())/1000, "ms/fork")
	b.ReportMetric(float64(ForkScale)/per.Seconds(), "memories/s")
	b.ReportMetric(float64(seed.Microseconds())/1000, "ms/seed")
	b.ReportMetric(per.Seconds()/seed.Seconds(), "fork/seed")

	// Every fork is whole, and independent of a later write to the source.
	changed := "changed after the fork"
	if _, err := svc.UpdateMemory(ctx, src.ID, first.ID, trove.UpdateMemoryParams{Content: &changed}); err != nil {
		b.Fatal(err)
	}
	for _, r := range forks {
		if r.Copied != ForkScale {
			b.Fatalf("fork copied %d memories, want %d", r.Copied, ForkScale)
		}
		page, err := svc.ListMemoriesAsOf(ctx, r.Store.ID, trove.Moment{}, trove.ListMemoriesParams{Limit: 1, PathPrefix: "/d00/", View: trove.ViewFull})
		if err != nil {
			b.Fatal(err)
		}
		if len(page.Data) != 1 || *page.Data[0].Content != *first.Content || page.Data[0].Origin == nil || page.Data[0].Origin.VersionID != first.VersionID {
			b.Fatalf("fork %s after a write to the source: %+v", r.Store.ID, page.Data)
		}
		n := 0
		q := trove.ListMemoriesParams{Limit: 1000}
		for {
			pg, err := svc.ListMemoriesAsOf(ctx, r.Store.ID, trove.Moment{}, q)
			if err != nil {
				b.Fatal(err)
			}
			n += len(pg.Data)
			if pg.NextPage == "" {
				break
			}
			q.Cursor = pg.NextPage
		}
		if n != ForkScale {
			b.Fatalf("fork %s lists %d memories, want %d", r.Store.ID, n, ForkScale)
		}
	}
}

// benchService returns a core over d and a context signed in, as p, with a
// new key of workspace wsA, for the benchmarks' own setup.
func benchService(b *testing.B, d storage.Driver) (*core.Service, context.Context, *trove.Principal) {
	b.Helper()
	ctx := context.Background()
	svc := core.New(d, core.Options{})
	_, secret, err := svc.CreateKey(ctx, wsA, "bench")
	if err != nil {
		b.Fatal(err)
	}
	p, err := svc.Authenticate(ctx, secret)
	if err != nil {
		b.Fatal(err)
	}
	return svc, trove.WithPrincipal(ctx, p), p
}
