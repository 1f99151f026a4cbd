package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove"
)

// The raw baseline the driver is compared with in this package's
// benchmarks, measured in the same run: what plain database/sql over
// modernc.org/sqlite achieves on this machine and disk with the driver's
// own settings (WAL, synchronous=FULL, the same schema) and none of Trove.
// It lives in a test file so that the production driver exports no
// yardstick; internal/bench has the HTTP-level equivalent.
//
//   - rawEnv.write is one durable transaction per write (BEGIN IMMEDIATE;
//     UPDATE the memory row; INSERT a version row; COMMIT, one fsync).
//     With one writer connection the goroutines queue on it, the fastest
//     way to run one transaction per write on SQLite.
//   - rawEnv.read is a point read (a memory with its content, by primary
//     key) on the read pool.
//
// Statements run with a context that cannot be cancelled, as the driver's
// own do (with a cancellable one, database/sql and modernc.org/sqlite start
// a watcher goroutine per statement, which costs about as much as a point
// read).

// rawSeedMemories is how many memories the raw baseline spreads writes over.
const rawSeedMemories = 64

// rawEnv is a database opened with plain database/sql for the baselines.
type rawEnv struct {
	w, r    *sql.DB
	storeID string
	memIDs  []string
	seq     atomic.Int64
}

// newRawEnv creates a migrated database at path with a pool of writeConns
// writer connections and readConns query_only ones, and seeds it.
func newRawEnv(ctx context.Context, path string, writeConns, readConns int) (*rawEnv, error) {
	e := &rawEnv{}
	var err error
	busy := fmt.Sprintf("_busy_timeout=%d", DefaultBusyTimeout.Milliseconds())
	if e.w, err = sql.Open("sqlite", dsn(path, append([]string{busy}, writerParams...))); err != nil {
		return nil, err
	}
	e.w.SetMaxOpenConns(writeConns)
	e.w.SetMaxIdleConns(writeConns)
	if e.r, err = sql.Open("sqlite", dsn(path, append([]string{busy}, readerParams...))); err != nil {
		e.w.Close()
		return nil, err
	}
	e.r.SetMaxOpenConns(readConns)
	e.r.SetMaxIdleConns(readConns)
	if err := e.seed(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *rawEnv) Close() error { return errors.Join(e.w.Close(), e.r.Close()) }

func (e *rawEnv) seed(ctx context.Context) error {
	c, err := e.w.Conn(ctx)
	if err != nil {
		return translate(err)
	}
	err = migrate(ctx, c)
	c.Close() // the pool may have a single connection
	if err != nil {
		return err
	}
	now := time.Now()
	e.storeID = trove.NewID(trove.PrefixStore, now)
	tx, err := e.w.BeginTx(ctx, nil)
	if err != nil {
		return translate(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO stores (`+storeCols+`) VALUES (?, 'ws', 'bench', '', '{}', ?, ?, NULL)`,
		e.storeID, now.UnixMicro(), now.UnixMicro()); err != nil {
		return translate(err)
	}
	for i := range rawSeedMemories {
		id, vid := trove.NewID(trove.PrefixMemory, now), trove.NewID(trove.PrefixVersion, now)
		content := benchContent(i)
		if _, err := tx.ExecContext(ctx, `INSERT INTO memories (`+memoryCols+`, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, e.storeID, fmt.Sprintf("/bench/m%03d.md", i), len(content), benchSHA(content), vid, now.UnixMicro(), now.UnixMicro(), content); err != nil {
			return translate(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256, created_at, seq)
			VALUES (?, ?, ?, 'created', ?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM versions WHERE store_id = ?2))`,
			vid, e.storeID, id, fmt.Sprintf("/bench/m%03d.md", i), content, len(content), benchSHA(content), now.UnixMicro()); err != nil {
			return translate(err)
		}
		e.memIDs = append(e.memIDs, id)
	}
	return translate(tx.Commit())
}

// write is one durable transaction: update a memory row and append a
// version row, as a memory update does.
func (e *rawEnv) write(ctx context.Context, i int) error {
	seq := int(e.seq.Add(1))
	memID := e.memIDs[i%len(e.memIDs)]
	content := benchContent(seq)
	sum := benchSHA(content)
	now := time.Now()
	vid := trove.NewID(trove.PrefixVersion, now)
	tx, err := e.w.BeginTx(ctx, nil) // _txlock=immediate: BEGIN IMMEDIATE
	if err != nil {
		return translate(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE memories SET content = ?, size_bytes = ?, sha256 = ?, version_id = ?, updated_at = ?
		WHERE id = ? AND store_id = ?`, content, len(content), sum, vid, now.UnixMicro(), memID, e.storeID); err != nil {
		return translate(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256,
		created_by_type, created_by_id, created_at, seq) VALUES (?, ?, ?, 'modified', ?, ?, ?, ?, 'api_actor', 'apikey_bench', ?,
		(SELECT coalesce(max(seq), 0) + 1 FROM versions WHERE store_id = ?2))`,
		vid, e.storeID, memID, "/bench/m.md", content, len(content), sum, now.UnixMicro()); err != nil {
		return translate(err)
	}
	return translate(tx.Commit())
}

// read is one point read of a memory with its content.
func (e *rawEnv) read(ctx context.Context, i int) error {
	var m trove.Memory
	row := e.r.QueryRowContext(ctx, memorySelect(true)+` WHERE id = ? AND store_id = ?`, e.memIDs[i%len(e.memIDs)], e.storeID)
	return translate(scanMemory(row, &m))
}

// runConcurrently runs op(ctx, i) for i in [0, n) on concurrency goroutines
// and returns the wall time it took, or the first error.
func runConcurrently(ctx context.Context, concurrency, n int, op func(ctx context.Context, i int) error) (time.Duration, error) {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := ctx.Err(); err != nil {
					once.Do(func() { firstErr = ctxError(err) })
					next.Store(int64(n))
					return
				}
				if err := op(context.WithoutCancel(ctx), i); err != nil {
					once.Do(func() { firstErr = err })
					next.Store(int64(n)) // stop everyone
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), firstErr
}

// benchContent is a ~200-byte memory body that differs per i.
func benchContent(i int) string {
	return fmt.Sprintf("# note %d\n\nThe user prefers short answers, metric units and ISO dates. "+
		"Project Trove stores memories as path-addressed text with immutable versions. (%d)\n", i, i*7919)
}

func benchSHA(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestRawBaseline: the baseline writes and reads, and stops at a
// cancelled context.
func TestRawBaseline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env, err := newRawEnv(ctx, filepath.Join(t.TempDir(), "raw.db"), 1, 4)
	if err != nil {
		t.Fatalf("newRawEnv: %v", err)
	}
	defer env.Close()
	for name, op := range map[string]func(context.Context, int) error{"write": env.write, "read": env.read} {
		if d, err := runConcurrently(ctx, 4, 40, op); err != nil || d <= 0 {
			t.Errorf("%s: %v, %v; want a positive duration", name, d, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := runConcurrently(cancelled, 4, 40, env.write); trove.ErrorCode(err) != trove.EUNAVAILABLE || !errors.Is(err, context.Canceled) {
		t.Errorf("writes with a cancelled context: %v, want EUNAVAILABLE wrapping context.Canceled", err)
	}
}
