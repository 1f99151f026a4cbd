package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/valyala/fasthttp"

	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/loadgen"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/sqlite"
)

func newBenchCmd(e *env) *cobra.Command {
	var n, rounds int
	var conc, clients string
	var authCaches []time.Duration
	var dir, cpuprofile string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the HTTP API next to raw SQLite on this machine",
		Long: `Measure create, update, get and list throughput and latency through the
HTTP API (a real loopback server, on the transport trove serve uses, over
core and SQLite in a temporary directory) at each concurrency, next to raw
SQLite rates measured in the same run (sqlite.Raw): one durable
update+version-insert transaction per write, and a point read.

The raw baseline is measured right before and right after each create,
update and get measurement, and the ratio is taken against the mean of the
two, so that a change in the machine's load during a round moves both
sides. With several rounds every figure is the median round's, and "range"
gives the lowest and highest ratio over the rounds (the machine is noisy:
read the ratios).

The load generator runs in the same process and shares the CPU with the
server; cpu/op is the whole process's CPU time (user+system) per operation
in the median round. "by cpu/op" compares the get with the raw read by CPU
time per operation (raw cpu/op over http cpu/op, median over rounds): the
share of the raw rate the API reaches when both have the same cores to
themselves, which other load on the machine moves far less than ops/s.
writes/commit is how many creates or updates the SQLite driver committed
together (one fsync) on average: group commit at work.

"http floor" is the same gets sent by the same load generator to a bare
fasthttp handler that answers each with a get's response body and does
nothing else (no routing, credential, database or JSON work), measured
right after the get against the same raw reads: the most any HTTP server
can reach on this machine with this client. "driver point read" is the
same gets' reads through the storage driver alone (a read transaction
and the memory's row, as core does for a get), in the same process, with
no HTTP. A get costs at least both.

--client lean (the default) is a minimal keep-alive HTTP/1.1 client: one
connection per client goroutine, one request at a time (no pipelining), the
whole response read and checked; --client net/http uses Go's http.Client,
which costs about as much CPU as the server does per request.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var cs []int
			for f := range strings.SplitSeq(conc, ",") {
				c, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || c < 1 {
					return fmt.Errorf("--concurrency: bad value %q (want positive integers separated by commas, such as 1,16)", f)
				}
				cs = append(cs, c)
			}
			var cls []string
			for f := range strings.SplitSeq(clients, ",") {
				switch f = strings.TrimSpace(f); f {
				case clientLean, clientNetHTTP:
					cls = append(cls, f)
				default:
					return fmt.Errorf("--client: bad value %q (want %s or %s)", f, clientLean, clientNetHTTP)
				}
			}
			if n < 1 {
				return fmt.Errorf("--n must be at least 1")
			}
			if rounds < 1 {
				return fmt.Errorf("--rounds must be at least 1")
			}
			for _, c := range authCaches {
				if c < 0 {
					return fmt.Errorf("--auth-cache must not be negative, got %s", c)
				}
			}
			if dir == "" {
				d, err := os.MkdirTemp("", "trove-bench-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(d)
				dir = d
			}
			if cpuprofile != "" {
				f, err := os.Create(cpuprofile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			return runBench(e.ctx, e.stdout, benchConfig{dir: dir, n: n, rounds: rounds, concs: cs, authCaches: authCaches, clients: cls})
		},
	}
	cmd.Flags().IntVar(&n, "n", 1000, "operations per measurement")
	cmd.Flags().IntVar(&rounds, "rounds", 3, "rounds of measurements; figures are the median round's")
	cmd.Flags().DurationSliceVar(&authCaches, "auth-cache", []time.Duration{defaultAuthCache}, "credential cache TTLs to measure (core.Options.AuthCacheTTL, as trove serve --auth-cache; 0: a database read per request)")
	cmd.Flags().StringVar(&conc, "concurrency", "1,16", "comma-separated client concurrencies")
	cmd.Flags().StringVar(&clients, "client", clientLean, "comma-separated load generators: "+clientLean+" (minimal HTTP/1.1) or "+clientNetHTTP+" (Go's http.Client)")
	cmd.Flags().StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the databases (default: a temporary one, removed after)")
	return cmd
}

// Load generators of trove bench.
const (
	clientLean    = "lean"
	clientNetHTTP = "net/http"
)

// benchConfig is what trove bench measures.
type benchConfig struct {
	dir        string
	n, rounds  int
	concs      []int
	authCaches []time.Duration
	clients    []string
}

// benchResult is one measurement.
type benchResult struct {
	op       string
	conc     int
	n        int
	errors   int64
	elapsed  time.Duration
	p50, p99 time.Duration
	// cpu is the CPU time (user+system) the whole process used during the
	// measurement, server and load generator together.
	cpu time.Duration
	// perCommit is the mean number of writes the SQLite driver committed
	// together (one fsync) during a create or update measurement.
	perCommit float64
	// base holds the raw baseline measured right before and right after
	// this measurement (writes for create and update, reads for get), so
	// that a change in the machine's load between the two sides shows up
	// in both.
	base []benchResult
}

// vsBase returns this result's rate over the mean rate of its baseline and
// the baseline's mean CPU per operation over this result's (0, 0 without a
// baseline).
func (r benchResult) vsBase() (rate, cpu float64) {
	if len(r.base) == 0 {
		return 0, 0
	}
	var rates, cpus float64
	for _, b := range r.base {
		rates += b.rate()
		cpus += float64(b.cpuPerOp())
	}
	n := float64(len(r.base))
	rate = r.rate() / (rates / n)
	if r.cpu > 0 {
		cpu = cpus / n / float64(r.cpuPerOp())
	}
	return rate, cpu
}

// cpuPerOp is the process CPU time per operation.
func (r benchResult) cpuPerOp() time.Duration { return r.cpu / time.Duration(r.n) }

func (r benchResult) rate() float64 { return float64(r.n) / r.elapsed.Seconds() }

// measure runs op n times split over conc goroutines (op gets the goroutine
// and a global sequence number) and records the latencies.
func measure(name string, conc, n int, op func(g, i int) error) benchResult {
	lat := make([][]time.Duration, conc)
	var next, errs atomic.Int64
	var wg sync.WaitGroup
	cpu0 := loadgen.ProcessCPU()
	start := time.Now()
	for g := range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := op(g, i); err != nil {
					errs.Add(1)
				}
				lat[g] = append(lat[g], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := loadgen.ProcessCPU() - cpu0
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(float64(len(all))*p))]
	}
	return benchResult{op: name, conc: conc, n: n, errors: errs.Load(), elapsed: elapsed, p50: pct(0.50), p99: pct(0.99), cpu: cpu}
}

// measureWrites is measure for writes, with the mean group-commit size.
func measureWrites(db *sqlite.DB, name string, conc, n int, op func(g, i int) error) benchResult {
	b0, w0 := db.Stats()
	r := measure(name, conc, n, op)
	if b1, w1 := db.Stats(); b1 > b0 {
		r.perCommit = float64(w1-w0) / float64(b1-b0)
	}
	return r
}

// benchKey names one line of the report.
type benchKey struct {
	op     string
	conc   int
	cache  time.Duration
	client string
}

func runBench(ctx context.Context, out io.Writer, cfg benchConfig) error {
	fmt.Fprintf(out, "trove bench: n=%d per measurement, concurrency %v, %d round(s), client %s, data in %s\n\n",
		cfg.n, cfg.concs, cfg.rounds, strings.Join(cfg.clients, ","), cfg.dir)
	rawW := map[int][]benchResult{}
	rawR := map[int][]benchResult{}
	var keys []benchKey
	results := map[benchKey][]benchResult{}
	ratios := map[benchKey][]float64{}
	cpuRatios := map[benchKey][]float64{}
	for round := range cfg.rounds {
		// The raw baseline of this round, one database per concurrency,
		// measured around every HTTP measurement it is compared with.
		raws := map[int]*sqlite.Raw{}
		baseline := func(kind string, c int) (benchResult, error) {
			raw := raws[c]
			if raw == nil {
				d := filepath.Join(cfg.dir, fmt.Sprintf("r%d-raw-c%d", round, c))
				if err := os.MkdirAll(d, 0o700); err != nil {
					return benchResult{}, err
				}
				var err error
				if raw, err = sqlite.OpenRaw(ctx, d, c); err != nil {
					return benchResult{}, fmt.Errorf("raw baseline: %w", err)
				}
				raws[c] = raw
			}
			f, name, into := raw.Reads, "raw read", rawR
			if kind == "write" {
				f, name, into = raw.Writes, "raw write", rawW
			}
			cpu0 := loadgen.ProcessCPU()
			d, err := f(ctx, cfg.n)
			if err != nil {
				return benchResult{}, fmt.Errorf("raw baseline: %w", err)
			}
			r := benchResult{op: name, conc: c, n: cfg.n, elapsed: d, cpu: loadgen.ProcessCPU() - cpu0}
			into[c] = append(into[c], r)
			return r, nil
		}
		err := func() error {
			defer func() {
				for _, raw := range raws {
					raw.Close()
				}
			}()
			for _, cl := range cfg.clients {
				for _, cache := range cfg.authCaches {
					d := filepath.Join(cfg.dir, fmt.Sprintf("r%d-http-%s-%s", round, strings.ReplaceAll(cl, "/", ""), cache))
					rs, err := httpBench(ctx, d, cfg.n, cfg.concs, cache, cl, baseline)
					if err != nil {
						return err
					}
					for _, r := range rs {
						k := benchKey{r.op, r.conc, cache, cl}
						if round == 0 {
							keys = append(keys, k)
						}
						results[k] = append(results[k], r)
						if rate, cpu := r.vsBase(); rate > 0 {
							ratios[k] = append(ratios[k], rate)
							if isRead(r.op) && cpu > 0 {
								cpuRatios[k] = append(cpuRatios[k], cpu)
							}
						}
					}
				}
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}

	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tconc\tops/s\tp50\tp99\tcpu/op\twrites/commit\terrors\tvs raw (median)\trange\tby cpu/op\t")
	for _, c := range cfg.concs {
		for _, raw := range []struct {
			name string
			rs   []benchResult
		}{{"raw write (1 txn/write)", rawW[c]}, {"raw point read", rawR[c]}} {
			r := medianResult(raw.rs)
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t\t\t%s\t\t\t\t%s\t\t\n", raw.name, c, r.rate(),
				r.cpuPerOp().Round(time.Microsecond), spread(rates(raw.rs), "%.0f"))
		}
	}
	for _, k := range keys {
		rs := results[k]
		r := medianResult(rs)
		var errs int64
		for _, x := range rs {
			errs += x.errors
		}
		name := "http " + k.op
		if k.op == "driver read" {
			name = "driver point read" // no HTTP
		}
		var tags []string
		if k.cache != defaultAuthCache {
			tags = append(tags, "auth cache "+k.cache.String())
		}
		if len(cfg.clients) > 1 || k.client != clientLean {
			tags = append(tags, k.client)
		}
		if len(tags) > 0 {
			name += " (" + strings.Join(tags, ", ") + ")"
		}
		ratio, rng, byCPU := "", "", ""
		if rt := cpuRatios[k]; len(rt) > 0 {
			byCPU = fmt.Sprintf("%.0f%%", 100*median(rt))
		}
		if rt := ratios[k]; len(rt) > 0 {
			switch {
			case k.op == "create" || k.op == "update":
				ratio = fmt.Sprintf("%.2f× raw write", median(rt))
				rng = spread(rt, "%.2f×")
			case isRead(k.op):
				ratio = fmt.Sprintf("%.0f%% raw read", 100*median(rt))
				rng = spread(scaled(rt, 100), "%.0f%%")
			}
		}
		perCommit := ""
		if r.perCommit > 0 {
			perCommit = fmt.Sprintf("%.1f", r.perCommit)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", name, k.conc, r.rate(),
			r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.cpuPerOp().Round(time.Microsecond), perCommit, errs, ratio, rng, byCPU)
	}
	return tw.Flush()
}

// isRead reports whether op is measured against the raw point read: the
// get, its HTTP floor and the driver's own read.
func isRead(op string) bool { return op == "get" || op == "floor" || op == "driver read" }

// medianResult is the median of rs by rate (the upper one for an even
// count); its latencies and CPU are shown with it.
func medianResult(rs []benchResult) benchResult {
	sorted := slices.SortedFunc(slices.Values(rs), func(a, b benchResult) int { return cmp.Compare(a.rate(), b.rate()) })
	return sorted[len(sorted)/2]
}

func rates(rs []benchResult) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.rate()
	}
	return out
}

// median returns the median of xs (the upper one for an even count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

// spread formats the lowest and highest of xs, "" for a single value.
func spread(xs []float64, format string) string {
	if len(xs) < 2 {
		return ""
	}
	return fmt.Sprintf(format+"–"+format, slices.Min(xs), slices.Max(xs))
}

func scaled(xs []float64, f float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x * f
	}
	return out
}

// httpBench measures the API on a loopback server over core and SQLite,
// driven by the load generator client (clientLean or clientNetHTTP).
//
// baseline measures the raw baseline ("write" or "read") at a concurrency;
// it runs right before and right after each create, update and get
// measurement, whose base it becomes.
func httpBench(ctx context.Context, dir string, n int, concs []int, authCache time.Duration, client string,
	baseline func(kind string, conc int) (benchResult, error)) ([]benchResult, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	svc := core.New(db, core.Options{AuthCacheTTL: authCache})
	_, key, err := svc.CreateKey(ctx, "wrkspc_bench", "bench")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}).FastHTTP() // as trove serve
	go srv.Serve(ln)
	defer srv.Shutdown()
	maxC := slices.Max(concs)
	call, closeCalls := newCaller(ctx, ln.Addr().String(), key, client, maxC)
	defer closeCalls()

	// callID sends a request whose 200 response is a memory and returns
	// the memory's ID. The lean client finds it without decoding the whole
	// response (the "id" member of the object: wireMemory has no nested
	// objects).
	callID := func(g int, method, path string, body []byte) (string, error) {
		var id string
		var m struct {
			ID string `json:"id"`
		}
		out := any(&m)
		if client == clientLean {
			out = rawID{&id}
		}
		if err := call(g, method, path, body, out); err != nil {
			return "", err
		}
		if m.ID != "" {
			id = m.ID
		}
		if id == "" {
			return "", fmt.Errorf("%s %s: no memory id in the response", method, path)
		}
		return id, nil
	}

	var st struct {
		ID string `json:"id"`
	}
	if err := call(0, "POST", "/v1/memory_stores", []byte(`{"name":"bench"}`), &st); err != nil {
		return nil, err
	}
	mems := "/v1/memory_stores/" + st.ID + "/memories"
	content := strings.Repeat("x", 200)
	var results []benchResult
	var floorCall caller
	for _, c := range concs {
		// Every request is encoded before its measurement, so that the
		// load generator, which shares the CPU with the server, spends as
		// little of it as it can.
		createBodies, updateBodies := make([][]byte, n), make([][]byte, n)
		listPaths := make([]string, c)
		for i := range n {
			var err error
			if createBodies[i], err = json.Marshal(map[string]string{"path": fmt.Sprintf("/c%d/g%d/m%06d.md", c, i%c, i), "content": content}); err != nil {
				return nil, err
			}
			if updateBodies[i], err = json.Marshal(map[string]string{"content": fmt.Sprintf("%s %d", content, i)}); err != nil {
				return nil, err
			}
		}
		for g := range c {
			listPaths[g] = fmt.Sprintf("%s?path_prefix=/c%d/g%d/&limit=20", mems, c, g)
		}
		ids := make([]string, n)
		memPaths := make([]string, n)
		var firstErr error
		var once sync.Once
		fail := func(err error) error {
			if err != nil {
				once.Do(func() { firstErr = err })
			}
			return err
		}
		w0, err := baseline("write", c)
		if err != nil {
			return nil, err
		}
		create := measureWrites(db, "create", c, n, func(g, i int) error {
			id, err := callID(g, "POST", mems, createBodies[i])
			ids[i] = id
			return fail(err)
		})
		if firstErr != nil {
			return nil, firstErr
		}
		w1, err := baseline("write", c)
		if err != nil {
			return nil, err
		}
		for i, id := range ids {
			memPaths[i] = mems + "/" + id
		}
		// Each memory is updated once, so updates do not contend on one row.
		update := measureWrites(db, "update", c, n, func(g, i int) error {
			return fail(call(g, "POST", memPaths[i], updateBodies[i], nil))
		})
		w2, err := baseline("write", c)
		if err != nil {
			return nil, err
		}
		r0, err := baseline("read", c)
		if err != nil {
			return nil, err
		}
		get := measure("get", c, n, func(g, i int) error {
			return fail(call(g, "GET", memPaths[(i*7919)%n], nil, nil))
		})
		if floorCall == nil {
			var body []byte
			if err := call(0, "GET", memPaths[0], nil, &body); err != nil {
				return nil, err
			}
			var stop func()
			if floorCall, stop, err = startFloor(ctx, body, key, client, maxC); err != nil {
				return nil, err
			}
			defer stop()
		}
		floor := measure("floor", c, n, func(g, i int) error {
			return fail(floorCall(g, "GET", memPaths[(i*7919)%n], nil, nil))
		})
		driver := measure("driver read", c, n, func(g, i int) error {
			return fail(db.Read(ctx, func(tx storage.Tx) error {
				_, err := tx.MemoryGet(ctx, st.ID, ids[(i*7919)%n], true)
				return err
			}))
		})
		r1, err := baseline("read", c)
		if err != nil {
			return nil, err
		}
		list := measure("list", c, n, func(g, i int) error {
			return fail(call(g, "GET", listPaths[i%c], nil, nil))
		})
		if firstErr != nil {
			return nil, firstErr
		}
		create.base, update.base = []benchResult{w0, w1}, []benchResult{w1, w2}
		get.base, floor.base, driver.base = []benchResult{r0, r1}, []benchResult{r0, r1}, []benchResult{r0, r1}
		results = append(results, create, update, get, floor, driver, list)
	}
	return results, nil
}

// startFloor serves body as the 200 response to every request from a bare
// fasthttp handler on loopback (no routing, credential, database or JSON
// work) and returns a client for it like the API's: the floor of an HTTP
// get on this machine with this load generator. stop shuts both down.
func startFloor(ctx context.Context, body []byte, key, client string, maxC int) (call caller, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &fasthttp.Server{
		NoDefaultServerHeader: true,
		Handler: func(rc *fasthttp.RequestCtx) {
			rc.SetContentType("application/json")
			rc.SetBody(body)
		},
	}
	go srv.Serve(ln)
	call, closeCalls := newCaller(ctx, ln.Addr().String(), key, client, maxC)
	return call, func() { closeCalls(); srv.Shutdown() }, nil
}

// caller sends one request from client goroutine g and decodes a 200
// response into out (when not nil; a *[]byte gets the body as it is);
// anything else is an error.
type caller func(g int, method, path string, body []byte, out any) error

// newCaller returns the load generator client (clientLean or clientNetHTTP)
// for the server at addr, sending key and the beta header with every
// request from up to maxC goroutines, and a function that closes its
// connections.
func newCaller(ctx context.Context, addr, key, client string, maxC int) (caller, func()) {
	switch client {
	case clientNetHTTP:
		hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * maxC, MaxIdleConnsPerHost: 2 * maxC, DisableCompression: true}}
		return func(_ int, method, path string, body []byte, out any) error {
			var rd io.Reader
			if body != nil {
				rd = bytes.NewReader(body)
			}
			req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("anthropic-beta", httpapi.BetaAgentMemory)
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			res, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body) // to EOF, so the connection is reused
			if err != nil {
				return err
			}
			if res.StatusCode != 200 {
				return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
			}
			return decodeInto(b, out)
		}, hc.CloseIdleConnections
	default:
		conns := make([]*loadgen.Conn, maxC)
		header := "Authorization: Bearer " + key + "\r\nanthropic-beta: " + httpapi.BetaAgentMemory + "\r\n"
		for g := range conns {
			conns[g] = &loadgen.Conn{Addr: addr, Header: header}
		}
		do := func(g int, method, path string, body []byte, out any) error {
			status, b, err := conns[g].Do(method, path, body)
			if err != nil {
				return fmt.Errorf("%s %s: %w", method, path, err)
			}
			if status != 200 {
				return fmt.Errorf("%s %s: %d %s", method, path, status, b)
			}
			return decodeInto(b, out)
		}
		return do, func() {
			for _, c := range conns {
				c.Close()
			}
		}
	}
}

// decodeInto decodes a 200 response body b into out as a caller does.
func decodeInto(b []byte, out any) error {
	switch out := out.(type) {
	case nil:
		return nil
	case rawID:
		*out.id = memberID(b)
		return nil
	case *[]byte:
		*out = bytes.Clone(b)
		return nil
	default:
		return json.Unmarshal(b, out)
	}
}

// rawID asks the lean client for the "id" member of a JSON object response
// (memberID) instead of decoding it.
type rawID struct{ id *string }

// memberID returns the string value of the first "id" member in a JSON
// object with no nested objects before it, or "" if there is none.
func memberID(b []byte) string {
	const key = `"id":"`
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return ""
	}
	v := b[i+len(key):]
	j := bytes.IndexByte(v, '"')
	if j < 0 {
		return ""
	}
	return string(v[:j])
}
