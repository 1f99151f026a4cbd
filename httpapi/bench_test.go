package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/loadgen"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// BenchmarkGetMemory is GET of one memory at concurrency 16 on each
// transport over SQLite, with a minimal keep-alive client in the same
// process (internal/loadgen, as internal/bench uses). Besides ns/op it reports
// cpu-µs/op: user+system CPU of the whole process per request.
func BenchmarkGetMemory(b *testing.B) {
	for _, tr := range transports {
		b.Run(string(tr), func(b *testing.B) {
			svc, secret, pctx, st := benchStore(b, core.Options{AuthCacheTTL: 2 * time.Second})
			var paths []string
			for i := range 100 {
				m, err := svc.CreateMemory(pctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/m%03d.md", i), Content: string(bytes.Repeat([]byte("x"), 200))})
				if err != nil {
					b.Fatal(err)
				}
				paths = append(paths, "/v1/memory_stores/"+st.ID+"/memories/"+m.ID)
			}
			base, stop := serveTransport(b, tr, httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}), nil)
			defer stop()
			runConcurrent(b, base[len("http://"):], secret, func(i int) string { return paths[i%len(paths)] })
		})
	}
}

// BenchmarkHealthz is the fixed cost of a request: GET /healthz (no
// database, no credential) at concurrency 16, next to a bare net/http
// handler sending the same body ("bare"), the floor of the transport with
// this client.
func BenchmarkHealthz(b *testing.B) {
	for _, tr := range []transport{netHTTP, "bare"} {
		b.Run(string(tr), func(b *testing.B) {
			var base string
			var stop func()
			if tr == "bare" {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Request-Id", "req_0000000000000000000000")
					_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
				}))
				base, stop = srv.URL, srv.Close
			} else {
				base, stop = serveTransport(b, tr, httpapi.NewServer(httpapi.Config{}), nil)
			}
			defer stop()
			runConcurrent(b, base[len("http://"):], "", func(int) string { return "/healthz" })
		})
	}
}

// runConcurrent sends b.N GETs of path(i) over 16 keep-alive connections
// (auth, when set, as the bearer credential of memory-store calls), each
// answered 200, and reports cpu-µs/op.
func runConcurrent(b *testing.B, addr, auth string, path func(i int) string) {
	const conc = 16
	header := ""
	if auth != "" {
		header = "Authorization: Bearer " + auth + "\r\nanthropic-beta: " + httpapi.BetaAgentMemory + "\r\n"
	}
	conns := make([]*loadgen.Conn, conc)
	for i := range conns {
		conns[i] = &loadgen.Conn{Addr: addr, Header: header}
		defer conns[i].Close()
	}
	var next atomic.Int64
	b.ResetTimer()
	cpu0 := loadgen.ProcessCPU()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				status, body, err := c.Do("GET", path(i), nil)
				if err == nil && status != 200 {
					err = fmt.Errorf("GET %s: %d %s", path(i), status, body)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64((loadgen.ProcessCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// benchStore opens a fresh SQLite database (sqlitetest's migrated copy)
// behind a core.Service with opts, closed when b ends, and creates a key
// and a store "bench" in testWorkspace: the setup every HTTP benchmark of
// this package starts from. pctx acts as the key.
func benchStore(b *testing.B, opts core.Options) (svc *core.Service, secret string, pctx context.Context, st *trove.Store) {
	b.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(b), sqlite.Options{AutoMigrate: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	svc = core.New(db, opts)
	k, secret, err := svc.CreateKey(ctx, testWorkspace, "bench")
	if err != nil {
		b.Fatal(err)
	}
	pctx = trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: testWorkspace, Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}})
	if st, err = svc.CreateStore(pctx, trove.CreateStoreParams{Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	return svc, secret, pctx, st
}
