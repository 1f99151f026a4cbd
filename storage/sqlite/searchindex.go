package sqlite

// The search index off the write path (migration 0017, docs/perf/search.md).
//
// A write no longer touches memories_search (FTS5): triggers on memories
// note each changed memory row in memories_search_queue, in the write's own
// transaction. Applying the queue (applySearchQueue: for each queued row,
// drop its index entry, then index its current row, if it still exists, in
// one INSERT … SELECT, then drop the queue entries) happens in separate
// write transactions on the writer connection, at three moments:
//
//   - Before a search (ReadSearch): a search first opens its snapshot and
//     looks at the queue there. Empty: the index is in step with the
//     memory rows in that snapshot, which holds every Write that returned
//     before the search began; the search runs. Not empty: the committer
//     applies the queue and, while it holds SQLite's write lock with the
//     queue empty, the search opens its snapshot (searchSnapshot), so no
//     commit of any process can fall between the two. Either way the search
//     sees every acknowledged write (read-your-writes), and never an index
//     entry of text that is no longer a live memory's (deleted, or replaced
//     and then redacted): the queue names every row the index is stale for,
//     and the search runs only on a snapshot whose queue is empty.
//   - In a Write: MemorySearch applies the queue first, in the group's
//     transaction.
//   - In the background, by the committer: a chunk when the queue holds
//     Options.SearchIndexLag entries or more (looked at every
//     searchLagCheck Writes; so a search has about that much at most to
//     catch up with while writes go on), and a chunk whenever no Write has
//     come for Options.SearchIndexIdle (so that a quiet database catches up
//     by itself, after a load or the migration's rebuild too).
//
// The queue is durable with the writes it names, so a crash loses no index
// entry: the next catch-up, after Open, applies what was queued. Writes pay
// one small B-tree append per changed memory instead of FTS5's segment
// writes and merges; a search pays for the writes queued since the last
// catch-up.

import (
	"context"
	"database/sql"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

var _ storage.SearchReader = (*DB)(nil)

// DefaultSearchIndexLag is the default of Options.SearchIndexLag.
const DefaultSearchIndexLag = 1024

// DefaultSearchIndexIdle is the default of Options.SearchIndexIdle.
const DefaultSearchIndexIdle = 200 * time.Millisecond

// searchChunk is how many queue entries one background catch-up
// transaction applies at most, which bounds how long it holds the writer
// while writes wait.
const searchChunk = 1024

// searchCatchUpChunk is the same for a search's catch-up (and
// CatchUpSearch), which applies the whole queue in transactions of at most
// this many entries: a queue left by a bulk load (a fork, a restore) does
// not become one huge transaction.
const searchCatchUpChunk = 8192

// applySearchQueue applies the oldest limit queue entries (all when limit
// <= 0) to memories_search, inside the write transaction q is in, and
// deletes them. It returns how many entries it applied.
func applySearchQueue(ctx context.Context, q querier, limit int) (int, error) {
	bound := ""
	args := []any{}
	if limit > 0 {
		var lo sql.NullInt64
		if err := q.QueryRowContext(ctx, `SELECT min(seq) FROM memories_search_queue`).Scan(&lo); err != nil || !lo.Valid {
			return 0, translate(err)
		}
		bound = " WHERE seq < ?"
		args = append(args, lo.Int64+int64(limit))
	}
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT mrowid FROM memories_search_queue`+bound, args...)
	if err != nil {
		return 0, translate(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, translate(err)
		}
		ids = append(ids, id)
	}
	err = rows.Err()
	rows.Close()
	if err != nil || len(ids) == 0 {
		return 0, translate(err)
	}
	for _, id := range ids {
		// FTS5's contentless_delete: deleting a rowid it does not hold (a
		// memory created since the last catch-up) is a no-op.
		if _, err := q.ExecContext(ctx, `DELETE FROM memories_search WHERE rowid = ?`, id); err != nil {
			return 0, translate(err)
		}
	}
	// One statement for all the rows: FTS5 writes them as one segment.
	// What is indexed is the words (migration 0019, searchwords.go), plain
	// and under the store's tag.
	if _, err := q.ExecContext(ctx, `INSERT INTO memories_search (rowid, path, content, store_id, memory_id, path_key, spath, scontent)
		SELECT m.rowid, trove_words(CAST(m.path AS BLOB), NULL), trove_words(CAST(m.content AS BLOB), NULL), m.store_id, m.id, m.path,
			trove_words(CAST(m.path AS BLOB), k.key), trove_words(CAST(m.content AS BLOB), k.key)
		FROM memories m JOIN store_search_keys k ON k.store_id = m.store_id
		WHERE m.rowid IN (SELECT mrowid FROM memories_search_queue`+bound+`) ORDER BY m.rowid`, args...); err != nil {
		return 0, translate(err)
	}
	res, err := q.ExecContext(ctx, `DELETE FROM memories_search_queue`+bound, args...)
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// searchQueued returns how many entries are queued: the queue is emptied
// from its oldest entry (by seq) and SQLite numbers a new row max(seq) + 1,
// so its seqs have no gaps. Two lookups at the B-tree's ends.
func searchQueued(ctx context.Context, q querier) (int64, error) {
	var n sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT (SELECT max(seq) FROM memories_search_queue) - (SELECT min(seq) FROM memories_search_queue) + 1`).Scan(&n); err != nil {
		return 0, translate(err)
	}
	return n.Int64, nil
}

// catchUpChunk applies up to limit of the oldest queue entries in a
// transaction of their own on the writer (committer only). It returns how
// many it applied.
func (db *DB) catchUpChunk(limit int) (int, error) {
	ctx := context.Background()
	c := db.wconn
	if _, err := db.execW("BEGIN IMMEDIATE"); err != nil {
		return 0, translate(err)
	}
	n, err := applySearchQueue(ctx, c, limit)
	if err != nil || n == 0 {
		if _, rerr := c.ExecContext(ctx, "ROLLBACK"); rerr != nil {
			db.log.Debug("sqlite: rollback of a search catch-up", "err", rerr)
		}
		if err == nil {
			db.searchDirty = false
		}
		return 0, translate(err)
	}
	if _, err := db.execW("COMMIT"); err != nil {
		if _, rerr := c.ExecContext(ctx, "ROLLBACK"); rerr != nil {
			db.log.Debug("sqlite: rollback of a search catch-up", "err", rerr)
		}
		return 0, translate(err)
	}
	if n < limit {
		db.searchDirty = false // that was all of it
	}
	return n, nil
}

// backgroundCatchUp is the committer's share: a chunk when the queue has
// reached the lag (after a group) or the database is idle.
func (db *DB) backgroundCatchUp() {
	if db.needMigrate.Load() {
		db.searchDirty = false
		return
	}
	if _, err := db.catchUpChunk(searchChunk); err != nil {
		db.log.Warn("sqlite: search index catch-up failed; the next search retries", "err", err)
		db.searchDirty = false // retried at the next lag or search, not in a loop
	}
}

// searchBacklogNote is the queue length from which opening or migrating a
// database says so in the log (Info): a migration that rebuilds the index
// (0017, 0019) queues every memory, about 2.5 minutes of indexing at 1 M
// memories on 2 cores (docs/perf/scale.md), and the first search waits
// for all of it.
const searchBacklogNote = 10_000

// lookAtSearchQueue returns how many entries are queued (searchQueued)
// and logs, when they are a backlog worth knowing about, what happens to
// them. Opening and migrating a database call it on the writer.
func (db *DB) lookAtSearchQueue(ctx context.Context, q querier) (int64, error) {
	n, err := searchQueued(ctx, q)
	if err == nil && n >= searchBacklogNote {
		db.log.Info("sqlite: the search index has memories to index (after an upgrade or a bulk load); they are indexed while no write comes, and a search waits until they are",
			"queued", n)
	}
	return n, err
}

// searchLagCheck is how many committed Writes pass between two looks at
// the queue's length (a statement): the lag is a bound on a search's
// catch-up, not an exact count.
const searchLagCheck = 32

// noteSearchQueue runs after each group: the queue may have grown (the
// idle catch-up is due), and every searchLagCheck Writes it looks at the
// queue's length and catches up a chunk when it reached the lag.
func (db *DB) noteSearchQueue() {
	if db.needMigrate.Load() {
		return
	}
	db.searchDirty = true
	w := db.writes.Load()
	if db.searchLag < 0 || w-db.searchChecked < searchLagCheck {
		return
	}
	db.searchChecked = w
	n, err := searchQueued(context.Background(), db.wconn)
	if err != nil {
		db.log.Debug("sqlite: reading the search queue", "err", err)
		return
	}
	if n >= int64(db.searchLag) {
		db.backgroundCatchUp()
	}
}

// ReadSearch is storage.SearchReader.ReadSearch: Read on a snapshot whose
// search index reflects every Write that returned before the call (see the
// comment at the top of this file). When the queue is empty in the first
// snapshot taken, the writer is not involved.
func (db *DB) ReadSearch(ctx context.Context, fn func(storage.Tx) error) error {
	return db.withReader(ctx, func(rc *readConn) (healthy bool, err error) {
		bg := context.WithoutCancel(ctx)
		if _, err := rc.exec(bg, "BEGIN"); err != nil {
			return false, translate(err)
		}
		began := true
		defer func() {
			if began {
				_, rerr := rc.exec(context.Background(), "ROLLBACK")
				healthy = rerr == nil
			}
		}()
		queued, err := searchQueued(bg, rc.c) // the first read: it fixes the snapshot
		if err != nil {
			return false, err
		}
		if queued > 0 {
			if _, err := rc.exec(bg, "ROLLBACK"); err != nil {
				began = false
				return false, translate(err)
			}
			began = false
			if err := db.searchSnapshot(ctx, rc); err != nil {
				return false, err
			}
			began = true
		}
		t := &tx{q: rc.c, stmts: rc.stmts, ctxOf: context.WithoutCancel, searchFresh: true}
		defer t.end()
		return false, fn(t)
	})
}

// searchSnapshot has the committer apply the whole queue (in transactions
// of searchCatchUpChunk entries) and then open a read transaction on rc
// while it holds the write lock with the queue empty: rc's snapshot has the index in step with every commit before it,
// this process's and other processes' alike. On success rc is inside that
// transaction (the caller ends it).
func (db *DB) searchSnapshot(ctx context.Context, rc *readConn) error {
	return db.submit(ctx, &writeReq{ctx: ctx, raw: func(_ context.Context, c *sql.Conn) error {
		bg := context.Background()
		for {
			if err := ctx.Err(); err != nil {
				return ctxError(err)
			}
			if _, err := db.execW("BEGIN IMMEDIATE"); err != nil {
				return translate(err)
			}
			n, err := applySearchQueue(bg, c, searchCatchUpChunk)
			if err == nil && n == 0 {
				// The queue is empty and no one can commit: fix rc's
				// snapshot here, then let writers go.
				if _, err = rc.exec(bg, "BEGIN"); err == nil {
					if _, err = searchQueued(bg, rc.c); err != nil {
						_, _ = rc.exec(bg, "ROLLBACK") // the caller replaces the connection on error anyway
					}
				}
				if _, rerr := c.ExecContext(bg, "ROLLBACK"); rerr != nil && err == nil {
					err = translate(rerr)
				}
				if err == nil {
					db.searchDirty = false
				}
				return translate(err)
			}
			if err == nil {
				_, err = db.execW("COMMIT")
			}
			if err != nil {
				if _, rerr := c.ExecContext(bg, "ROLLBACK"); rerr != nil {
					db.log.Debug("sqlite: rollback of a search catch-up", "err", rerr)
				}
				return translate(err)
			}
			// Committed; loop to check, under the lock again, that no other
			// process queued more in between.
		}
	}})
}

// CatchUpSearch applies the whole search queue now, in the committer, and
// returns once it is committed. Searches do this by themselves when they
// must; it is for benchmarks and tools that want the index's cost paid at
// a moment of their choosing.
func (db *DB) CatchUpSearch(ctx context.Context) error {
	if db.needMigrate.Load() {
		return db.errMigrate()
	}
	return db.submit(ctx, &writeReq{ctx: ctx, raw: func(_ context.Context, _ *sql.Conn) error {
		for {
			n, err := db.catchUpChunk(searchCatchUpChunk)
			if err != nil || n == 0 {
				return err
			}
		}
	}})
}

// searchInWrite makes a Write's MemorySearch see the group's own changes:
// the queue is applied inside the group's transaction.
func (t *tx) searchInWrite(ctx context.Context) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	_, err := applySearchQueue(t.ctxOf(ctx), t.q, 0)
	return err
}

// errSearchNotFresh is MemorySearch's answer in a plain Read: there the
// index may lag the memory rows.
var errSearchNotFresh = &trove.Error{Code: trove.EINTERNAL, Message: "internal error",
	Err: errString("sqlite: MemorySearch in a Read: use ReadSearch (storage.ReadSearch), where the search index is in step")}

type errString string

func (e errString) Error() string { return string(e) }
