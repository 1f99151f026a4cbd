package bench

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/internal/loadgen"
	"github.com/trovehq/trove/storage/sqlite"
)

// The search benchmarks' store, corpus and query classes are
// internal/loadgen's, shared with storage/postgres's: 10,000 memories of
// 1 KiB (loadgen.CorpusMemories, loadgen.CorpusBytes).

// BenchmarkSearch: GET /trove/v1/search over loopback HTTP (serve's
// server, core, SQLite) on one store of 10,000 memories of 1 KiB, one
// client, the query classes of searchQueries in turn, limit 20. Reports
// the latency percentiles of all requests (p50-ms, p99-ms, max-ms), each
// class's p99 and median (<class>-p99-ms, <class>-p50-ms), the p99 of the
// classes that match under 10 % of the memories (selective-p99-ms), and,
// as the same-run baselines: what the machine and HTTP cost, the p99 of a
// memory get (GET /v1/…/memories/{id}) sent as many times by the same
// client right after (get-p99-ms); and the ceiling, each class's median
// time of the bare FTS5 statement that ranks its top 21 by the same BM25
// (no store filter, no memory row read, nothing of Trove around it) on
// the same database, run right after each request (<class>-fts5-p50-ms).
// ops/s counts the requests' time only.
//
//	go test -run '^$' -bench 'Search$' -benchtime 400x ./internal/bench/
func BenchmarkSearch(b *testing.B) {
	a := newAPI(b)
	c := loadgen.NewCorpus()
	load(b, a, c, a.storeID)
	queries := loadgen.SearchQueries(c.Vocab)
	classes := slices.Sorted(maps.Keys(queries))
	cs := clients(b, a.addr, a.key, 1)
	paths := make([]string, len(classes))
	for k, class := range classes {
		paths[k] = "/trove/v1/search?" + url.Values{"q": {queries[class]}, "store_id": {a.storeID}, "limit": {"20"}}.Encode()
		for range 8 { // warm: each read connection prepares the statement once
			if _, err := call(cs[0], "GET", paths[k], nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	pg, err := a.svc.ListMemories(a.pctx, a.storeID, trove.ListMemoriesParams{Limit: 1})
	if err != nil {
		b.Fatal(err)
	}
	get := "/v1/memory_stores/" + a.storeID + "/memories/" + pg.Data[0].Memory.ID
	bare := bareFTS5(b, a.db.Path(), queries)
	lat, bareLat := make([]time.Duration, b.N), make([]time.Duration, b.N)
	b.ResetTimer()
	run(b, 1, b.N, func(g, i int) error {
		t0 := time.Now()
		_, err := call(cs[g], "GET", paths[i%len(paths)], nil)
		lat[i] = time.Since(t0)
		if err != nil {
			return err
		}
		// The ceiling of the same query at the same moment (so under the
		// same load), right after the request.
		t0 = time.Now()
		err = bare(classes[i%len(classes)])
		bareLat[i] = time.Since(t0)
		return err
	})
	b.StopTimer()
	var wall time.Duration // the requests' time, without the ceiling's
	for _, l := range lat {
		wall += l
	}
	var selective []time.Duration
	for k, class := range classes {
		var l []time.Duration
		for i := k; i < b.N; i += len(classes) {
			l = append(l, lat[i])
		}
		if slices.Contains(loadgen.SelectiveClasses, class) {
			selective = append(selective, l...)
		}
		b.ReportMetric(ms(pct(l, 99)), class+"-p99-ms")
		b.ReportMetric(ms(pct(l, 50)), class+"-p50-ms")
		var bl []time.Duration
		for i := k; i < b.N; i += len(classes) {
			bl = append(bl, bareLat[i])
		}
		b.ReportMetric(ms(pct(bl, 50)), class+"-fts5-p50-ms")
	}
	b.ReportMetric(ms(pct(selective, 99)), "selective-p99-ms")
	getLat := make([]time.Duration, b.N)
	run(b, 1, b.N, func(g, i int) error {
		t0 := time.Now()
		_, err := call(cs[g], "GET", get, nil)
		getLat[i] = time.Since(t0)
		return err
	})
	b.ReportMetric(rate(b.N, wall), "ops/s")
	b.ReportMetric(ms(pct(lat, 50)), "p50-ms")
	b.ReportMetric(ms(pct(lat, 99)), "p99-ms")
	b.ReportMetric(ms(pct(lat, 100)), "max-ms")
	b.ReportMetric(ms(pct(getLat, 99)), "get-p99-ms")
}

// bareFTS5 returns a function that runs, for a class of queries, the bare
// FTS5 statement that ranks the query's top 21 by the BM25 of
// storage/sqlite's search (path weight 4), on one read-only connection of
// its own to the database at path: the ceiling of a search, what FTS5
// itself costs with nothing of Trove around it.
func bareFTS5(b *testing.B, path string, queries map[string]string) func(class string) error {
	b.Helper()
	raw, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()+"?_query_only=1")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { raw.Close() })
	raw.SetMaxOpenConns(1)
	st, err := raw.Prepare(`SELECT rowid, bm25(memories_search, 4.0, 1.0) AS s FROM memories_search WHERE memories_search MATCH ? ORDER BY s LIMIT 21`)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	fts := map[string]string{}
	for class, text := range queries {
		q, err := trove.ParseSearchQuery(text)
		if err != nil {
			b.Fatal(err)
		}
		var terms []string
		for _, t := range q.Terms { // as storage/sqlite's ftsQuery writes it
			term := `"` + strings.Join(t.Words, " ") + `"`
			if t.Prefix {
				term += "*"
			}
			terms = append(terms, term)
		}
		fts[class] = strings.Join(terms, " AND ")
	}
	return func(class string) error {
		rows, err := st.Query(fts[class])
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}
}

// pct is the p-th percentile (nearest rank) of ds; ds is sorted in place.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds))*p/100+0.5) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// load creates the corpus's loadgen.CorpusMemories memories in storeID through
// core, 16 writers at a time (group commit).
func load(b *testing.B, a *api, c *loadgen.Corpus, storeID string) {
	b.Helper()
	run(b, 16, loadgen.CorpusMemories, func(_, i int) error {
		_, err := a.svc.CreateMemory(a.pctx, storeID, trove.CreateMemoryParams{
			Path: loadgen.CorpusPath(i), Content: c.Text(i)})
		return err
	})
}

// dropSearchIndex removes migration 0007's index and triggers from the
// SQLite database at path (closed), leaving every other table as is: the
// same schema without the search index.
func dropSearchIndex(b *testing.B, path string) {
	b.Helper()
	execRaw(b, path, "DROP TRIGGER memories_search_queue_insert", "DROP TRIGGER memories_search_queue_update",
		"DROP TRIGGER memories_search_queue_delete", "DROP TABLE memories_search_queue", "DROP TABLE memories_search")
}

// dropPathIndex drops versions_by_path (SQLite migration 0018), the index
// behind an older moment's as-of page.
func dropPathIndex(b *testing.B, path string) {
	b.Helper()
	execRaw(b, path, "DROP INDEX versions_by_path")
}

// execRaw runs statements on the SQLite database at path, outside the driver.
func execRaw(b *testing.B, path string, stmts ...string) {
	b.Helper()
	raw, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()+"?_busy_timeout=5000")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	for _, q := range stmts {
		if _, err := raw.Exec(q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
}

// BenchmarkSearchIndexWrites: the cost of keeping the search index, as
// core write throughput on SQLite with the index against the same schema
// without it (migrations 0007's and 0017's tables and triggers dropped),
// 1 KiB contents, creates then updates of those memories, at 1 and 16
// writers. The two databases run in alternating rounds (with, without,
// with, …; rounds of searchRound writes each) so that machine noise falls
// on both; reported are each side's median round (with-ops/s,
// without-ops/s) and their ratio (with-%: 100 × with / without; the target
// is ≥ 85), and each side's median process CPU per write (with-cpu-us,
// without-cpu-us) with their ratio (cpu-%: 100 × without / with), which a
// busy machine disturbs much less than wall time.
//
// Since 0017 the index is written outside the write transaction, from a
// queue (storage/sqlite/searchindex.go). The benchmark turns the
// committer's own catch-ups off (SearchIndexLag and SearchIndexIdle < 0):
// the writes of a round only queue. The deferred work is then paid at
// once, timed: after each round of the indexed side, DB.CatchUpSearch
// (what the next search, the lag or an idle moment would do); catchup-us
// is its median time per write and all-% the ratio with it counted in the
// indexed side's time (100 × searchRound / (wall + catch-up) / without),
// about what a sustained stream of writes gets, as the committer then
// indexes a chunk at every lag.
//
//	go test -run '^$' -bench SearchIndexWrites -benchtime 1x ./internal/bench/
func BenchmarkSearchIndexWrites(b *testing.B) { benchWriteCost(b, dropSearchIndex, true) }

// BenchmarkPathIndexWrites: the cost of versions_by_path (SQLite 0018), as
// BenchmarkSearchIndexWrites measures the search index's: core write
// throughput and CPU per write with the index against the same schema
// without it, in alternating rounds; both sides keep the search index with
// the driver's default lag (nothing deferred is timed apart):
//
//	go test -run '^$' -bench PathIndexWrites -benchtime 1x ./internal/bench/
func BenchmarkPathIndexWrites(b *testing.B) { benchWriteCost(b, dropPathIndex, false) }

// benchWriteCost measures writes on a database as migrated ("with")
// against one that drop has changed ("without"), as described at
// BenchmarkSearchIndexWrites; searchDeferred turns the committer's search
// catch-ups off on both and times the indexed side's CatchUpSearch apart.
func benchWriteCost(b *testing.B, drop func(*testing.B, string), searchDeferred bool) {
	const rounds, searchRound = 5, 1000
	for _, op := range []string{"create", "update"} {
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c=%d", op, conc), func(b *testing.B) {
				c := loadgen.NewCorpus()
				texts := make([]string, 2*searchRound)
				for i := range texts {
					texts[i] = c.Text(i)
				}
				type side struct {
					db       *sqlite.DB
					svc      *core.Service
					pctx     context.Context
					rates    []float64
					cpus     []float64 // process CPU µs per write, each round
					allRates []float64 // with the catch-up's time counted (indexed side)
					catchUps []float64 // catch-up µs per write (indexed side)
				}
				open := func(index bool) *side {
					ctx := context.Background()
					path := filepath.Join(b.TempDir(), "trove.db")
					// The queue is applied only by CatchUpSearch below (not
					// at the lag, nor when idle), so that with-% is the
					// write path's alone and all-% adds all the indexing.
					opts := sqlite.Options{AutoMigrate: true}
					if searchDeferred {
						opts.SearchIndexLag, opts.SearchIndexIdle = -1, -1
					}
					db, err := sqlite.Open(ctx, path, opts)
					if err != nil {
						b.Fatal(err)
					}
					if !index {
						db.Close()
						drop(b, path)
						if db, err = sqlite.Open(ctx, path, opts); err != nil {
							b.Fatal(err)
						}
					}
					b.Cleanup(func() { db.Close() })
					pctx := trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: "wrkspc_bench", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_bench"}})
					return &side{db: db, svc: core.New(db, core.Options{}), pctx: pctx}
				}
				with, without := open(true), open(false)
				b.ResetTimer()
				for n := range b.N * rounds {
					for _, s := range []*side{with, without} {
						st, err := s.svc.CreateStore(s.pctx, trove.CreateStoreParams{Name: fmt.Sprintf("r%d", n)})
						if err != nil {
							b.Fatal(err)
						}
						ids := make([]string, searchRound)
						create := func(_, i int) error {
							m, err := s.svc.CreateMemory(s.pctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/g%d/m%05d.md", i%16, i), Content: texts[i]})
							if err == nil {
								ids[i] = m.ID
							}
							return err
						}
						catchUp := func() time.Duration {
							if s != with || !searchDeferred {
								return 0
							}
							start := time.Now()
							if err := s.db.CatchUpSearch(s.pctx); err != nil {
								b.Fatal(err)
							}
							return time.Since(start)
						}
						if op == "update" {
							run(b, 16, searchRound, create)
							catchUp() // the creates' indexing is not the updates'
						}
						wall, cpu := run(b, conc, searchRound, func(g, i int) error {
							if op == "create" {
								return create(g, i)
							}
							_, err := s.svc.UpdateMemory(s.pctx, st.ID, ids[i], trove.UpdateMemoryParams{Content: &texts[searchRound+i]})
							return err
						})
						s.rates = append(s.rates, rate(searchRound, wall))
						s.cpus = append(s.cpus, float64(cpu.Microseconds())/searchRound)
						if s == with {
							cu := catchUp()
							s.allRates = append(s.allRates, rate(searchRound, wall+cu))
							s.catchUps = append(s.catchUps, float64(cu.Microseconds())/searchRound)
						}
					}
				}
				b.StopTimer()
				w, wo := median(with.rates), median(without.rates)
				b.ReportMetric(w, "with-ops/s")
				b.ReportMetric(wo, "without-ops/s")
				b.ReportMetric(100*w/wo, "with-%")
				wc, woc := median(with.cpus), median(without.cpus)
				b.ReportMetric(wc, "with-cpu-us")
				b.ReportMetric(woc, "without-cpu-us")
				b.ReportMetric(100*woc/wc, "cpu-%")
				if searchDeferred {
					b.ReportMetric(median(with.catchUps), "catchup-us")
					b.ReportMetric(100*median(with.allRates)/wo, "all-%")
				}
			})
		}
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
