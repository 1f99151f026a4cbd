package postgres

// The search indexer (migration 0018, docs/perf/search.md): a write only
// queues the changed memory's ID (a trigger on memories); this node's
// indexer moves queued memories into memories_fts outside the writes'
// transactions. Searches need not wait for it: MemorySearch computes the
// vectors of queued memories itself (searchQueued), so the indexer
// only keeps that work small.
//
// The indexer is one goroutine per DB. The first Write after a catch-up
// wakes it; it waits SearchIndexDelay (or until SearchIndexLag Writes have
// come) so that writes gather, then applies the whole queue in chunks of
// searchChunk, each a transaction of its own holding an advisory lock that
// serializes catch-ups across nodes: two catch-ups of the same memory in
// parallel could otherwise commit an older vector after a newer one.
// Under that lock a chunk deletes its queue entries, deletes the memories'
// vectors and inserts the vectors of the memories' current rows (READ
// COMMITTED: each statement sees every commit before it), so a memory
// changed meanwhile is queued again and done again by the next chunk.

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/trovehq/trove/storage"
)

// Defaults of Options.SearchIndexDelay and Options.SearchIndexLag.
const (
	DefaultSearchIndexDelay = 100 * time.Millisecond
	DefaultSearchIndexLag   = 256
)

// searchChunk bounds one catch-up transaction.
const searchChunk = 1000

// searchLockKey is the advisory lock of catch-ups (any fixed number;
// advisory locks are per database, so it is shared by every schema of it,
// which only serializes their catch-ups too).
const searchLockKey = 0x74726f7665736561 // "trovesea"

// searchIndexer is a DB's indexer.
type searchIndexer struct {
	delay time.Duration // < 0: never runs by itself
	lag   int64
	count atomic.Int64  // Writes since the indexer last started a catch-up
	wake  chan struct{} // 1-buffered: the first Write since then
	full  chan struct{} // 1-buffered: lag Writes since then
	stop  chan struct{}
	done  chan struct{}
}

// startSearchIndexer starts the indexer (unless delay < 0); it runs until
// stopSearchIndexer.
func (db *DB) startSearchIndexer(delay time.Duration, lag int) {
	if delay == 0 {
		delay = DefaultSearchIndexDelay
	}
	if lag <= 0 {
		lag = DefaultSearchIndexLag
	}
	ix := &db.search
	ix.delay, ix.lag = delay, int64(lag)
	ix.wake, ix.full = make(chan struct{}, 1), make(chan struct{}, 1)
	ix.stop, ix.done = make(chan struct{}), make(chan struct{})
	if delay < 0 {
		close(ix.done)
		return
	}
	ix.wake <- struct{}{} // what a crash or another node left queued
	go db.runSearchIndexer()
}

// stopSearchIndexer stops the indexer and waits for it; a catch-up in
// flight is cancelled (its transaction rolls back; the queue keeps it).
func (db *DB) stopSearchIndexer() {
	if db.search.stop == nil {
		return
	}
	select {
	case <-db.search.stop:
	default:
		close(db.search.stop)
	}
	<-db.search.done
}

// noteWrite tells the indexer that a Write committed (it may have queued
// memories).
func (db *DB) noteWrite() {
	ix := &db.search
	if ix.wake == nil || ix.delay < 0 {
		return
	}
	switch ix.count.Add(1) {
	case 1:
		select {
		case ix.wake <- struct{}{}:
		default:
		}
	case ix.lag:
		select {
		case ix.full <- struct{}{}:
		default:
		}
	}
}

func (db *DB) runSearchIndexer() {
	ix := &db.search
	defer close(ix.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-ix.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-ix.stop:
			return
		case <-ix.wake:
		}
		t.Reset(ix.delay)
		select {
		case <-ix.stop:
			return
		case <-t.C:
		case <-ix.full:
			t.Stop()
		}
		ix.count.Store(0)
		if err := db.CatchUpSearch(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("postgres: search index catch-up failed; the next write retries", "err", err)
		}
	}
}

// CatchUpSearch applies the whole search queue to memories_fts now, in
// transactions of searchChunk memories, and returns once they committed.
// The indexer does this by itself; it is for benchmarks and tools.
func (db *DB) CatchUpSearch(ctx context.Context) error {
	for {
		n := 0
		bctx, cancel := db.bound(ctx)
		err := db.write(bctx, func(stx storage.Tx) error {
			t := stx.(*tx)
			if _, err := t.exec(bctx, `SELECT pg_advisory_xact_lock($1)`, int64(searchLockKey)); err != nil {
				return translate(err)
			}
			rows, err := t.query(bctx, `DELETE FROM memories_search_queue WHERE seq IN (
				SELECT seq FROM memories_search_queue ORDER BY seq LIMIT $1) RETURNING memory_id`, searchChunk)
			if err != nil {
				return translate(err)
			}
			seen := map[string]bool{}
			var ids []string
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return translate(err)
				}
				if !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return translate(err)
			}
			n = len(seen)
			if n == 0 {
				return nil
			}
			if _, err := t.exec(bctx, `DELETE FROM memories_fts WHERE memory_id = ANY($1)`, ids); err != nil {
				return translate(err)
			}
			_, err = t.exec(bctx, `INSERT INTO memories_fts (memory_id, store_id, search)
				SELECT id, store_id, trove_search_vector(path, content) FROM memories WHERE id = ANY($1)`, ids)
			return translate(err)
		})
		cancel()
		if err != nil || n == 0 {
			return err
		}
	}
}
