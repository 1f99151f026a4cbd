package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/internal/loadgen"
	"github.com/trovehq/trove/storage/postgres"
)

// The rounds of a write-cost benchmark (writeCost): writeCostRounds rounds
// of writeCostRound writes on each side.
const writeCostRounds, writeCostRound = 5, 500

// dropSearchQueue takes the search index off a schema: no write queues its
// memory, so the indexer never runs.
const dropSearchQueue = `DROP TRIGGER memories_search_enqueue_insert ON memories; DROP TRIGGER memories_search_enqueue_update ON memories`

// writeCostTexts are the 1 KiB texts of the search corpus the writes carry
// (internal/loadgen): the creates' and then the updates'.
func writeCostTexts() []string {
	corpus := loadgen.NewCorpus()
	texts := make([]string, 2*writeCostRound)
	for i := range texts {
		texts[i] = corpus.Text(i)
	}
	return texts
}

// writeSide is one schema of a write-cost benchmark: a fresh schema with
// sql run on it after migrating, opened with opts (MaxConns 16). after, if
// set, runs once a round's writes are done; its time counts in allRates
// when timeAfter, and its CPU always counts in cpu.
type writeSide struct {
	sql       string
	opts      postgres.Options
	after     func(*writeSide) time.Duration
	timeAfter bool

	db  *postgres.DB
	svc *core.Service
	ctx context.Context
	// Per round: writes per second, the same with after's time counted
	// (timeAfter), and the machine's busy CPU per write in µs (after's
	// included; see machineCPU).
	rates, allRates, cpu []float64
}

// writeCost opens each side, then runs b.N × writeCostRounds rounds, each
// side in turn: a store, then writeCostRound creates of texts, conc at a
// time, or (op "update") those creates at 16 at a time, untimed, with the
// search index caught up, then conc at a time an update of each to
// another text. The samples are left on the sides.
func writeCost(b *testing.B, op string, conc int, texts []string, sides ...*writeSide) {
	b.Helper()
	for _, s := range sides {
		schema := newSchema(b)
		opts := s.opts
		opts.MaxConns = 16
		s.db = openDBOn(b, testURL(b), schema, opts)
		if s.sql != "" {
			if _, err := adminConn(b).Exec(context.Background(), "SET search_path TO "+schema+"; "+s.sql); err != nil {
				b.Fatal(err)
			}
		}
		s.ctx = trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: "wrkspc_bench", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_bench"}})
		s.svc = core.New(s.db, core.Options{})
	}
	b.ResetTimer()
	for n := range b.N * writeCostRounds {
		for _, s := range sides {
			st, err := s.svc.CreateStore(s.ctx, trove.CreateStoreParams{Name: fmt.Sprintf("r%d", n)})
			if err != nil {
				b.Fatal(err)
			}
			ids := make([]string, writeCostRound)
			create := func(_, i int) error {
				m, err := s.svc.CreateMemory(s.ctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/g%d/m%05d.md", i%16, i), Content: texts[i]})
				if err == nil {
					ids[i] = m.ID
				}
				return err
			}
			if op == "update" {
				if _, _, err := runOps(16, writeCostRound, create); err != nil {
					b.Fatal(err)
				}
				if err := s.db.CatchUpSearch(s.ctx); err != nil { // the creates' indexing is not the updates'
					b.Fatal(err)
				}
			}
			cpu0 := machineCPU()
			wall, _, err := runOps(conc, writeCostRound, func(w, i int) error {
				if op == "create" {
					return create(w, i)
				}
				_, err := s.svc.UpdateMemory(s.ctx, st.ID, ids[i], trove.UpdateMemoryParams{Content: &texts[writeCostRound+i]})
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			s.rates = append(s.rates, writeCostRound/wall.Seconds())
			if s.after != nil {
				if d := s.after(s); s.timeAfter {
					s.allRates = append(s.allRates, writeCostRound/(wall+d).Seconds())
				}
			}
			s.cpu = append(s.cpu, float64((machineCPU()-cpu0).Microseconds())/writeCostRound)
		}
	}
	b.StopTimer()
}

// BenchmarkPathIndexWrites: what migration 0019's versions_by_path (the
// index of an older moment's as-of page, history.go) costs a write on
// PostgreSQL: core creates and updates (writeCost's rounds, 1 and 16
// writers) on a schema with the index and on one with it dropped, both
// without the search index (whose indexer would add its own noise).
// Reports medians: with-ops/s, without-ops/s, with-% = 100 × with ÷
// without and, where /proc/stat exists, cpu-% = 100 × the machine's CPU
// per write without ÷ with (1 / the CPU a write costs more with it).
//
//	TROVE_TEST_POSTGRES=… go test -run '^$' -bench PathIndexWrites -benchtime 1x ./storage/postgres/
func BenchmarkPathIndexWrites(b *testing.B) {
	testURL(b)
	texts := writeCostTexts()
	for _, op := range []string{"create", "update"} {
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c=%d", op, conc), func(b *testing.B) {
				with := &writeSide{sql: dropSearchQueue}
				without := &writeSide{sql: dropSearchQueue + "; DROP INDEX versions_by_path"}
				writeCost(b, op, conc, texts, with, without)
				w, wo := median(with.rates), median(without.rates)
				b.ReportMetric(w, "with-ops/s")
				b.ReportMetric(wo, "without-ops/s")
				b.ReportMetric(100*w/wo, "with-%")
				if machineCPU() >= 0 {
					b.ReportMetric(100*median(without.cpu)/median(with.cpu), "cpu-%")
				}
			})
		}
	}
}

// median is the middle of xs (the upper one of an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
