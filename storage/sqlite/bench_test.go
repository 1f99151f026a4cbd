package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// Benchmarks: raw database/sql baselines next to the driver, in one run.
//
//	go test -run '^$' -bench . -benchtime 2000x ./storage/sqlite/
//
// Every benchmark reports ops/s as a metric; BenchmarkWriteRatio reports the
// driver's group-commit write rate over the raw one-transaction-per-write
// rate at the same concurrency (the product target is >= 2 at 16).

func benchRawEnv(b *testing.B, writeConns, readConns int) *rawEnv {
	b.Helper()
	env, err := newRawEnv(context.Background(), filepath.Join(b.TempDir(), "raw.db"), writeConns, readConns)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.Close() })
	return env
}

// benchDriver opens the driver on a new database seeded like the raw one.
type benchDriver struct {
	db      *DB
	storeID string
	mems    []*trove.Memory
}

func newBenchDriver(b *testing.B) *benchDriver {
	b.Helper()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(b.TempDir(), "trove.db"), Options{AutoMigrate: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	bd := &benchDriver{db: db}
	now := time.Now()
	s := &trove.Store{ID: trove.NewID(trove.PrefixStore, now), WorkspaceID: "ws", Name: "bench", CreatedAt: now, UpdatedAt: now}
	bd.storeID = s.ID
	err = db.Write(ctx, func(tx storage.Tx) error {
		if err := tx.StoreInsert(ctx, s); err != nil {
			return err
		}
		for i := range rawSeedMemories {
			c := benchContent(i)
			m := &trove.Memory{ID: trove.NewID(trove.PrefixMemory, now), StoreID: s.ID, Path: fmt.Sprintf("/bench/m%03d.md", i),
				Content: &c, SizeBytes: len(c), SHA256: benchSHA(c), VersionID: trove.NewID(trove.PrefixVersion, now),
				CreatedAt: now, UpdatedAt: now}
			if err := tx.MemoryInsert(ctx, m); err != nil {
				return err
			}
			bd.mems = append(bd.mems, m)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return bd
}

// write is the driver's equivalent of rawEnv.write: update a memory and
// append a version in one Write.
func (bd *benchDriver) write(ctx context.Context, i int) error {
	base := bd.mems[i%len(bd.mems)]
	c := benchContent(i)
	now := time.Now()
	m := *base
	m.Content, m.SizeBytes, m.SHA256 = &c, len(c), benchSHA(c)
	m.VersionID, m.UpdatedAt = trove.NewID(trove.PrefixVersion, now), now
	v := &trove.MemoryVersion{ID: m.VersionID, StoreID: m.StoreID, MemoryID: m.ID, Operation: trove.OpModified,
		Path: &m.Path, Content: &c, SizeBytes: &m.SizeBytes, SHA256: &m.SHA256,
		CreatedBy: &trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_bench"}, CreatedAt: now}
	return bd.db.Write(ctx, func(tx storage.Tx) error {
		if err := tx.MemoryUpdate(ctx, &m); err != nil {
			return err
		}
		return tx.VersionInsert(ctx, v)
	})
}

func (bd *benchDriver) read(ctx context.Context, i int) error {
	return bd.db.Read(ctx, func(tx storage.Tx) error {
		_, err := tx.MemoryGet(ctx, bd.storeID, bd.mems[i%len(bd.mems)].ID, true)
		return err
	})
}

// benchRun runs b.N ops on conc goroutines and reports ops/s under unit.
func benchRun(b *testing.B, conc int, unit string, op func(context.Context, int) error) float64 {
	b.Helper()
	b.ResetTimer()
	d, err := runConcurrently(context.Background(), conc, b.N, op)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	rate := float64(b.N) / d.Seconds()
	b.ReportMetric(rate, unit)
	return rate
}

// BenchmarkRawTxnPerWrite: one durable transaction per write with plain
// database/sql. conns=1 queues the goroutines on one connection (the
// baseline in baseline_test.go uses); conns=16 gives each its own connection, which
// then contend for SQLite's write lock.
func BenchmarkRawTxnPerWrite(b *testing.B) {
	for _, c := range []struct{ conc, conns int }{{1, 1}, {16, 1}, {16, 16}} {
		b.Run(fmt.Sprintf("c=%d/conns=%d", c.conc, c.conns), func(b *testing.B) {
			env := benchRawEnv(b, c.conns, 1)
			benchRun(b, c.conc, "writes/s", env.write)
		})
	}
}

// BenchmarkDriverWrite: the same write through DB.Write (group commit).
func BenchmarkDriverWrite(b *testing.B) {
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) {
			bd := newBenchDriver(b)
			b0, w0 := bd.db.Stats()
			benchRun(b, conc, "writes/s", bd.write)
			b1, w1 := bd.db.Stats()
			if b1 > b0 {
				b.ReportMetric(float64(w1-w0)/float64(b1-b0), "writes/commit")
			}
		})
	}
}

// BenchmarkRawPointRead: a memory with content by primary key, plain
// database/sql, autocommit.
func BenchmarkRawPointRead(b *testing.B) {
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) {
			env := benchRawEnv(b, 1, conc)
			benchRun(b, conc, "reads/s", env.read)
		})
	}
}

// BenchmarkDriverPointRead: the same read through DB.Read + MemoryGet.
func BenchmarkDriverPointRead(b *testing.B) {
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) {
			bd := newBenchDriver(b)
			benchRun(b, conc, "reads/s", bd.read)
		})
	}
}

// BenchmarkWriteRatio measures the raw one-transaction-per-write rate and
// the driver's rate at concurrency 16 in alternating rounds (so that a burst
// of load from elsewhere on the machine hits both sides alike), b.N writes
// each, and reports driver/raw: the group-commit speed-up.
func BenchmarkWriteRatio(b *testing.B) {
	const conc, rounds = 16, 4
	ctx := context.Background()
	env := benchRawEnv(b, 1, 1)
	bd := newBenchDriver(b)
	var rawD, drvD time.Duration
	done := 0
	b.ResetTimer()
	for r := range rounds {
		n := (b.N - done) / (rounds - r)
		if n == 0 {
			continue
		}
		d, err := runConcurrently(ctx, conc, n, env.write)
		if err != nil {
			b.Fatal(err)
		}
		rawD += d
		if d, err = runConcurrently(ctx, conc, n, bd.write); err != nil {
			b.Fatal(err)
		}
		drvD += d
		done += n
	}
	b.StopTimer()
	raw, drv := float64(done)/rawD.Seconds(), float64(done)/drvD.Seconds()
	b.ReportMetric(raw, "raw-writes/s")
	b.ReportMetric(drv, "driver-writes/s")
	b.ReportMetric(drv/raw, "x-raw")
}
