package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/internal/loadgen"
)

// BenchmarkStoreLockCache measures what the committer's store cache
// (storeCache) buys: core's UpdateMemory from 16 goroutines on one store,
// over a driver with the cache and one without, in alternating rounds. It
// reports the time and CPU ratios without/with (above 1: the cache pays).
//
//	go test -run '^$' -bench StoreLockCache -benchtime 4000x ./storage/sqlite/
func BenchmarkStoreLockCache(b *testing.B) {
	const conc, rounds = 16, 4
	type side struct {
		svc *core.Service
		ctx context.Context
		st  string
		ids []string
	}
	mk := func(cache bool) *side {
		db, err := Open(context.Background(), filepath.Join(b.TempDir(), fmt.Sprint(cache, ".db")), Options{AutoMigrate: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		if !cache {
			db.stores = nil
		}
		svc := core.New(db, core.Options{})
		ctx := trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: "wrkspc_b", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_b"}})
		st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		s := &side{svc: svc, ctx: ctx, st: st.ID}
		for i := range 64 {
			m, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/m%d.md", i), Content: "x"})
			if err != nil {
				b.Fatal(err)
			}
			s.ids = append(s.ids, m.ID)
		}
		return s
	}
	run := func(s *side, n int) time.Duration {
		t0 := time.Now()
		var wg sync.WaitGroup
		per := n / conc
		for g := range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					c := fmt.Sprintf("content %d %d", g, i)
					if _, err := s.svc.UpdateMemory(s.ctx, s.st, s.ids[(g*per+i)%len(s.ids)], trove.UpdateMemoryParams{Content: &c}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(t0)
	}
	with, without := mk(true), mk(false)
	var dw, dn, cw, cn time.Duration
	b.ResetTimer()
	for range rounds {
		n := max(b.N/rounds, conc)
		c0 := loadgen.ProcessCPU()
		dn += run(without, n)
		c1 := loadgen.ProcessCPU()
		dw += run(with, n)
		cn, cw = cn+c1-c0, cw+loadgen.ProcessCPU()-c1
	}
	b.ReportMetric(dn.Seconds()/dw.Seconds(), "nocache/cache-time")
	b.ReportMetric(cn.Seconds()/cw.Seconds(), "nocache/cache-cpu")
}
