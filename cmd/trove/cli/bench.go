package cli

import (
	"bytes"
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

	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
)

func init() { register(newBenchCmd) }

func newBenchCmd(e *env) *cobra.Command {
	var n int
	var conc string
	var authCaches []time.Duration
	var dir, cpuprofile string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the HTTP API next to raw SQLite on this machine",
		Long: `Measure create, update, get and list throughput and latency through the
HTTP API (a real loopback server over core and SQLite in a temporary
directory) at each concurrency, next to raw SQLite rates measured in the same
run (sqlite.RawBaseline): one durable update+version-insert transaction per
write, and a point read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var cs []int
			for f := range strings.SplitSeq(conc, ",") {
				c, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || c < 1 {
					return fmt.Errorf("--concurrency: bad value %q", f)
				}
				cs = append(cs, c)
			}
			if n < 1 {
				return fmt.Errorf("--n must be at least 1")
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
			return runBench(e.ctx, e.stdout, dir, n, cs, authCaches)
		},
	}
	cmd.Flags().IntVar(&n, "n", 1000, "operations per measurement")
	cmd.Flags().DurationSliceVar(&authCaches, "auth-cache", []time.Duration{defaultAuthCache}, "credential cache TTLs to measure (core.Options.AuthCacheTTL, as trove serve --auth-cache; 0: a database read per request)")
	cmd.Flags().StringVar(&conc, "concurrency", "1,16", "comma-separated client concurrencies")
	cmd.Flags().StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the databases (default: a temporary one, removed after)")
	return cmd
}

// benchResult is one measurement.
type benchResult struct {
	op       string
	conc     int
	n        int
	errors   int64
	elapsed  time.Duration
	p50, p99 time.Duration
}

func (r benchResult) rate() float64 { return float64(r.n) / r.elapsed.Seconds() }

// measure runs op n times split over conc goroutines (op gets the goroutine
// and a global sequence number) and records the latencies.
func measure(name string, conc, n int, op func(g, i int) error) benchResult {
	lat := make([][]time.Duration, conc)
	var next, errs atomic.Int64
	var wg sync.WaitGroup
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
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(float64(len(all))*p))]
	}
	return benchResult{op: name, conc: conc, n: n, errors: errs.Load(), elapsed: elapsed, p50: pct(0.50), p99: pct(0.99)}
}

func runBench(ctx context.Context, out io.Writer, dir string, n int, concs []int, authCaches []time.Duration) error {
	fmt.Fprintf(out, "trove bench: n=%d per measurement, concurrency %v, data in %s\n\n", n, concs, dir)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tconc\tops/s\tp50\tp99\terrors\tvs raw\t")
	raw := map[int][2]float64{}
	for _, c := range concs {
		d := filepath.Join(dir, fmt.Sprintf("raw-c%d", c))
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		w, r, err := sqlite.RawBaseline(ctx, d, c, n)
		if err != nil {
			return fmt.Errorf("raw baseline: %w", err)
		}
		raw[c] = [2]float64{w, r}
		fmt.Fprintf(tw, "raw write (1 txn/write)\t%d\t%.0f\t\t\t\t\t\n", c, w)
		fmt.Fprintf(tw, "raw point read\t%d\t%.0f\t\t\t\t\t\n", c, r)
	}
	for _, cache := range authCaches {
		results, err := httpBench(ctx, filepath.Join(dir, fmt.Sprintf("http-%s", cache)), n, concs, cache)
		if err != nil {
			return err
		}
		for _, r := range results {
			ratio := ""
			base := raw[r.conc]
			switch r.op {
			case "create", "update":
				ratio = fmt.Sprintf("%.2f× raw write", r.rate()/base[0])
			case "get":
				ratio = fmt.Sprintf("%.0f%% raw read", 100*r.rate()/base[1])
			}
			name := "http " + r.op
			if cache != defaultAuthCache {
				name += fmt.Sprintf(" (auth cache %s)", cache)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%d\t%s\t\n", name, r.conc, r.rate(), r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.errors, ratio)
		}
	}
	return tw.Flush()
}

// httpBench measures the API on a loopback server over core and SQLite.
func httpBench(ctx context.Context, dir string, n int, concs []int, authCache time.Duration) ([]benchResult, error) {
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
	srv := &http.Server{Handler: httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc, Limits: svc.Limits()})}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	maxC := slices.Max(concs)
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * maxC, MaxIdleConnsPerHost: 2 * maxC, DisableCompression: true}}
	do := func(method, url string, body []byte, out any) error {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, url, rd)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("anthropic-beta", httpapi.BetaAgentMemory)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			b, _ := io.ReadAll(res.Body)
			return fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, b)
		}
		b, err := io.ReadAll(res.Body) // to EOF, so the connection is reused
		if err != nil || out == nil {
			return err
		}
		return json.Unmarshal(b, out)
	}
	var st struct {
		ID string `json:"id"`
	}
	if err := do("POST", base+"/v1/memory_stores", []byte(`{"name":"bench"}`), &st); err != nil {
		return nil, err
	}
	mems := base + "/v1/memory_stores/" + st.ID + "/memories"
	content := strings.Repeat("x", 200)
	var results []benchResult
	for _, c := range concs {
		ids := make([]string, n)
		var firstErr error
		var once sync.Once
		create := measure("create", c, n, func(g, i int) error {
			body, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("/c%d/g%d/m%06d.md", c, g, i), "content": content})
			var m struct {
				ID string `json:"id"`
			}
			err := do("POST", mems, body, &m)
			if err != nil {
				once.Do(func() { firstErr = err })
			}
			ids[i] = m.ID
			return err
		})
		if firstErr != nil {
			return nil, firstErr
		}
		// Each goroutine updates memories of its own stripe, so updates do
		// not contend on one row.
		update := measure("update", c, n, func(g, i int) error {
			body, _ := json.Marshal(map[string]string{"content": fmt.Sprintf("%s %d", content, i)})
			return do("POST", mems+"/"+ids[i], body, nil)
		})
		get := measure("get", c, n, func(g, i int) error {
			return do("GET", mems+"/"+ids[(i*7919)%n], nil, nil)
		})
		list := measure("list", c, n, func(g, i int) error {
			return do("GET", fmt.Sprintf("%s?path_prefix=/c%d/g%d/&limit=20", mems, c, i%c), nil, nil)
		})
		results = append(results, create, update, get, list)
	}
	return results, nil
}
