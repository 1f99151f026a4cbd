package bench

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/sqlite"
)

// rawDB is the yardstick the API is compared with: plain database/sql over
// modernc.org/sqlite (registered by the driver package) on a database of
// the driver's schema, with the driver's writer settings (WAL,
// synchronous=FULL, BEGIN IMMEDIATE) and none of Trove.
//
//   - write is one durable transaction per write: UPDATE a memory row,
//     INSERT a version row, COMMIT (one fsync). The callers share one
//     connection, database/sql queueing them: the fastest way to run one
//     transaction per write on SQLite.
//   - read is a point read of a memory with its content by primary key, on
//     a pool of read-only connections.
//
// Statements run with a context that cannot be cancelled, as the driver's
// do (a cancellable one costs a watcher goroutine per statement).
type rawDB struct {
	w, r    *sql.DB
	storeID string
	memIDs  []string
	seq     atomic.Int64
}

// rawSeed is how many memories the raw baseline spreads its work over.
const rawSeed = 64

// openRaw creates a database in a temporary directory with the driver's
// schema and one store of rawSeed memories (written through the driver),
// then opens it raw with readers read connections.
func openRaw(b *testing.B, readers int) *rawDB {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "raw.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{AutoMigrate: true})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	raw := &rawDB{storeID: trove.NewID(trove.PrefixStore, now)}
	err = db.Write(ctx, func(tx storage.Tx) error {
		if err := tx.StoreInsert(ctx, &trove.Store{ID: raw.storeID, WorkspaceID: "ws", Name: "raw", CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		for i := range rawSeed {
			c := content(i)
			m := &trove.Memory{ID: trove.NewID(trove.PrefixMemory, now), StoreID: raw.storeID, Path: fmt.Sprintf("/raw/m%03d.md", i),
				Content: &c, SizeBytes: len(c), SHA256: sum(c), VersionID: trove.NewID(trove.PrefixVersion, now), CreatedAt: now, UpdatedAt: now}
			if err := tx.MemoryInsert(ctx, m); err != nil {
				return err
			}
			raw.memIDs = append(raw.memIDs, m.ID)
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
	if raw.w, err = sql.Open("sqlite", u+"?_busy_timeout=5000&_journal_mode=WAL&_synchronous=FULL&_foreign_keys=1&_txlock=immediate"); err != nil {
		b.Fatal(err)
	}
	raw.w.SetMaxOpenConns(1)
	if raw.r, err = sql.Open("sqlite", u+"?_busy_timeout=5000&_foreign_keys=1&_query_only=1&_txlock=deferred"); err != nil {
		b.Fatal(err)
	}
	raw.r.SetMaxOpenConns(readers)
	raw.r.SetMaxIdleConns(readers)
	b.Cleanup(func() { raw.w.Close(); raw.r.Close() })
	return raw
}

// write is one durable transaction: update a memory row and append a
// version row, as a memory update does.
func (raw *rawDB) write(i int) error {
	ctx := context.Background()
	seq := int(raw.seq.Add(1))
	memID := raw.memIDs[i%len(raw.memIDs)]
	c := content(seq)
	now := time.Now()
	vid := trove.NewID(trove.PrefixVersion, now)
	tx, err := raw.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE memories SET content = ?, size_bytes = ?, sha256 = ?, version_id = ?, updated_at = ?
		WHERE id = ? AND store_id = ?`, c, len(c), sum(c), vid, now.UnixMicro(), memID, raw.storeID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256,
		created_by_type, created_by_id, created_at, seq) VALUES (?, ?, ?, 'modified', ?, ?, ?, ?, 'api_actor', 'apikey_bench', ?,
		(SELECT coalesce(max(seq), 0) + 1 FROM versions WHERE store_id = ?2))`,
		vid, raw.storeID, memID, "/raw/m.md", c, len(c), sum(c), now.UnixMicro()); err != nil {
		return err
	}
	return tx.Commit()
}

// read is one point read of a memory with its content.
func (raw *rawDB) read(i int) error {
	var id, store, path, c, sha, vid string
	var size, created, updated int64
	err := raw.r.QueryRowContext(context.Background(),
		`SELECT id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at FROM memories WHERE id = ? AND store_id = ?`,
		raw.memIDs[i%len(raw.memIDs)], raw.storeID).Scan(&id, &store, &path, &c, &size, &sha, &vid, &created, &updated)
	if err == nil && id == "" {
		err = errors.New("raw read: empty row")
	}
	return err
}

// content is a ~200-byte memory body that differs per i.
func content(i int) string {
	return fmt.Sprintf("# note %d\n\nThe user prefers short answers, metric units and ISO dates. "+
		"Project Trove stores memories as path-addressed text with immutable versions. (%d)\n", i, i*7919)
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
