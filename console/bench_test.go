package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/console"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/sqlite"
)

// benchEnv is a console handler over core and SQLite with one signed-in
// console session, called in process (server time only: no network).
type benchEnv struct {
	h     http.Handler
	svc   *core.Service
	ctx   context.Context // the console principal
	token string
}

func newBenchEnv(b testing.TB) *benchEnv {
	b.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	svc := core.New(db, core.Options{})
	_, secret, err := svc.CreateKey(context.Background(), "wrkspc_default", "bench")
	if err != nil {
		b.Fatal(err)
	}
	token, p, err := svc.StartConsoleSession(context.Background(), secret)
	if err != nil {
		b.Fatal(err)
	}
	h := console.New(console.Config{Services: svc, Sessions: svc, Auth: svc})
	return &benchEnv{h: h, svc: svc, ctx: trove.WithPrincipal(context.Background(), p), token: token}
}

// interleaved times the page and its services baseline alternately in
// each iteration, so that both see the same machine load, and reports
// page-ms, services-ms and their ratio.
func interleaved(b *testing.B, page func(), services func()) {
	var pt, st time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		page()
		t1 := time.Now()
		services()
		st += time.Since(t1)
		pt += t1.Sub(t0)
		n++
	}
	b.ReportMetric(float64(pt.Microseconds())/1000/float64(n), "page-ms")
	b.ReportMetric(float64(st.Microseconds())/1000/float64(n), "services-ms")
	b.ReportMetric(float64(pt)/float64(st), "page/services")
}

// get serves one GET and fails unless it is a 200.
func (e *benchEnv) get(b testing.TB, path string) int {
	req := httptest.NewRequest("GET", path, nil)
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: e.token})
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		b.Fatalf("GET %s: %d %.300s", path, w.Code, w.Body.String())
	}
	return w.Body.Len()
}

// parallel runs n calls of fn on 32 goroutines (SQLite's group commit
// batches them).
func parallel(b *testing.B, n int, fn func(i int) error) {
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	next := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			b.Fatal(err)
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStorePage10k is the server time of a store page (memory count
// and size, and the tree's top level) of a 10,000-memory store in 100
// directories of 100 memories; BenchmarkTreeDir10k is one lazily loaded
// directory of it.
//
// Each has a "services" baseline in the same run: the service calls the
// page makes, without authentication, templates or HTTP.
func BenchmarkStorePage10k(b *testing.B) {
	e, st := tenK(b)
	interleaved(b, func() { e.get(b, "/console/stores/"+st.ID) }, func() {
		if _, err := e.svc.GetStore(e.ctx, st.ID); err != nil {
			b.Fatal(err)
		}
		if _, err := e.svc.ListMemories(e.ctx, st.ID, trove.ListMemoriesParams{PathPrefix: "/", Depth: 1, Limit: 100}); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkTreeDir10k(b *testing.B) {
	e, st := tenK(b)
	interleaved(b, func() { e.get(b, "/console/stores/"+st.ID+"/tree?dir=/project-42/") }, func() {
		if _, err := e.svc.ListMemories(e.ctx, st.ID, trove.ListMemoriesParams{PathPrefix: "/project-42/", Depth: 1, Limit: 100}); err != nil {
			b.Fatal(err)
		}
	})
}

func tenK(b *testing.B) (*benchEnv, *trove.Store) {
	e := newBenchEnv(b)
	st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "ten thousand"})
	if err != nil {
		b.Fatal(err)
	}
	parallel(b, 10000, func(i int) error {
		_, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{
			Path:    fmt.Sprintf("/project-%02d/note-%03d.md", i/100, i%100),
			Content: fmt.Sprintf("memory %d: the agent learned something worth keeping.\n", i),
		})
		return err
	})
	return e, st
}

// BenchmarkHistory1000 is the server time of the history page of a memory
// with 1,000 versions (its first page: the newest 100, with links to page
// through the rest).
func BenchmarkHistory1000(b *testing.B) {
	e := newBenchEnv(b)
	st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "history"})
	if err != nil {
		b.Fatal(err)
	}
	m, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/long/history.md", Content: "v0\n"})
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i < 1000; i++ {
		c := fmt.Sprintf("version %d of a memory edited many times\n", i)
		if _, err := e.svc.UpdateMemory(e.ctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: &c}); err != nil {
			b.Fatal(err)
		}
	}
	interleaved(b, func() { e.get(b, "/console/stores/"+st.ID+"/memories/"+m.ID+"/history") }, func() {
		if _, err := e.svc.GetStore(e.ctx, st.ID); err != nil {
			b.Fatal(err)
		}
		if _, err := e.svc.ListVersions(e.ctx, st.ID, trove.ListVersionsParams{MemoryID: m.ID, Limit: 100}); err != nil {
			b.Fatal(err)
		}
		if _, err := e.svc.GetMemory(e.ctx, st.ID, m.ID, trove.ViewBasic); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkStoreStats10k is the count behind a store's memories, size and
// versions (the page's script fetches it after the page): the store's
// stored counters (trove.StoreStatsService), one read whatever its size.
func BenchmarkStoreStats10k(b *testing.B) {
	e, st := tenK(b)
	for b.Loop() {
		e.get(b, "/console/stores/"+st.ID+"/stats")
	}
}
