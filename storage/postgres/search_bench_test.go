package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/loadgen"
	"github.com/trovehq/trove/storage/postgres"
)

// BenchmarkSearchIndexWrites: the cost of keeping the search index on
// PostgreSQL, as core write throughput on four schemas in alternating
// rounds of 500 writes (writeCost): the current one (with: migration 0018, a write
// queues the memory, the driver's indexer fills memories_fts outside the
// write transactions, with its default delay and lag), the same without
// any search index (without: the queue's triggers dropped), and the index
// as it was before 0018 (inline: 0010's generated column and GIN index on
// memories, computed in every write, the queue's triggers dropped), and the
// current one with its indexer stopped (queued: what the write path alone
// pays, the trigger and the queue row; its queue is emptied untimed after
// each round), in writeCost's rounds: 1 KiB texts, creates then updates,
// at 1 and 16 writers. After each round of the current schema the
// indexer's remaining work is done at once and timed (DB.CatchUpSearch:
// catchup-us per write). Reports medians (with-ops/s, without-ops/s,
// inline-ops/s), with-% = 100 × with / without, inline-% = 100 × inline /
// without, queue-% = 100 × queued / without, all-% = the same as with-% with
// the catch-up's time counted. Where /proc/stat exists it also reports
// the machine's CPU per write (with-cpu-us, without-cpu-us, queued-cpu-us:
// the queued side's writes and then its whole queue indexed at once),
// cpu-% = 100 × without-cpu / with-cpu, and ceiling-% = 100 ×
// without-cpu / queued-cpu: the rate that this queue and this index's work,
// done in the cheapest batches whenever and wherever, allow when the
// writers keep every core busy.
//
//	TROVE_TEST_POSTGRES=… go test -run '^$' -bench SearchIndexWrites -benchtime 1x ./storage/postgres/
func BenchmarkSearchIndexWrites(b *testing.B) {
	testURL(b)
	texts := writeCostTexts()
	for _, op := range []string{"create", "update"} {
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c=%d", op, conc), func(b *testing.B) {
				catchUp := func(s *writeSide) time.Duration {
					start := time.Now()
					if err := s.db.CatchUpSearch(s.ctx); err != nil {
						b.Fatal(err)
					}
					return time.Since(start)
				}
				with := &writeSide{after: catchUp, timeAfter: true}
				without := &writeSide{sql: dropSearchQueue}
				inline := &writeSide{sql: dropSearchQueue + `; ALTER TABLE memories ADD COLUMN search tsvector GENERATED ALWAYS AS (trove_search_vector(path, content)) STORED;
					CREATE INDEX ON memories USING gin (search)`}
				// all of the index's work, after the writes: not in the
				// rate, in the CPU
				queued := &writeSide{opts: postgres.Options{SearchIndexDelay: -1}, after: catchUp}
				writeCost(b, op, conc, texts, with, without, inline, queued)
				w, wo, in, qu := median(with.rates), median(without.rates), median(inline.rates), median(queued.rates)
				catchUps := make([]float64, len(with.rates))
				for i := range catchUps {
					catchUps[i] = (1/with.allRates[i] - 1/with.rates[i]) * 1e6
				}
				b.ReportMetric(w, "with-ops/s")
				b.ReportMetric(wo, "without-ops/s")
				b.ReportMetric(in, "inline-ops/s")
				b.ReportMetric(100*w/wo, "with-%")
				b.ReportMetric(100*in/wo, "inline-%")
				b.ReportMetric(100*qu/wo, "queue-%")
				b.ReportMetric(median(catchUps), "catchup-us")
				b.ReportMetric(100*median(with.allRates)/wo, "all-%")
				if machineCPU() >= 0 {
					// CPU per write on the whole machine (PostgreSQL's backends
					// and this process), the index's catch-up included. When
					// the writers keep every core busy, writes with the index
					// can go no faster than the CPU of a write without it ÷
					// the CPU of a queued write plus its share of one
					// catch-up of the whole queue (the queued side).
					b.ReportMetric(median(with.cpu), "with-cpu-us")
					b.ReportMetric(median(without.cpu), "without-cpu-us")
					b.ReportMetric(median(queued.cpu), "queued-cpu-us")
					b.ReportMetric(100*median(without.cpu)/median(with.cpu), "cpu-%")
					b.ReportMetric(100*median(without.cpu)/median(queued.cpu), "ceiling-%")
				}
			})
		}
	}
}

// searchRawVariants are the tables of BenchmarkSearchIndexRawInsert: the
// memories table of migration 0001 without its foreign key, and the
// search column and index that the variant adds to it.
var searchRawVariants = []struct{ name, ddl string }{
	{"plain", ``},
	{"0007", `ALTER TABLE %[1]s ADD COLUMN search tsvector GENERATED ALWAYS AS (
		setweight(to_tsvector('simple'::regconfig, trove_search_words(path)), 'A') ||
		setweight(to_tsvector('simple'::regconfig, trove_search_words(trove_search_content(content))), 'D')) STORED;
		CREATE INDEX ON %[1]s USING gin (search)`},
	{"0010-column-only", `ALTER TABLE %[1]s ADD COLUMN search tsvector GENERATED ALWAYS AS (
		setweight(to_tsvector('simple'::regconfig, trove_search_words_re(path)), 'A') ||
		setweight(to_tsvector('simple'::regconfig, trove_search_words_re(trove_search_content(content))), 'D')) STORED`},
	{"0010", `ALTER TABLE %[1]s ADD COLUMN search tsvector GENERATED ALWAYS AS (
		setweight(to_tsvector('simple'::regconfig, trove_search_words_re(path)), 'A') ||
		setweight(to_tsvector('simple'::regconfig, trove_search_words_re(trove_search_content(content))), 'D')) STORED;
		CREATE INDEX ON %[1]s USING gin (search)`},
	{"bare", `ALTER TABLE %[1]s ADD COLUMN search tsvector GENERATED ALWAYS AS (
		to_tsvector('simple'::regconfig, trove_search_content(content))) STORED;
		CREATE INDEX ON %[1]s USING gin (search)`},
	{"bare-nofastupdate", `ALTER TABLE %[1]s ADD COLUMN search tsvector GENERATED ALWAYS AS (
		to_tsvector('simple'::regconfig, trove_search_content(content))) STORED;
		CREATE INDEX ON %[1]s USING gin (search) WITH (fastupdate = off)`},
}

// BenchmarkSearchIndexRawInsert: the ceiling of the search index's write
// cost, in raw pgx with nothing of Trove around it: the same INSERT of a
// memory row (1 KiB of the search corpus, one statement, autocommit) into
// the table of each of searchRawVariants, in alternating rounds of 300
// rows at 1 and 16 connections. Reports each variant's median rate as a
// percentage of plain's (<variant>-%), plain's rate (plain-ops/s) and the
// WAL an insert writes (<variant>-wal-B: the smallest
// pg_current_wal_insert_lsn() difference around one insert of 20, as the
// cluster is shared).
//
//	TROVE_TEST_POSTGRES=… go test -run '^$' -bench SearchIndexRawInsert -benchtime 1x ./storage/postgres/
func BenchmarkSearchIndexRawInsert(b *testing.B) {
	const rounds, round = 5, 300
	ctx := context.Background()
	schema := newSchema(b)
	fns, err := os.ReadFile("migrations/0007_memory_search.sql")
	if err != nil {
		b.Fatal(err)
	}
	c := adminConn(b)
	setup := "SET search_path TO " + schema + ";\n" + string(fns[:bytes.Index(fns, []byte("ALTER TABLE"))])
	fns0010, err := os.ReadFile("migrations/0010_search_words_regexp.sql")
	if err != nil {
		b.Fatal(err)
	}
	setup += ";\n" + strings.Replace(string(fns0010), "FUNCTION trove_search_words(", "FUNCTION trove_search_words_re(", 1)
	for _, v := range searchRawVariants {
		t := `"` + v.name + `"`
		setup += fmt.Sprintf(`;
		CREATE TABLE %[1]s (id text PRIMARY KEY, store_id text NOT NULL, path text COLLATE "C" NOT NULL,
			content bytea NOT NULL, size_bytes integer NOT NULL, sha256 text NOT NULL, version_id text NOT NULL,
			created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, UNIQUE (store_id, path));
		CREATE INDEX ON %[1]s (version_id)`, t)
		if v.ddl != "" {
			setup += ";\n" + fmt.Sprintf(v.ddl, t)
		}
	}
	if _, err := c.Exec(ctx, setup); err != nil {
		b.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(testURL(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 16
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	corpus := loadgen.NewCorpus()
	texts := make([][]byte, 2*rounds*round)
	for i := range texts {
		texts[i] = []byte(corpus.Text(i))
	}
	var seq atomic.Int64
	insert := func(q pgx.Tx, table string) error {
		i := int(seq.Add(1))
		id := fmt.Sprintf("mem_%09d", i)
		now := time.Now()
		var e interface {
			Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
		} = pool
		if q != nil {
			e = q
		}
		_, err := e.Exec(ctx, `INSERT INTO "`+table+`" (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			id, "memstore_bench", loadgen.CorpusPath(i), texts[i%len(texts)], len(texts[i%len(texts)]), "sha", "ver_"+id, now, now)
		return err
	}
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) {
			rates := map[string][]float64{}
			for range b.N * rounds {
				for _, v := range searchRawVariants {
					wall, _, err := runOps(conc, round, func(_, _ int) error { return insert(nil, v.name) })
					if err != nil {
						b.Fatal(err)
					}
					rates[v.name] = append(rates[v.name], float64(round)/wall.Seconds())
				}
			}
			plain := median(rates["plain"])
			b.ReportMetric(plain, "plain-ops/s")
			for _, v := range searchRawVariants[1:] {
				b.ReportMetric(100*median(rates[v.name])/plain, v.name+"-%")
			}
			if conc > 1 {
				return
			}
			for _, v := range searchRawVariants {
				least := int64(-1)
				for range 20 {
					tx, err := pool.Begin(ctx)
					if err != nil {
						b.Fatal(err)
					}
					var before, after int64
					lsn := "SELECT pg_current_wal_insert_lsn() - '0/0'"
					if err := tx.QueryRow(ctx, lsn).Scan(&before); err != nil {
						b.Fatal(err)
					}
					if err := insert(tx, v.name); err != nil {
						b.Fatal(err)
					}
					if err := tx.QueryRow(ctx, lsn).Scan(&after); err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(ctx); err != nil {
						b.Fatal(err)
					}
					if d := after - before; least < 0 || d < least {
						least = d
					}
				}
				b.ReportMetric(float64(least), v.name+"-wal-B")
			}
		})
	}
}

// BenchmarkSearch: GET /trove/v1/search over loopback HTTP (serve's
// server, core, PostgreSQL) on one store of the search corpus
// (internal/loadgen: 10,000 memories of 1 KiB, the query classes of
// loadgen.SearchQueries), one client, limit 20, the classes in turn: the
// shape of internal/bench's BenchmarkSearch on SQLite, 40 requests of
// each class (× b.N: use -benchtime 1x, as loading takes minutes). It runs twice: with
// the GIN index's pending list as loading the store left it (pending-…),
// then after gin_clean_pending_list moved it into the index (clean-…),
// both after ANALYZE;
// pending-pages is how many pages the list held. Each phase reports each
// class's p99 (<phase>-<class>-p99-ms), the p99 of the classes that match
// under 10 % of the memories (<phase>-selective-p99-ms) and of all
// (<phase>-p99-ms), and, as the same-run baseline of what the machine and
// HTTP cost, the p99 of a memory get sent as many times by the same client
// right after (<phase>-get-p99-ms).
//
//	TROVE_TEST_POSTGRES=… go test -run '^$' -bench 'Search$' -benchtime 1x ./storage/postgres/
func BenchmarkSearch(b *testing.B) {
	const perClass = 40 // requests of each class per phase (and b.N)
	ctx := context.Background()
	schema := newSchema(b)
	db := openDBOn(b, testURL(b), schema, postgres.Options{MaxConns: 16})
	svc := core.New(db, core.Options{AuthCacheTTL: 2 * time.Second})
	k, secret, err := svc.CreateKey(ctx, "wrkspc_bench", "bench")
	if err != nil {
		b.Fatal(err)
	}
	pctx := trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: "wrkspc_bench", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}})
	st, err := svc.CreateStore(pctx, trove.CreateStoreParams{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}).HTTPServer()
	go srv.Serve(ln)
	defer srv.Close()
	client := &loadgen.Conn{Addr: ln.Addr().String(), Header: "Authorization: Bearer " + secret + "\r\nanthropic-beta: " + httpapi.BetaAgentMemory + "\r\n"}
	defer client.Close()
	call := func(path string) error {
		status, resp, err := client.Do("GET", path, nil)
		if err == nil && status != 200 {
			err = fmt.Errorf("GET %s: %d %s", path, status, resp)
		}
		return err
	}

	corpus := loadgen.NewCorpus()
	var first atomic.Value
	if _, _, err := runOps(16, loadgen.CorpusMemories, func(_, i int) error {
		m, err := svc.CreateMemory(pctx, st.ID, trove.CreateMemoryParams{Path: loadgen.CorpusPath(i), Content: corpus.Text(i)})
		if err == nil && i == 0 {
			first.Store(m.ID)
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	get := "/v1/memory_stores/" + st.ID + "/memories/" + first.Load().(string)
	queries := loadgen.SearchQueries(corpus.Vocab)
	classes := slices.Sorted(maps.Keys(queries))
	paths := make([]string, len(classes))
	for k, class := range classes {
		paths[k] = "/trove/v1/search?" + url.Values{"q": {queries[class]}, "store_id": {st.ID}, "limit": {"20"}}.Encode()
	}
	warm := func() {
		for _, p := range paths {
			for range 16 { // each of the pool's connections prepares the statement
				if err := call(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	pct := func(ds []time.Duration, p float64) float64 {
		slices.Sort(ds)
		i := int(float64(len(ds))*p/100+0.5) - 1
		return float64(ds[max(0, min(i, len(ds)-1))].Microseconds()) / 1000
	}
	n := perClass * len(classes) * b.N
	phase := func(name string) {
		lat := make([]time.Duration, n)
		if _, _, err := runOps(1, n, func(_, i int) error {
			t0 := time.Now()
			err := call(paths[i%len(paths)])
			lat[i] = time.Since(t0)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		var selective []time.Duration
		for k, class := range classes {
			var l []time.Duration
			for i := k; i < n; i += len(classes) {
				l = append(l, lat[i])
			}
			if slices.Contains(loadgen.SelectiveClasses, class) {
				selective = append(selective, l...)
			}
			b.ReportMetric(pct(l, 99), name+"-"+class+"-p99-ms")
		}
		b.ReportMetric(pct(selective, 99), name+"-selective-p99-ms")
		b.ReportMetric(pct(lat, 99), name+"-p99-ms")
		_, getLat, err := runOps(1, n, func(_, _ int) error { return call(get) })
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(pct(getLat, 99), name+"-get-p99-ms")
	}

	// The search indexer's work done (it would be by now: its delay is a
	// tenth of a second), then what autovacuum would have done (the test
	// server may run without it): without statistics the planner reads
	// every memory of the store through its path index and tests each
	// one's search value.
	if err := db.CatchUpSearch(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := adminConn(b).Exec(ctx, "ANALYZE "+schema+".memories, "+schema+".memories_fts, "+schema+".memories_search_queue, "+schema+".stores"); err != nil {
		b.Fatal(err)
	}
	warm()
	b.ResetTimer()
	phase("pending")
	b.StopTimer()
	var pages int64
	if err := adminConn(b).QueryRow(ctx, "SELECT gin_clean_pending_list('"+schema+".memories_fts_search'::regclass)").Scan(&pages); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(pages), "pending-pages")
	warm()
	b.StartTimer()
	phase("clean")
}

// BenchmarkSearchIndexExpression: what computing a memory's search value
// costs the server, without the row, the index or the commit around it:
// one SELECT of the value of each of 2,000 texts of the search corpus
// (1 KiB, sent as an array), with 0007's trove_search_words (translate),
// 0010's (regexp_replace), and bare (to_tsvector of the content alone),
// in alternating rounds. Reports each one's median µs per text.
//
//	TROVE_TEST_POSTGRES=… go test -run '^$' -bench SearchIndexExpression -benchtime 1x ./storage/postgres/
func BenchmarkSearchIndexExpression(b *testing.B) {
	const rounds, texts = 5, 2000
	ctx := context.Background()
	schema := newSchema(b)
	fns, err := os.ReadFile("migrations/0007_memory_search.sql")
	if err != nil {
		b.Fatal(err)
	}
	fns0010, err := os.ReadFile("migrations/0010_search_words_regexp.sql")
	if err != nil {
		b.Fatal(err)
	}
	c := adminConn(b)
	if _, err := c.Exec(ctx, "SET search_path TO "+schema+";\n"+string(fns[:bytes.Index(fns, []byte("ALTER TABLE"))])+";\n"+
		strings.Replace(string(fns0010), "FUNCTION trove_search_words(", "FUNCTION trove_search_words_re(", 1)); err != nil {
		b.Fatal(err)
	}
	corpus := loadgen.NewCorpus()
	paths, contents := make([]string, texts), make([][]byte, texts)
	for i := range texts {
		paths[i], contents[i] = loadgen.CorpusPath(i), []byte(corpus.Text(i))
	}
	value := func(words string) string {
		return `setweight(to_tsvector('simple'::regconfig, ` + words + `(p)), 'A') ||
			setweight(to_tsvector('simple'::regconfig, ` + words + `(trove_search_content(b))), 'D')`
	}
	exprs := []struct{ name, expr string }{
		{"0007", value("trove_search_words")},
		{"0010", value("trove_search_words_re")},
		{"bare", `to_tsvector('simple'::regconfig, trove_search_content(b))`},
	}
	times := map[string][]float64{}
	for range b.N * rounds {
		for _, e := range exprs {
			var n int64
			t0 := time.Now()
			if err := c.QueryRow(ctx, "SELECT sum(length("+e.expr+")) FROM unnest($1::text[], $2::bytea[]) AS t(p, b)", paths, contents).Scan(&n); err != nil {
				b.Fatal(err)
			}
			times[e.name] = append(times[e.name], float64(time.Since(t0).Microseconds())/texts)
		}
	}
	for _, e := range exprs {
		s := slices.Clone(times[e.name])
		slices.Sort(s)
		b.ReportMetric(s[len(s)/2], e.name+"-µs/text")
	}
}
