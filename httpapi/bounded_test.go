package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/trovehq/trove/storage/sqlite/sqlitetest"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
)

// allocsOf serves one request in process and returns the bytes the
// process allocated meanwhile (runtime.MemStats.TotalAlloc: everything the
// request allocated, whether freed yet or not) and the response.
func allocsOf(t *testing.T, h http.Handler, req *http.Request) (uint64, *httptest.ResponseRecorder) {
	t.Helper()
	rec := httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h.ServeHTTP(rec, req)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, rec
}

// TestDiffMemoryBounded (issue 22 item 6): the repro (24 and 48 memories
// of 60 kB each updated once), diffed from the start to now: one answer
// holds one bounded page (not the 10 MB of every patch) with a
// next_page that continues it, and what the server allocates for it is
// bounded by the page, not the store: doubling the store does not double
// it. The pages together hold every change exactly once.
func TestDiffMemoryBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc := core.New(db, core.Options{})
	k, secret, err := svc.CreateKey(ctx, testWorkspace, "t")
	if err != nil {
		t.Fatal(err)
	}
	pctx := trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: testWorkspace, Actor: trove.NewActor(trove.ActorAPI, k.ID)})
	h := httpapi.NewServer(httpapi.Config{Services: svc, Auth: svc})
	body := func(i, gen int) string {
		var b strings.Builder
		for b.Len() < 60_000 {
			fmt.Fprintf(&b, "memory %d generation %d line %d: the quick brown fox\n", i, gen, b.Len())
		}
		return b.String()
	}
	fill := func(st *trove.Store, n int) {
		for i := range n {
			m, err := svc.CreateMemory(pctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/m%03d.md", i), Content: body(i, 0)})
			if err != nil {
				t.Fatal(err)
			}
			c := body(i, 1)
			if _, err := svc.UpdateMemory(pctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: &c}); err != nil {
				t.Fatal(err)
			}
		}
	}
	type page struct {
		Changes  []struct{ Patch string } `json:"changes"`
		NextPage *string                  `json:"next_page"`
	}
	get := func(st *trove.Store, q string) (uint64, int, page) {
		req := httptest.NewRequest("GET", "/trove/v1/memory_stores/"+st.ID+"/diff?"+q, nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		n, rec := allocsOf(t, h, req)
		if rec.Code != 200 {
			t.Fatalf("diff ?%s: %d %s", q, rec.Code, rec.Body.String())
		}
		var p page
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		return n, rec.Body.Len(), p
	}
	var allocs [2]uint64
	for i, n := range []int{24, 48} {
		st, err := svc.CreateStore(pctx, trove.CreateStoreParams{Name: fmt.Sprint(n)})
		if err != nil {
			t.Fatal(err)
		}
		fill(st, n)
		a, size, p := get(st, "from=1&to=now&limit=100")
		allocs[i] = a
		t.Logf("%d memories: first page %d changes, %d bytes, %.1f MiB allocated", n, len(p.Changes), size, float64(a)/(1<<20))
		if size > trove.MaxDiffPageBytes+200_000 || p.NextPage == nil {
			t.Fatalf("%d memories: one answer is %d bytes (next_page %v), want at most ~%d and a continuation", n, size, p.NextPage, trove.MaxDiffPageBytes)
		}
		if i > 0 {
			continue
		}
		// Every change, once, across the pages.
		seen := len(p.Changes)
		for p.NextPage != nil {
			_, _, p = get(st, "page="+*p.NextPage)
			seen += len(p.Changes)
		}
		if seen != n { // from version 1: every memory changed after it
			t.Fatalf("%d memories: the pages hold %d changes, want %d", n, seen, n)
		}
	}
	if allocs[0] > 48<<20 || float64(allocs[1]) > 1.5*float64(allocs[0]) {
		t.Fatalf("a diff page allocates %.1f MiB for 24 memories and %.1f MiB for 48: want bounded by the page, not the store",
			float64(allocs[0])/(1<<20), float64(allocs[1])/(1<<20))
	}
}
