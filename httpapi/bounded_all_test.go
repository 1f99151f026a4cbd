package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove/storage/sqlite/sqlitetest"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
)

// measured is what serving one request in process cost: the bytes
// allocated meanwhile (TotalAlloc), the peak of the heap in use above
// where it started (HeapInuse, sampled every 200 µs), and the response.
type measured struct {
	alloc, peak uint64
	rec         *httptest.ResponseRecorder
}

func measure(h http.Handler, req *http.Request) measured {
	rec := httptest.NewRecorder()
	var before, after runtime.MemStats
	// Twice: a sync.Pool keeps what it held through one collection (its
	// victim cache), so after one a request could reuse a buffer an earlier
	// request paid for, and allocate half of what the same request does
	// when it cannot (13.7 against 25 MiB for one as-of page, under -race
	// in a whole run): the smaller size then looked as if the larger grew.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > before.HeapInuse && ms.HeapInuse-before.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse - before.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	h.ServeHTTP(rec, req)
	close(stop)
	wg.Wait()
	runtime.ReadMemStats(&after)
	return measured{alloc: after.TotalAlloc - before.TotalAlloc, peak: peak.Load(), rec: rec}
}

// boundedFixture is one store and one session at the limits, at two sizes
// (n and 2n), so that a test can tell what grows with the data.
type boundedFixture struct {
	h      http.Handler
	secret string
	keyID  string
	n      [2]int
	stores [2]string
	sess   [2]string
}

func newBoundedFixture(t *testing.T, n int) *boundedFixture {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := core.New(db, core.Options{})
	k, secret, err := svc.CreateKey(ctx, testWorkspace, "t")
	if err != nil {
		t.Fatal(err)
	}
	pctx := trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: testWorkspace, Actor: trove.NewActor(trove.ActorAPI, k.ID)})
	f := &boundedFixture{secret: secret, keyID: k.ID, n: [2]int{n, 2 * n},
		h: httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Events: svc, Auth: svc, Changes: svc})}
	// Memories of ~100 kB (the content limit is 102,400 bytes), every one
	// holding the search word many times.
	content := func(i int) string {
		var b strings.Builder
		for b.Len() < 100_000 {
			fmt.Fprintf(&b, "memory %d needle line %d of many words\n", i, b.Len())
		}
		return b.String()
	}
	// Events of ~250 KiB (the event limit is 256 KiB).
	text := strings.Repeat("0123456789abcdef", 250_000/16)
	for s, count := range f.n {
		st, err := svc.CreateStore(pctx, trove.CreateStoreParams{Name: fmt.Sprint("s", s)})
		if err != nil {
			t.Fatal(err)
		}
		f.stores[s] = st.ID
		// Version 1 is the rollbacks' "since": every memory after it.
		if _, err := svc.CreateMemory(pctx, st.ID, trove.CreateMemoryParams{Path: "/0-first.md", Content: "first"}); err != nil {
			t.Fatal(err)
		}
		for i := range count {
			if _, err := svc.CreateMemory(pctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/m%04d.md", i), Content: content(i)}); err != nil {
				t.Fatal(err)
			}
		}
		se, _, err := svc.CreateSession(pctx, trove.CreateSessionParams{})
		if err != nil {
			t.Fatal(err)
		}
		f.sess[s] = se.ID
		body, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
		for range count {
			if _, err := svc.AppendEvents(pctx, se.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage, Body: string(body)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The search index is written off the write path, by the committer
	// when it is idle: have it done now, so that its allocations are not
	// counted against the requests measured (under load, it lagged into
	// the first ones and made a flat endpoint look like it grew).
	if err := db.CatchUpSearch(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *boundedFixture) request(method, path, body string) *http.Request {
	var req *http.Request
	if body == "" {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+f.secret)
	req.Header.Set("Anthropic-Beta", httpapi.BetaAgentMemory+","+httpapi.BetaManagedAgents)
	return req
}

// TestResponsesBounded (issue 22 item 6): every endpoint whose answer grows
// with a store or a transcript answers a bounded page with a continuation,
// built at the limits (memories of ~100 kB, events of ~250 KiB) at two
// sizes: the answer stays under its cap, what the server allocates for a
// flat endpoint does not grow when the data doubles, its peak heap stays
// bounded, and following the continuation yields every item once.
func TestResponsesBounded(t *testing.T) {
	f := newBoundedFixture(t, 24)
	const MiB = 1 << 20
	type page struct {
		Data         []json.RawMessage `json:"data"`
		Changes      []json.RawMessage `json:"changes"`
		ChangesTotal int               `json:"changes_total"`
		NextPage     *string           `json:"next_page"`
		Cursor       int64             `json:"cursor"` // the change feed's
		HasMore      bool              `json:"has_more"`
	}
	// cont is a page's continuation: next_page, or the change feed's
	// cursor when it has more.
	cont := func(p page) (string, bool) {
		if p.NextPage != nil {
			return *p.NextPage, true
		}
		return strconv.FormatInt(p.Cursor, 10), p.HasMore
	}
	for _, tc := range []struct {
		name string
		// req is the first request for fixture size s; next the request
		// for a next_page (nil: the query's page parameter).
		req  func(s int) *http.Request
		next func(s int, cursor string) *http.Request
		// maxBody bounds one answer; flat says the allocations must not
		// grow with the data; maxPeak bounds the peak heap of a request.
		maxBody int
		flat    bool
		maxPeak uint64
		// items counts a page's items; want the whole listing's.
		items func(p page) int
		want  func(s int) int
	}{
		{
			name: "transcript /trove/v1/sessions/{id}/events",
			req: func(s int) *http.Request {
				return f.request("GET", "/trove/v1/sessions/"+f.sess[s]+"/events?limit=100", "")
			},
			next: func(s int, c string) *http.Request {
				return f.request("GET", "/trove/v1/sessions/"+f.sess[s]+"/events?limit=100&page="+c, "")
			},
			maxBody: trove.MaxEventPageBytes + 64<<10, flat: true, maxPeak: 16 * MiB,
			items: func(p page) int { return len(p.Data) }, want: func(s int) int { return f.n[s] },
		},
		{
			name: "transcript /v1/sessions/{id}/events",
			req: func(s int) *http.Request {
				return f.request("GET", "/v1/sessions/"+f.sess[s]+"/events?limit=100", "")
			},
			next: func(s int, c string) *http.Request {
				return f.request("GET", "/v1/sessions/"+f.sess[s]+"/events?limit=100&page="+c, "")
			},
			maxBody: trove.MaxEventPageBytes + 64<<10, flat: true, maxPeak: 16 * MiB,
			items: func(p page) int { return len(p.Data) }, want: func(s int) int { return f.n[s] },
		},
		{
			name: "as-of listing, full view",
			req: func(s int) *http.Request {
				return f.request("GET", "/trove/v1/memory_stores/"+f.stores[s]+"/as_of/memories?view=full&limit=100", "")
			},
			next: func(s int, c string) *http.Request {
				return f.request("GET", "/trove/v1/memory_stores/"+f.stores[s]+"/as_of/memories?view=full&limit=100&page="+c, "")
			},
			maxBody: 20*120_000 + 64<<10, flat: true, maxPeak: 24 * MiB,
			items: func(p page) int { return len(p.Data) }, want: func(s int) int { return f.n[s] + 1 },
		},
		{
			name: "rollback dry run",
			req: func(s int) *http.Request {
				return f.request("POST", "/trove/v1/memory_stores/"+f.stores[s]+"/rollback",
					fmt.Sprintf(`{"api_key_id":%q,"since":"1","dry_run":true,"limit":5}`, f.keyID))
			},
			next: func(s int, c string) *http.Request {
				return f.request("POST", "/trove/v1/memory_stores/"+f.stores[s]+"/rollback",
					fmt.Sprintf(`{"api_key_id":%q,"since":"1","dry_run":true,"limit":5,"page":%q}`, f.keyID, c))
			},
			maxBody: 5 * 4 << 10, maxPeak: 16 * MiB,
			items: func(p page) int { return len(p.Changes) }, want: func(s int) int { return f.n[s] },
		},
		{
			name: "change feed",
			req: func(s int) *http.Request {
				return f.request("GET", "/trove/v1/memory_stores/"+f.stores[s]+"/changes?limit=10", "")
			},
			next: func(s int, c string) *http.Request {
				return f.request("GET", "/trove/v1/memory_stores/"+f.stores[s]+"/changes?limit=10&after="+c, "")
			},
			maxBody: 10 * 2 << 10, flat: true, maxPeak: 8 * MiB,
			items: func(p page) int { return len(p.Data) }, want: func(s int) int { return f.n[s] + 1 },
		},
		{
			name: "search",
			req: func(s int) *http.Request {
				return f.request("GET", "/trove/v1/search?q=needle&limit=100&store_id="+f.stores[s], "")
			},
			next: func(s int, c string) *http.Request {
				return f.request("GET", "/trove/v1/search?q=needle&limit=100&store_id="+f.stores[s]+"&page="+c, "")
			},
			maxBody: 100 * 2 << 10, flat: true, maxPeak: 24 * MiB,
			items: func(p page) int { return len(p.Data) }, want: func(s int) int { return f.n[s] },
		},
		{
			name: "audit verify",
			req: func(s int) *http.Request {
				return f.request("GET", "/trove/v1/memory_stores/"+f.stores[s]+"/audit/verify", "")
			},
			maxBody: 4 << 10, maxPeak: 16 * MiB,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var alloc [2]uint64
			for s := range 2 {
				m := measure(f.h, tc.req(s))
				if m.rec.Code != 200 {
					t.Fatalf("size %d: %d %s", f.n[s], m.rec.Code, m.rec.Body.String())
				}
				alloc[s] = m.alloc
				t.Logf("size %d: %d bytes answered, %.1f MiB allocated, peak heap +%.1f MiB", f.n[s], m.rec.Body.Len(), float64(m.alloc)/MiB, float64(m.peak)/MiB)
				if m.rec.Body.Len() > tc.maxBody {
					t.Errorf("size %d: the answer is %d bytes, want at most %d", f.n[s], m.rec.Body.Len(), tc.maxBody)
				}
				if m.peak > tc.maxPeak {
					t.Errorf("size %d: the peak heap grew by %.1f MiB, want at most %.1f", f.n[s], float64(m.peak)/MiB, float64(tc.maxPeak)/MiB)
				}
				if tc.items == nil {
					continue
				}
				var p page
				if err := json.Unmarshal(m.rec.Body.Bytes(), &p); err != nil {
					t.Fatal(err)
				}
				if _, more := cont(p); s == 1 && !more {
					t.Errorf("size %d: %d items and no continuation: want a bounded page with one", f.n[s], tc.items(p))
				}
				seen := tc.items(p)
				for {
					c, more := cont(p)
					if !more {
						break
					}
					rec := httptest.NewRecorder()
					f.h.ServeHTTP(rec, tc.next(s, c))
					if rec.Code != 200 {
						t.Fatalf("size %d, next page: %d %s", f.n[s], rec.Code, rec.Body.String())
					}
					p = page{}
					if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
						t.Fatal(err)
					}
					seen += tc.items(p)
				}
				if want := tc.want(s); seen != want {
					t.Errorf("size %d: the pages hold %d items, want %d", f.n[s], seen, want)
				}
			}
			if tc.flat && float64(alloc[1]) > 1.5*float64(alloc[0])+256<<10 {
				t.Errorf("allocations grow with the data: %.1f MiB at size %d, %.1f MiB at %d",
					float64(alloc[0])/MiB, f.n[0], float64(alloc[1])/MiB, f.n[1])
			}
		})
	}
}
