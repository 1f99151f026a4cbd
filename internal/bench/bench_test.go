package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/loadgen"
	"github.com/trovehq/trove/storage/sqlite"
)

// concurrencies are the client concurrencies every benchmark runs at.
var concurrencies = []int{1, 16}

// api is the API as trove serve runs it (Server.HTTPServer with the
// default timeouts, core with serve's default credential cache) over
// SQLite in a temporary directory, on loopback.
type api struct {
	addr, key, storeID string
	db                 *sqlite.DB
	svc                *core.Service
	pctx               context.Context // the key's principal
}

func newAPI(b *testing.B) *api {
	b.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		b.Fatal(err)
	}
	svc := core.New(db, core.Options{AuthCacheTTL: 2 * time.Second})
	k, secret, err := svc.CreateKey(ctx, "wrkspc_bench", "bench")
	if err != nil {
		b.Fatal(err)
	}
	a := &api{key: secret, db: db, svc: svc,
		pctx: trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: "wrkspc_bench", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}})}
	st, err := svc.CreateStore(a.pctx, trove.CreateStoreParams{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	a.storeID = st.ID
	a.addr = serve(b, httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}).HTTPServer())
	b.Cleanup(func() { db.Close() })
	return a
}

// serve runs srv on a loopback listener until the benchmark ends and
// returns its address.
func serve(b *testing.B, srv *http.Server) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// clients returns conc lean keep-alive clients of addr sending key and the
// memory beta.
func clients(b *testing.B, addr, key string, conc int) []*loadgen.Conn {
	header := "Authorization: Bearer " + key + "\r\nanthropic-beta: " + httpapi.BetaAgentMemory + "\r\n"
	cs := make([]*loadgen.Conn, conc)
	for g := range cs {
		cs[g] = &loadgen.Conn{Addr: addr, Header: header}
	}
	b.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	return cs
}

// run does op(g, i) for i in [0, n) on conc goroutines (g is the
// goroutine) and returns the wall time and the process CPU time it took.
func run(b *testing.B, conc, n int, op func(g, i int) error) (wall, cpu time.Duration) {
	b.Helper()
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	cpu0, start := loadgen.ProcessCPU(), time.Now()
	for g := range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() {
					return
				}
				if err := op(g, i); err != nil {
					failed.Store(true)
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), loadgen.ProcessCPU() - cpu0
}

// call sends one request on c and requires a 200.
func call(c *loadgen.Conn, method, path string, body []byte) ([]byte, error) {
	status, resp, err := c.Do(method, path, body)
	if err == nil && status != 200 {
		err = fmt.Errorf("%s %s: %d %s", method, path, status, resp)
	}
	return resp, err
}

func rate(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }

func perOp(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }

// BenchmarkWrites: memory creates and updates over loopback HTTP (200-byte
// contents, every update on its own memory) at each concurrency, next to
// the raw one-transaction-per-write SQLite baseline measured right before
// and right after with the same n and concurrency. Reports ops/s (the
// API's), raw-ops/s (the mean of the two baseline runs), x-raw (the first
// over the second: group commit's gain net of the API's costs) and
// writes/commit (the driver's mean group size).
func BenchmarkWrites(b *testing.B) {
	for _, op := range []string{"create", "update"} {
		for _, conc := range concurrencies {
			b.Run(fmt.Sprintf("%s/c=%d", op, conc), func(b *testing.B) {
				a := newAPI(b)
				raw := openRaw(b, 1)
				cs := clients(b, a.addr, a.key, conc)
				mems := "/v1/memory_stores/" + a.storeID + "/memories"
				bodies := make([][]byte, b.N)
				paths := make([]string, b.N)
				for i := range b.N {
					var err error
					if op == "create" {
						bodies[i], err = json.Marshal(map[string]string{"path": fmt.Sprintf("/g%d/m%07d.md", i%conc, i), "content": content(i)})
					} else {
						var m *trove.Memory
						if m, err = a.svc.CreateMemory(a.pctx, a.storeID, trove.CreateMemoryParams{Path: fmt.Sprintf("/g%d/m%07d.md", i%conc, i), Content: content(i)}); err != nil {
							b.Fatal(err)
						}
						paths[i] = mems + "/" + m.ID
						bodies[i], err = json.Marshal(map[string]string{"content": content(i + b.N)})
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				rawBefore, _ := run(b, conc, b.N, func(_, i int) error { return raw.write(i) })
				batches0, writes0 := a.db.Stats()
				b.ResetTimer()
				wall, _ := run(b, conc, b.N, func(g, i int) error {
					if op == "create" {
						_, err := call(cs[g], "POST", mems, bodies[i])
						return err
					}
					_, err := call(cs[g], "POST", paths[i], bodies[i])
					return err
				})
				b.StopTimer()
				batches1, writes1 := a.db.Stats()
				rawAfter, _ := run(b, conc, b.N, func(_, i int) error { return raw.write(i) })
				rawRate := (rate(b.N, rawBefore) + rate(b.N, rawAfter)) / 2
				b.ReportMetric(rate(b.N, wall), "ops/s")
				b.ReportMetric(rawRate, "raw-ops/s")
				b.ReportMetric(rate(b.N, wall)/rawRate, "x-raw")
				if batches1 > batches0 {
					b.ReportMetric(float64(writes1-writes0)/float64(batches1-batches0), "writes/commit")
				}
			})
		}
	}
}

// getRounds is how many interleaved rounds BenchmarkGet splits its
// operations into.
const getRounds = 5

// BenchmarkGet: a memory get over loopback HTTP (200-byte contents, 100
// memories) at each concurrency, with the same-run ceiling: the same gets
// sent by the same client to a bare net/http server (HTTP/1.1, the same
// Protocols) whose handler only writes the get's response bytes ("floor":
// no routing, credential, database or JSON work), and the driver's point
// read of the same memories (a read transaction and the memory's row, as
// core does for a get, no HTTP). A get costs at least both. The five are
// measured in getRounds interleaved rounds and summed (the fifth below).
//
// The client shares the process, so CPU is the whole process's (user +
// system) per operation: get-cpu-µs/op, floor-cpu-µs/op, driver-cpu-µs/op
// and raw-read-cpu-µs/op (the raw baseline's point read). ceiling-% is
// 100 × (floor + driver) / get: the share of a get's CPU that no server on
// this stack could save; less noisy than rates on a shared machine.
// raw-read-% is 100 × raw read / get, by CPU: the get's share of the raw
// point read's rate were both alone on the same cores.
//
// floor+read-cpu-µs/op is the bare server again with the driver's read in
// its handler (the memory its path names, with the request's context)
// before it writes the get's bytes: what the two cost together, in one
// process serving HTTP, rather than added from separate runs (the read
// costs more between HTTP exchanges than in a loop of reads alone).
// floor+read-% is 100 × that / get: the get's CPU that a handler doing
// only the read would spend too.
func BenchmarkGet(b *testing.B) {
	for _, conc := range concurrencies {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) {
			a := newAPI(b)
			raw := openRaw(b, conc)
			var ids, paths []string
			for i := range 100 {
				m, err := a.svc.CreateMemory(a.pctx, a.storeID, trove.CreateMemoryParams{Path: fmt.Sprintf("/m%03d.md", i), Content: content(i)})
				if err != nil {
					b.Fatal(err)
				}
				ids = append(ids, m.ID)
				paths = append(paths, "/v1/memory_stores/"+a.storeID+"/memories/"+m.ID)
			}
			cs := clients(b, a.addr, a.key, conc)
			body, err := call(cs[0], "GET", paths[0], nil)
			if err != nil {
				b.Fatal(err)
			}
			body = append([]byte(nil), body...)
			var protos http.Protocols
			protos.SetHTTP1(true)
			floorAddr := serve(b, &http.Server{Protocols: &protos, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h := w.Header()
				h.Set("Content-Type", "application/json")
				h.Set("Content-Length", fmt.Sprint(len(body)))
				h.Set("Request-Id", "req_0000000000000000000000")
				_, _ = w.Write(body)
			})})
			floor := clients(b, floorAddr, a.key, conc)
			// The floor with the driver's read in its handler: the same
			// bare server, each request making the read of the memory its
			// path names before it writes the get's bytes.
			readAddr := serve(b, &http.Server{Protocols: &protos, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := a.db.MemoryGet(r.Context(), a.storeID, path.Base(r.URL.Path), true); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				h := w.Header()
				h.Set("Content-Type", "application/json")
				h.Set("Content-Length", fmt.Sprint(len(body)))
				h.Set("Request-Id", "req_0000000000000000000000")
				_, _ = w.Write(body)
			})})
			floorRead := clients(b, readAddr, a.key, conc)
			get := func(cs []*loadgen.Conn) func(g, i int) error {
				return func(g, i int) error {
					_, err := call(cs[g], "GET", paths[(i*7919)%len(paths)], nil)
					return err
				}
			}
			ctx := context.Background()
			// The driver's point read, as core's GetMemory makes it.
			driverRead := func(_, i int) error {
				_, err := a.db.MemoryGet(ctx, a.storeID, ids[(i*7919)%len(ids)], true)
				return err
			}
			rawRead := func(_, i int) error { return raw.read(i) }
			// Interleaved in getRounds rounds, so that the machine's drift
			// (other processes come and go) falls on all four alike.
			var wall, getCPU, floorCPU, driverCPU, rawCPU, floorReadCPU time.Duration
			b.ResetTimer()
			b.StopTimer()
			for r := range getRounds {
				n := b.N*(r+1)/getRounds - b.N*r/getRounds
				b.StartTimer()
				w, c := run(b, conc, n, get(cs))
				b.StopTimer()
				wall, getCPU = wall+w, getCPU+c
				_, c = run(b, conc, n, get(floor))
				floorCPU += c
				_, c = run(b, conc, n, driverRead)
				driverCPU += c
				_, c = run(b, conc, n, rawRead)
				rawCPU += c
				_, c = run(b, conc, n, get(floorRead))
				floorReadCPU += c
			}
			b.ReportMetric(rate(b.N, wall), "ops/s")
			b.ReportMetric(perOp(getCPU, b.N), "get-cpu-µs/op")
			b.ReportMetric(perOp(floorCPU, b.N), "floor-cpu-µs/op")
			b.ReportMetric(perOp(driverCPU, b.N), "driver-cpu-µs/op")
			b.ReportMetric(perOp(rawCPU, b.N), "raw-read-cpu-µs/op")
			b.ReportMetric(100*float64(floorCPU+driverCPU)/float64(getCPU), "ceiling-%")
			b.ReportMetric(100*float64(rawCPU)/float64(getCPU), "raw-read-%")
			b.ReportMetric(perOp(floorReadCPU, b.N), "floor+read-cpu-µs/op")
			b.ReportMetric(100*float64(floorReadCPU)/float64(getCPU), "floor+read-%")
		})
	}
}
