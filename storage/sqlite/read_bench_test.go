package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/loadgen"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/sqlite"
)

// BenchmarkPointRead compares, in one run and in alternating rounds (so
// that load from elsewhere on the machine hits every side alike), three
// ways of reading one memory with its content by ID:
//
//   - bare: database/sql on its own read-only connections, one prepared
//     statement in autocommit mode (the ceiling);
//   - tx: the driver's Read with Tx.MemoryGet (BEGIN, SELECT, ROLLBACK);
//   - point: the driver's Driver.MemoryGet (the SELECT alone).
//
// It reports each side's reads/s and CPU per read, and the CPU ratios
// tx/point (what the explicit point read saves), tx/bare and point/bare.
//
//	go test -run '^$' -bench PointRead -benchtime 20000x ./storage/sqlite/
func BenchmarkPointRead(b *testing.B) {
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) { benchPointRead(b, conc) })
	}
}

func benchPointRead(b *testing.B, conc int) {
	const rounds = 4
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "trove.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{AutoMigrate: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UTC()
	st := &trove.Store{ID: trove.NewID(trove.PrefixStore, now), WorkspaceID: "wrkspc_b", Name: "bench", CreatedAt: now, UpdatedAt: now}
	var ids []string
	err = db.Write(ctx, func(tx storage.Tx) error {
		if err := tx.StoreInsert(ctx, st); err != nil {
			return err
		}
		for i := range 64 {
			c := fmt.Sprintf("memory %d: the user prefers tabs, short answers and metric units.\n", i)
			m := &trove.Memory{ID: trove.NewID(trove.PrefixMemory, now), StoreID: st.ID, Path: fmt.Sprintf("/m%02d.md", i),
				Content: &c, SizeBytes: len(c), SHA256: fmt.Sprintf("%064d", i), VersionID: trove.NewID(trove.PrefixVersion, now),
				CreatedAt: now, UpdatedAt: now}
			if err := tx.MemoryInsert(ctx, m); err != nil {
				return err
			}
			ids = append(ids, m.ID)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	bare, err := sql.Open("sqlite", "file:"+path+"?_query_only=1")
	if err != nil {
		b.Fatal(err)
	}
	defer bare.Close()
	bare.SetMaxOpenConns(conc)
	bare.SetMaxIdleConns(conc)
	stmt, err := bare.PrepareContext(ctx, `SELECT id, store_id, path, size_bytes, sha256, version_id, created_at, updated_at, content FROM memories WHERE id = ? AND store_id = ?`)
	if err != nil {
		b.Fatal(err)
	}
	defer stmt.Close()

	sides := []struct {
		name string
		op   func(i int) error
	}{
		{"bare", func(i int) error {
			var m trove.Memory
			var c string
			var created, updated int64
			return stmt.QueryRowContext(ctx, ids[i%len(ids)], st.ID).Scan(&m.ID, &m.StoreID, &m.Path, &m.SizeBytes, &m.SHA256, &m.VersionID, &created, &updated, &c)
		}},
		{"tx", func(i int) error {
			return db.Read(ctx, func(tx storage.Tx) error {
				_, err := tx.MemoryGet(ctx, st.ID, ids[i%len(ids)], true)
				return err
			})
		}},
		{"point", func(i int) error {
			_, err := db.MemoryGet(ctx, st.ID, ids[i%len(ids)], true)
			return err
		}},
	}
	spent := make([]time.Duration, len(sides))
	cpu := make([]time.Duration, len(sides))
	done := 0
	b.ResetTimer()
	for r := range rounds {
		n := (b.N - done) / (rounds - r)
		if n == 0 {
			continue
		}
		for k, s := range sides {
			c0 := loadgen.ProcessCPU()
			d, err := concurrently(conc, n, s.op)
			if err != nil {
				b.Fatal(err)
			}
			spent[k] += d
			cpu[k] += loadgen.ProcessCPU() - c0
		}
		done += n
	}
	b.StopTimer()
	rate := make([]float64, len(sides))
	for k, s := range sides {
		rate[k] = float64(done) / spent[k].Seconds()
		b.ReportMetric(rate[k], s.name+"-reads/s")
		b.ReportMetric(float64(cpu[k].Microseconds())/float64(done), s.name+"-cpu-µs/op")
	}
	// CPU per read is steadier than the rate on a shared machine.
	b.ReportMetric(cpu[1].Seconds()/cpu[2].Seconds(), "tx/point-cpu")
	b.ReportMetric(cpu[1].Seconds()/cpu[0].Seconds(), "tx/bare-cpu")
	b.ReportMetric(cpu[2].Seconds()/cpu[0].Seconds(), "point/bare-cpu")
}

// concurrently runs op for i in [0, n) on conc goroutines and returns the
// wall time.
func concurrently(conc, n int, op func(i int) error) (time.Duration, error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
	)
	next := make(chan int)
	t0 := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := op(i); err != nil {
					mu.Lock()
					ferr = err
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return time.Since(t0), ferr
}
