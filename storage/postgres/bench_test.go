package postgres_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/internal/pgtest"
	"github.com/trovehq/trove/internal/racechild"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
)

// Benchmarks compare, in one run on one pool configuration:
//
//   - Raw: hand-written pgx, one transaction per write (UPDATE the memory
//     row + INSERT a version row), and a point SELECT for reads: the
//     baseline.
//   - Driver: the same work through DB.Write / DB.Read and the Tx methods.
//   - Core: UpdateMemory / GetMemory through core.Service (validation,
//     StoreLock, precondition-free update, version append).
//
// Each concurrency level runs c goroutines, each on its own store and
// memory, sharing b.N operations. Reported: ops/s and p99 latency.
//
//	TROVE_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test -run '^$' -bench . -benchtime 2000x ./storage/postgres/
//
// (without the variable, on a private cluster with fsync off: see pgtest).

var benchConcurrency = []int{1, 16, 64}

type benchEnv struct {
	db     *postgres.DB
	svc    *core.Service
	ctx    context.Context
	stores []string
	mems   []*trove.Memory
}

var (
	benchOnce sync.Once
	benchE    *benchEnv
)

// setupBench opens one pool of 16 connections on a fresh schema with 64
// stores of one memory each; shared by every benchmark of the run.
func setupBench(b *testing.B) *benchEnv {
	b.Helper()
	testURL(b)
	benchOnce.Do(func() {
		// The schema is shared by every benchmark of the run and dropped
		// by TestMain at the end.
		schema := randomName("trove_bench_")
		c := adminConn(b)
		if _, err := c.Exec(context.Background(), "CREATE SCHEMA "+schema); err != nil {
			b.Fatal(err)
		}
		db, err := postgres.Open(context.Background(), testURL(b), postgres.Options{AutoMigrate: true, Schema: schema, MaxConns: 16})
		if err != nil {
			b.Fatal(err)
		}
		e := &benchEnv{db: db, svc: core.New(db, core.Options{}), ctx: apiPrincipal("ws")}
		for i := range 64 {
			st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: fmt.Sprint("bench", i)})
			if err != nil {
				b.Fatal(err)
			}
			m, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/bench.md", Content: "start"})
			if err != nil {
				b.Fatal(err)
			}
			e.stores = append(e.stores, st.ID)
			e.mems = append(e.mems, m)
		}
		benchE = e
		benchSchema = schema
		benchURL = testURL(b)
	})
	if benchE == nil {
		b.Fatal("benchmark setup failed")
	}
	return benchE
}

var benchSchema, benchURL string

// TestMain stops the private PostgreSQL cluster, if one was started
// (pgtest.Main), after dropping the benchmarks' schema.
func TestMain(m *testing.M) {
	racechild.Setenv()
	os.Exit(pgtest.Main(run{m}))
}

// run runs the tests and then drops what they share.
type run struct{ m *testing.M }

func (r run) Run() int {
	code := r.m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if benchE != nil {
		benchE.db.Close()
		if c, err := pgx.Connect(context.Background(), benchURL); err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+benchSchema+" CASCADE")
			c.Close(context.Background())
		}
	}
	return code
}

// runOps runs op n times over c goroutines (worker index given) and
// returns the elapsed time and every latency.
func runOps(c, n int, op func(worker, i int) error) (time.Duration, []time.Duration, error) {
	var next atomic.Int64
	lat := make([][]time.Duration, c)
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := op(w, i); err != nil {
					failed.Store(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	err, _ := failed.Load().(error)
	return elapsed, all, err
}

func p99(all []time.Duration) float64 {
	if len(all) == 0 {
		return 0
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return float64(all[len(all)*99/100].Microseconds()) / 1000
}

// variant is one contender of an interleaved benchmark.
type variant struct {
	name string
	op   func(worker, i int) error
}

// runInterleaved runs the variants in alternating rounds of 50 operations
// until each has run b.N operations, so that load from other processes on
// a shared machine falls on all of them alike, and reports each variant's
// ops/s and p99 plus its rate relative to the first (the baseline).
func runInterleaved(b *testing.B, c int, vs []variant) {
	b.Helper()
	const round = 50
	elapsed := make([]time.Duration, len(vs))
	lats := make([][]time.Duration, len(vs))
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		n := min(round, b.N-done)
		for i, v := range vs {
			d, l, err := runOps(c, n, func(w, j int) error { return v.op(w, done+j) })
			if err != nil {
				b.Fatalf("%s: %v", v.name, err)
			}
			elapsed[i] += d
			lats[i] = append(lats[i], l...)
		}
	}
	b.StopTimer()
	base := float64(b.N) / elapsed[0].Seconds()
	for i, v := range vs {
		rate := float64(b.N) / elapsed[i].Seconds()
		b.ReportMetric(rate, v.name+"-ops/s")
		b.ReportMetric(p99(lats[i]), v.name+"-p99-ms")
		if i > 0 {
			b.ReportMetric(rate/base, v.name+"/"+vs[0].name)
		}
	}
}

// runConcurrent runs op b.N times over c goroutines (worker index given)
// and reports ops/s and p99 latency.
func runConcurrent(b *testing.B, c int, op func(worker, i int) error) {
	b.Helper()
	b.ResetTimer()
	elapsed, all, err := runOps(c, b.N, op)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(p99(all), "p99-ms")
}

// The operations measured, per worker w and iteration i.

func (e *benchEnv) rawWrite(w, i int) error {
	ctx := context.Background()
	m := e.mems[w]
	now := time.Now()
	content := []byte(fmt.Sprintf("raw %d", i))
	vid := trove.NewID(trove.PrefixVersion, now)
	return pgx.BeginFunc(ctx, e.db.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "UPDATE memories SET content = $2, size_bytes = $3, sha256 = $4, version_id = $5, updated_at = $6 WHERE id = $1",
			m.ID, content, len(content), "sha", vid, now); err != nil {
			return err
		}
		// The version's number is taken as the driver takes it (migration
		// 0004): one statement bumps version_seqs and inserts the version.
		_, err := tx.Exec(ctx, `WITH n AS (
				INSERT INTO version_seqs (store_id, last) VALUES ($2, 1)
				ON CONFLICT (store_id) DO UPDATE SET last = version_seqs.last + 1 RETURNING last)
			INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256, created_by_type, created_by_id, created_at, seq)
			SELECT $1, $2, $3, 'modified', $4, $5, $6, $7, 'api_actor', 'apikey_bench', $8, n.last FROM n`,
			vid, m.StoreID, m.ID, m.Path, content, len(content), "sha", now)
		return err
	})
}

func (e *benchEnv) driverWrite(w, i int) error {
	ctx := context.Background()
	now := time.Now().UTC()
	content := fmt.Sprintf("driver %d", i)
	m := *e.mems[w]
	m.Content, m.SizeBytes, m.SHA256 = &content, len(content), "sha"
	m.VersionID, m.UpdatedAt = trove.NewID(trove.PrefixVersion, now), now
	return e.db.Write(ctx, func(tx storage.Tx) error {
		if err := tx.MemoryUpdate(ctx, &m); err != nil {
			return err
		}
		size, sum, path := m.SizeBytes, m.SHA256, m.Path
		return tx.VersionInsert(ctx, &trove.MemoryVersion{
			ID: m.VersionID, StoreID: m.StoreID, MemoryID: m.ID, Operation: trove.OpModified,
			Path: &path, Content: &content, SizeBytes: &size, SHA256: &sum,
			CreatedBy: &trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_bench"}, CreatedAt: now,
		})
	})
}

func (e *benchEnv) coreUpdate(w, i int) error {
	content := fmt.Sprintf("core %d", i)
	_, err := e.svc.UpdateMemory(e.ctx, e.stores[w], e.mems[w].ID, trove.UpdateMemoryParams{Content: &content})
	return err
}

func (e *benchEnv) rawRead(w, i int) error {
	var content []byte
	var sum string
	return e.db.Pool().QueryRow(context.Background(), "SELECT content, sha256 FROM memories WHERE id = $1 AND store_id = $2", e.mems[w].ID, e.stores[w]).Scan(&content, &sum)
}

func (e *benchEnv) driverRead(w, i int) error {
	ctx := context.Background()
	return e.db.Read(ctx, func(tx storage.Tx) error {
		_, err := tx.MemoryGet(ctx, e.stores[w], e.mems[w].ID, true)
		return err
	})
}

func (e *benchEnv) driverPoint(w, i int) error {
	_, err := e.db.MemoryGet(context.Background(), e.stores[w], e.mems[w].ID, true)
	return err
}

func (e *benchEnv) coreGet(w, i int) error {
	_, err := e.svc.GetMemory(e.ctx, e.stores[w], e.mems[w].ID, trove.ViewFull)
	return err
}

// BenchmarkWrite interleaves raw pgx, driver and core writes (the ratios
// are the figures to quote on a shared machine).
func BenchmarkWrite(b *testing.B) {
	e := setupBench(b)
	for _, c := range benchConcurrency {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			runInterleaved(b, c, []variant{{"raw", e.rawWrite}, {"driver", e.driverWrite}, {"core", e.coreUpdate}})
		})
	}
}

// BenchmarkRead interleaves raw pgx point reads, driver reads (a REPEATABLE
// READ READ ONLY transaction), the driver's one-statement DB.MemoryGet and
// core GetMemory (which uses it).
func BenchmarkRead(b *testing.B) {
	e := setupBench(b)
	for _, c := range benchConcurrency {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			runInterleaved(b, c, []variant{{"raw", e.rawRead}, {"driver", e.driverRead}, {"point", e.driverPoint}, {"core", e.coreGet}})
		})
	}
}

func BenchmarkRawPgxTxn(b *testing.B) {
	e := setupBench(b)
	for _, c := range benchConcurrency {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) { runConcurrent(b, c, e.rawWrite) })
	}
}

func BenchmarkDriverWrite(b *testing.B) {
	e := setupBench(b)
	for _, c := range benchConcurrency {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) { runConcurrent(b, c, e.driverWrite) })
	}
}

func BenchmarkCoreUpdate(b *testing.B) {
	e := setupBench(b)
	for _, c := range benchConcurrency {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) { runConcurrent(b, c, e.coreUpdate) })
	}
}

// BenchmarkCoreUpdateOneStore has every goroutine update its own memory in
// one store: StoreLock serializes them (the price of per-store
// invariants across nodes).
func BenchmarkCoreUpdateOneStore(b *testing.B) {
	e := setupBench(b)
	for _, c := range benchConcurrency {
		var ids []string
		for w := range c {
			m, err := e.svc.CreateMemory(e.ctx, e.stores[0], trove.CreateMemoryParams{Path: fmt.Sprintf("/one/%d-%d", c, w), Content: "x"})
			if err != nil {
				b.Fatal(err)
			}
			ids = append(ids, m.ID)
		}
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			runConcurrent(b, c, func(w, i int) error {
				content := fmt.Sprintf("one %d", i)
				_, err := e.svc.UpdateMemory(e.ctx, e.stores[0], ids[w], trove.UpdateMemoryParams{Content: &content})
				return err
			})
		})
	}
}

func BenchmarkRawPgxRead(b *testing.B) {
	e := setupBench(b)
	for _, c := range benchConcurrency {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) { runConcurrent(b, c, e.rawRead) })
	}
}

func BenchmarkDriverRead(b *testing.B) {
	e := setupBench(b)
	for _, c := range benchConcurrency {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) { runConcurrent(b, c, e.driverRead) })
	}
}

func BenchmarkCoreGet(b *testing.B) {
	e := setupBench(b)
	for _, c := range benchConcurrency {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) { runConcurrent(b, c, e.coreGet) })
	}
}

// BenchmarkHTTPNodes compares one `trove serve` node with two on the same
// PostgreSQL, over real HTTP: c clients each update (write) or get (read)
// their own memory in their own store, all through node 0 ("one") or
// alternating between the nodes ("two"), interleaved in rounds.
func BenchmarkHTTPNodes(b *testing.B) {
	testURL(b)
	nodes := serveCluster(b, 2)
	ctx := context.Background()
	const c = 16
	stores := make([]string, c)
	mems := make([]string, c)
	for w := range c {
		st, err := nodes[0].CreateStore(ctx, fmt.Sprint("bench", w))
		if err != nil {
			b.Fatal(err)
		}
		id, _, err := nodes[0].Create(ctx, st, "/bench.md", "start")
		if err != nil {
			b.Fatal(err)
		}
		stores[w], mems[w] = st, id
	}
	write := func(pick func(w int) *httpNode) func(w, i int) error {
		return func(w, i int) error {
			content := fmt.Sprintf("http %d", i)
			_, err := pick(w).Update(ctx, stores[w], mems[w], &content, nil, "")
			return err
		}
	}
	read := func(pick func(w int) *httpNode) func(w, i int) error {
		return func(w, i int) error {
			_, _, err := pick(w).Get(ctx, stores[w], mems[w])
			return err
		}
	}
	one := func(int) *httpNode { return nodes[0] }
	two := func(w int) *httpNode { return nodes[w%2] }
	b.Run(fmt.Sprintf("write/c=%d", c), func(b *testing.B) {
		runInterleaved(b, c, []variant{{"one", write(one)}, {"two", write(two)}})
	})
	b.Run(fmt.Sprintf("read/c=%d", c), func(b *testing.B) {
		runInterleaved(b, c, []variant{{"one", read(one)}, {"two", read(two)}})
	})
}

// BenchmarkWebhookEmit: the writes/s of a workspace with no webhook
// endpoint, one subscribed to another event, and one subscribed to its
// memory changes, each over a schema of its own (docs/perf/webhooks.md).
//
//	go test -run '^$' -bench WebhookEmit -benchtime 4000x ./storage/postgres
func BenchmarkWebhookEmit(b *testing.B) {
	coretest.BenchWebhookEmit(b, func(b *testing.B) storage.Driver {
		return openDBOn(b, testURL(b), newSchema(b), postgres.Options{MaxConns: 16})
	}, []int{1, 16})
}
