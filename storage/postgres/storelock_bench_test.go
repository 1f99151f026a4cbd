package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/postgres"
)

// BenchmarkStoreRowContention measures what 16 writers into one store pay
// for waiting on each other. Every write to a store locks the store's row
// (its counters, its version seq and hash chain), so the writes of one
// store run one at a time whatever the concurrency; the question is what
// the waiting costs. Two sides, in alternating rounds of writeCostRound
// creates at 16 writers, each round into a new store of one schema
// migrated as shipped (search index and indexer on):
//
//   - pg: the driver as it is: the writers queue at the store's gate in
//     this process (storegate.go), or, without gates, each in a backend on
//     the row lock;
//   - go: the same writes, each taken one at a time by a mutex in this
//     test before it reaches core: the cheapest queue there is.
//
// Reports the medians of pg-ops/s and go-ops/s, x-go = go ÷ pg (about 1
// when the driver queues as cheaply as a mutex; 1.8–1.9 without gates),
// the machine's CPU per write on each side (pg-cpu-us, go-cpu-us;
// /proc/stat, where it exists), and pg-tuple-waiters: the mean number of
// backends of the database waiting on a tuple lock during the pg rounds
// (pg_stat_activity sampled every 5 ms; about 12 of the 16 without gates).
//
//	TROVE_TEST_POSTGRES=… go test -run '^$' -bench StoreRowContention -benchtime 1x ./storage/postgres/
func BenchmarkStoreRowContention(b *testing.B) {
	texts := writeCostTexts()
	url := testURL(b)
	schema := newSchema(b)
	db := openDBOn(b, url, schema, postgres.Options{MaxConns: 16})
	ctx := trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: "wrkspc_bench", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_bench"}})
	svc := core.New(db, core.Options{})
	sampler, err := pgx.Connect(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	defer sampler.Close(context.Background())
	// waiters samples, until stop is closed, how many backends wait on a
	// tuple lock, and returns the mean.
	waiters := func(stop <-chan struct{}) <-chan float64 {
		out := make(chan float64, 1)
		go func() {
			sum, n := 0, 0
			for {
				select {
				case <-stop:
					out <- float64(sum) / float64(max(n, 1))
					return
				case <-time.After(5 * time.Millisecond):
				}
				var w int
				if err := sampler.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'tuple'`).Scan(&w); err == nil {
					sum, n = sum+w, n+1
				}
			}
		}()
		return out
	}
	var rates, cpus [2][]float64
	var tuple []float64
	b.ResetTimer()
	for n := range b.N * writeCostRounds {
		for side, serial := range []bool{false, true} {
			st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: fmt.Sprintf("r%d-%d", n, side)})
			if err != nil {
				b.Fatal(err)
			}
			var mu sync.Mutex
			stop := make(chan struct{})
			var mean <-chan float64
			if !serial {
				mean = waiters(stop)
			}
			cpu0 := machineCPU()
			wall, _, err := runOps(16, writeCostRound, func(_, i int) error {
				if serial {
					mu.Lock()
					defer mu.Unlock()
				}
				_, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/g%d/m%05d.md", i%16, i), Content: texts[i]})
				return err
			})
			close(stop)
			if err != nil {
				b.Fatal(err)
			}
			if err := db.CatchUpSearch(ctx); err != nil { // the round's index work, counted in its CPU
				b.Fatal(err)
			}
			cpus[side] = append(cpus[side], float64((machineCPU()-cpu0).Microseconds())/writeCostRound)
			rates[side] = append(rates[side], writeCostRound/wall.Seconds())
			if mean != nil {
				tuple = append(tuple, <-mean)
			}
		}
	}
	b.StopTimer()
	pg, gomu := median(rates[0]), median(rates[1])
	b.ReportMetric(pg, "pg-ops/s")
	b.ReportMetric(gomu, "go-ops/s")
	b.ReportMetric(gomu/pg, "x-go")
	b.ReportMetric(median(tuple), "pg-tuple-waiters")
	if machineCPU() >= 0 {
		b.ReportMetric(median(cpus[0]), "pg-cpu-us")
		b.ReportMetric(median(cpus[1]), "go-cpu-us")
	}
}
