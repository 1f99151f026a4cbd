// Package sqlite is Trove's embedded storage driver: a storage.Driver over a
// single SQLite database file, using the pure-Go modernc.org/sqlite.
//
// Durability: the database runs in WAL mode with synchronous=FULL, so a Write
// that returned nil is on disk and survives kill -9 of the process.
//
// Concurrency: all writes go through one writer connection owned by a
// committer goroutine that practises group commit. Write enqueues its
// function; the committer takes everything queued (up to a cap), opens one
// transaction, runs each function, commits once (one fsync for the whole
// group) and then releases every waiter. A function's error rolls back its
// own changes only and is returned to its caller alone: a group first runs
// without savepoints and, when a function fails, runs again with one
// SAVEPOINT per function (see runBatch).
// Reads use a separate pool of query_only connections, each Read one WAL
// snapshot, and never wait for the writer.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
)

// DefaultMaxBatch is the default cap on how many Writes one group commit
// takes.
const DefaultMaxBatch = 128

// DefaultBusyTimeout is how long a connection waits by default for a lock
// another process holds before failing with SQLITE_BUSY (EUNAVAILABLE).
const DefaultBusyTimeout = 10 * time.Second

// Options configures Open.
type Options struct {
	// AutoMigrate applies missing migrations during Open. When false, Open
	// still succeeds on an older schema (so that `trove migrate` can call
	// Migrate), but Read and Write return EUNAVAILABLE until Migrate ran.
	AutoMigrate bool
	// MaxBatch caps how many Writes share one commit; 0 means
	// DefaultMaxBatch, 1 disables group commit.
	MaxBatch int
	// ReadConns is the size of the read connection pool; 0 means
	// max(4, GOMAXPROCS).
	ReadConns int
	// BusyTimeout is how long to wait for a lock held by another process
	// (another trove binary on the same file, a backup) before a Write or
	// Read fails with EUNAVAILABLE; 0 means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Logger receives panics recovered from Write functions and other
	// internal detail; nil means slog.Default().
	Logger *slog.Logger
	// NotifyPoll is how often a DB with NotifyEvents callbacks checks for
	// commits made by other connections to the file; 0 means
	// DefaultNotifyPoll.
	NotifyPoll time.Duration
	// SearchIndexLag is how many changed memories may wait in the search
	// queue while writes go on before the committer indexes some of them
	// between two groups (searchindex.go); 0 means DefaultSearchIndexLag,
	// < 0 never (searches and idle moments still catch up).
	SearchIndexLag int
	// SearchIndexIdle is how long the committer waits without a Write
	// before it indexes queued memories; 0 means DefaultSearchIndexIdle,
	// < 0 never.
	SearchIndexIdle time.Duration
}

// DB is an open SQLite database. It implements storage.Driver and
// storage.Migrator. It is safe for concurrent use.
type DB struct {
	path string
	log  *slog.Logger
	wdb  *sql.DB // exactly one connection, owned by the committer
	rdb  *sql.DB // read-only connections; see readers
	// readers holds the idle read connections (ReadConns of them); Read
	// takes one for the whole transaction. It is closed by Close.
	readers chan *readConn
	wconn   *sql.Conn
	wstmts  *stmtCache // statements prepared on wconn, used by the committer only
	reqs    chan *writeReq
	done    chan struct{} // closed when the committer has exited
	max     int
	closed  bool
	mu      sync.RWMutex // guards closed and sends on reqs
	close   sync.Once

	// stores is the committer's cache of the stores StoreLock read in the
	// current group; it owns its invalidation (see storeCache).
	stores *storeCache

	// needMigrate is set while the schema is older than the driver's.
	needMigrate atomic.Bool
	// lastFailed is set when a fn of the last group failed (committer
	// only); see runBatch.
	lastFailed bool

	// notify delivers NotifyEvents' callbacks (notify.go).
	notify     notifier
	notifyPoll time.Duration

	// The search queue (searchindex.go), committer only: searchDirty is
	// set when entries may be queued, searchChecked is db.writes when the
	// queue's length was last read; searchLag and searchIdle the options.
	searchDirty   bool
	searchChecked int64
	searchLag     int
	searchIdle    time.Duration

	// Counters for tests and metrics.
	batches atomic.Int64
	writes  atomic.Int64
}

var _ storage.Driver = (*DB)(nil)
var _ storage.Migrator = (*DB)(nil)

// writeReq is one queued Write, or one raw job on the writer connection
// (migrations) when raw is set.
type writeReq struct {
	ctx  context.Context
	fn   func(storage.Tx) error
	raw  func(ctx context.Context, c *sql.Conn) error
	err  error
	done chan struct{}
}

// registerFunctions registers, once per process, the Go SQL functions the
// schema's statements call: trove_chain (chain.go) and trove_words
// (searchwords.go).
var registerFunctions = sync.OnceValue(func() error {
	if err := sqlite.RegisterDeterministicScalarFunction("trove_chain", 3, chainFunc); err != nil {
		return err
	}
	return sqlite.RegisterDeterministicScalarFunction("trove_words", 2, wordsFunc)
})

// Open opens (creating if needed) the SQLite database at path and starts its
// committer. It returns EINVALID for an empty path, EUNAVAILABLE when the
// file cannot be opened, and EINVALID when the database's schema is newer
// than this build knows (an older binary must not write to it). With
// opts.AutoMigrate it applies missing migrations before returning.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" {
		return nil, trove.Errorf(trove.EINVALID, "sqlite: empty database path")
	}
	if _, err := knownVersion(); err != nil {
		return nil, err
	}
	if err := registerFunctions(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, trove.Errorf(trove.EINVALID, "sqlite: bad database path %q", path)
	}
	db := &DB{
		path:   abs,
		log:    opts.Logger,
		max:    opts.MaxBatch,
		reqs:   make(chan *writeReq, 1024),
		stores: newStoreCache(),
		done:   make(chan struct{}),
		notify: notifier{quit: make(chan struct{}), done: make(chan struct{}), touched: map[string]struct{}{}},

		notifyPoll: opts.NotifyPoll,
		searchLag:  opts.SearchIndexLag,
		searchIdle: opts.SearchIndexIdle,
	}
	if db.searchLag == 0 {
		db.searchLag = DefaultSearchIndexLag
	}
	if db.searchIdle == 0 {
		db.searchIdle = DefaultSearchIndexIdle
	}
	if db.notifyPoll <= 0 {
		db.notifyPoll = DefaultNotifyPoll
	}
	if db.log == nil {
		db.log = slog.Default()
	}
	if db.max <= 0 {
		db.max = DefaultMaxBatch
	}
	readConns := opts.ReadConns
	if readConns <= 0 {
		readConns = max(4, runtime.GOMAXPROCS(0))
	}

	// The writer is opened first: it switches the file to WAL, which readers
	// (query_only) could not do.
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	busyParam := fmt.Sprintf("_busy_timeout=%d", busy.Milliseconds())
	db.wdb, err = sql.Open("sqlite", dsn(abs, append([]string{busyParam}, writerParams...)))
	if err != nil {
		return nil, unavailable("open database", err)
	}
	db.wdb.SetMaxOpenConns(1)
	db.wdb.SetMaxIdleConns(1)
	db.wdb.SetConnMaxLifetime(0)
	db.wdb.SetConnMaxIdleTime(0)
	db.wconn, err = db.wdb.Conn(ctx)
	if err != nil {
		db.wdb.Close()
		return nil, unavailable("open database "+abs, err)
	}
	db.rdb, err = sql.Open("sqlite", dsn(abs, append([]string{busyParam}, readerParams...)))
	if err != nil {
		db.wconn.Close()
		db.wdb.Close()
		return nil, unavailable("open database", err)
	}
	// One connection more than the readers, for SchemaVersion.
	db.rdb.SetMaxOpenConns(readConns + 1)
	db.rdb.SetMaxIdleConns(readConns + 1)
	db.readers = make(chan *readConn, readConns)
	for range readConns {
		db.readers <- &readConn{}
	}
	db.rdb.SetConnMaxIdleTime(0)
	db.rdb.SetConnMaxLifetime(0)

	fail := func(err error) (*DB, error) {
		db.wconn.Close()
		db.wdb.Close()
		db.rdb.Close()
		return nil, err
	}
	have, known, err := db.schemaVersion(ctx, db.wconn)
	if err != nil {
		return fail(err)
	}
	if have > known {
		return fail(trove.Errorf(trove.EINVALID,
			"sqlite: database %s has schema version %d, newer than the %d this build of trove knows; upgrade trove",
			abs, have, known))
	}
	if have < known {
		if opts.AutoMigrate {
			if err := migrate(ctx, db.wconn); err != nil {
				return fail(err)
			}
		} else {
			db.needMigrate.Store(true)
		}
	}
	db.wstmts = newStmtCache(func(q string) (*sql.Stmt, error) {
		return db.wconn.PrepareContext(context.Background(), q)
	})
	go db.commitLoop()
	return db, nil
}

// Path returns the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// writerParams are the DSN parameters of the writer connection.
//
// Neither these nor readerParams set cache_size or mmap_size, on purpose:
// SQLite's defaults (a 2,000 KiB page cache per connection, no memory map)
// were measured against a 64 MiB cache and a 256 MiB and 2 GiB map on the
// 6.5 GB database of the hosted limits (docs/perf/scale.md, "SQLite's page
// cache and mmap at 100 %"). In WAL mode a read connection drops its whole
// page cache, and with mmap_size its map of the file, at its first
// transaction after any commit, so on a server that also takes writes a
// bigger cache buys nothing and a map made the first read after a write
// 1.4 to 1.9 times as dear (the file mapped again, its pages faulted back
// in). This build of SQLite also maps at most the first 2 GiB of a file
// (SQLITE_MAX_MMAP_SIZE), and an I/O error under a map is a SIGBUS rather
// than an error. A 64 MiB cache on the writer made no measurable
// difference to writes. What a call at the hosted limits pays for is the
// OS's page cache: a page it does not hold is read from the disk whatever
// these settings are.
var writerParams = []string{
	"_journal_mode=WAL",
	"_synchronous=FULL",
	"_foreign_keys=1",
	"_txlock=immediate",
	"_pragma=temp_store(memory)",
}

// readerParams are the DSN parameters of the read pool.
var readerParams = []string{
	"_foreign_keys=1",
	"_query_only=1",
	"_txlock=deferred",
}

// dsn builds a file: URI for path with the given driver parameters.
func dsn(path string, params []string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	s := u.String()
	if len(params) > 0 {
		s += "?"
		for i, p := range params {
			if i > 0 {
				s += "&"
			}
			s += p
		}
	}
	return s
}

// errClosed is returned by Read and Write after Close.
var errClosed = &trove.Error{Code: trove.EUNAVAILABLE, Message: "the database is closed"}

func (db *DB) errMigrate() error {
	return trove.Errorf(trove.EUNAVAILABLE,
		"the database schema at %s is older than this build of trove needs; run `trove migrate`", db.path)
}

// Read runs fn in a read-only transaction on one WAL snapshot (BEGIN …
// ROLLBACK). fn's error is returned as is; database errors are translated
// (EUNAVAILABLE for a closed or unreachable database). Once ctx is done,
// the Tx's next statement fails with EUNAVAILABLE; a statement already
// running finishes. A panic in fn ends the transaction and goes on up.
func (db *DB) Read(ctx context.Context, fn func(storage.Tx) error) error {
	return db.withReader(ctx, func(rc *readConn) (healthy bool, err error) {
		// Statements run with a context that cannot be cancelled: with a
		// cancellable one, modernc.org/sqlite and database/sql each start
		// a watcher goroutine per statement, which costs more than a point
		// read. ctx is still checked before every statement (tx.check),
		// and every statement the driver runs is bounded (point reads,
		// LIMITed lists).
		if _, err := rc.exec(context.WithoutCancel(ctx), "BEGIN"); err != nil {
			return false, translate(err)
		}
		t := &tx{q: rc.c, stmts: rc.stmts, ctxOf: context.WithoutCancel}
		defer func() {
			t.end()
			// A read-only transaction has nothing to commit; ROLLBACK just
			// ends the snapshot (also when fn panics). If it fails, the
			// connection is replaced rather than reused in an unknown state.
			_, rerr := rc.exec(context.Background(), "ROLLBACK")
			healthy = rerr == nil
		}()
		return false, fn(t)
	})
}

// MemoryGet is storage.Driver.MemoryGet: one statement in autocommit mode,
// which SQLite runs on a snapshot of its own, so it needs no BEGIN and
// ROLLBACK.
func (db *DB) MemoryGet(ctx context.Context, storeID, id string, withContent bool) (*trove.Memory, error) {
	var m *trove.Memory
	err := db.withReader(ctx, func(rc *readConn) (bool, error) {
		t := &tx{q: rc.c, stmts: rc.stmts, ctxOf: context.WithoutCancel}
		defer t.end()
		var err error
		m, err = t.MemoryGet(ctx, storeID, id, withContent)
		return true, err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// withReader takes an idle connection of the read pool (waiting while ctx
// allows), runs f on it and gives it back. f reports whether the connection
// is fit for reuse; when it is not, or f panics (a statement may have been
// left open), the connection is closed and the next user opens a new one.
func (db *DB) withReader(ctx context.Context, f func(rc *readConn) (healthy bool, err error)) error {
	db.mu.RLock()
	closed := db.closed
	db.mu.RUnlock()
	if closed {
		return errClosed
	}
	if db.needMigrate.Load() {
		return db.errMigrate()
	}
	if err := ctx.Err(); err != nil {
		return ctxError(err)
	}
	var rc *readConn
	var ok bool
	select {
	case rc, ok = <-db.readers: // an idle connection: no need to watch ctx (its Done channel costs an allocation)
	default:
		select {
		case rc, ok = <-db.readers:
		case <-ctx.Done():
			return ctxError(ctx.Err())
		}
	}
	if !ok {
		return errClosed
	}
	healthy := false
	defer func() {
		if !healthy {
			rc.reset(db.log)
		}
		db.readers <- rc
	}()
	if err := rc.open(ctx, db.rdb); err != nil {
		return err
	}
	var err error
	healthy, err = f(rc)
	return err
}

// readConn is one connection of the read pool with its statement cache.
// Each is used by one Read at a time; db.readers holds the idle ones.
type readConn struct {
	c     *sql.Conn // nil until opened, or after a failure
	stmts *stmtCache
}

// open connects rc if it is not connected.
func (rc *readConn) open(ctx context.Context, rdb *sql.DB) error {
	if rc.c != nil {
		return nil
	}
	c, err := rdb.Conn(ctx)
	if err != nil {
		return translate(err)
	}
	rc.c = c
	rc.stmts = newStmtCache(func(q string) (*sql.Stmt, error) { return c.PrepareContext(context.Background(), q) })
	return nil
}

// exec runs a cached transaction-control statement.
func (rc *readConn) exec(ctx context.Context, query string) (sql.Result, error) {
	st, err := rc.stmts.get(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx)
}

// reset closes rc's connection; the next Read opens a new one.
func (rc *readConn) reset(log *slog.Logger) {
	if rc.c == nil {
		return
	}
	if err := errors.Join(rc.stmts.close(), rc.c.Close()); err != nil {
		log.Debug("sqlite: closing a read connection", "err", err)
	}
	rc.c, rc.stmts = nil, nil
}

// Write runs fn in a read-write transaction and returns nil only once fn's
// changes are durable. Concurrent Writes are grouped into one transaction
// and one commit; each fn runs in its own savepoint, so an error from fn
// rolls back fn's changes only and is returned, unchanged, to this caller
// alone. A panic in fn is recovered and returned as EINTERNAL. If ctx is done
// before fn starts, fn is not run and Write returns EUNAVAILABLE wrapping
// ctx.Err(). Once fn has started Write waits for the commit whatever ctx
// does, so that its result is never ambiguous. Write must not be called from
// inside fn (it would wait for itself). After Close it returns EUNAVAILABLE.
func (db *DB) Write(ctx context.Context, fn func(storage.Tx) error) error {
	if db.needMigrate.Load() {
		return db.errMigrate()
	}
	return db.submit(ctx, &writeReq{ctx: ctx, fn: fn})
}

// submit queues req and waits for the committer to finish it.
func (db *DB) submit(ctx context.Context, req *writeReq) error {
	if err := ctx.Err(); err != nil {
		return ctxError(err)
	}
	req.done = make(chan struct{})
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return errClosed
	}
	select {
	case db.reqs <- req:
	case <-ctx.Done():
		db.mu.RUnlock()
		return ctxError(ctx.Err())
	}
	db.mu.RUnlock()
	<-req.done
	return req.err
}

// Close stops accepting Reads and Writes, waits until every queued Write
// has been committed and every Read in flight has returned, and closes the
// database. Later calls return nil.
func (db *DB) Close() error {
	var err error
	db.close.Do(func() {
		db.notify.mu.Lock()
		close(db.notify.quit)
		started := db.notify.started
		db.notify.mu.Unlock()
		if started {
			<-db.notify.done
		}
		db.mu.Lock()
		db.closed = true
		close(db.reqs)
		db.mu.Unlock()
		<-db.done
		// Wait for the Reads in flight: take every read connection back.
		for range cap(db.readers) {
			rc := <-db.readers
			rc.reset(db.log)
		}
		close(db.readers)
		err = errors.Join(db.wstmts.close(), db.wconn.Close(), db.wdb.Close(), db.rdb.Close())
		if err != nil {
			err = unavailable("close database", err)
		}
	})
	return err
}

// commitLoop is the committer: it owns the writer connection and runs queued
// Writes in groups until reqs is closed and drained.
func (db *DB) commitLoop() {
	defer close(db.done)
	batch := make([]*writeReq, 0, db.max)
	if !db.needMigrate.Load() { // entries a crash left queued
		if n, err := db.lookAtSearchQueue(context.Background(), db.wconn); err == nil {
			db.searchDirty = n > 0
		}
	}
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	for {
		// No runtime.Gosched here to let released writers queue up first:
		// it puts the committer at the back of the global run queue, and
		// with the cores busy serving HTTP that wait cost more throughput
		// than the larger groups gained.
		var req *writeReq
		var ok bool
		if db.searchDirty && db.searchIdle > 0 {
			idle.Reset(db.searchIdle)
			select {
			case req, ok = <-db.reqs:
				idle.Stop()
			case <-idle.C:
				db.backgroundCatchUp()
				continue
			}
		} else {
			req, ok = <-db.reqs
		}
		if !ok {
			return
		}
		if req.raw != nil {
			db.runRaw(req)
			continue
		}
		batch = append(batch[:0], req)
		var raw *writeReq
		open := true
	fill:
		for len(batch) < db.max {
			select {
			case r, ok := <-db.reqs:
				if !ok {
					open = false
					break fill
				}
				if r.raw != nil {
					raw = r
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		db.runBatch(batch)
		db.deliverTouched()
		db.noteSearchQueue()
		clear(batch)
		if raw != nil {
			db.runRaw(raw)
		}
		if !open {
			return
		}
	}
}

// runRaw runs a job that needs the writer connection to itself. A job may
// queue memories for the search index (a load, a migration that rebuilds
// it), so the idle catch-up is due after it, unless the job emptied the
// queue itself (the search catch-ups clear searchDirty).
func (db *DB) runRaw(req *writeReq) {
	if err := req.ctx.Err(); err != nil {
		req.err = ctxError(err)
	} else {
		db.searchDirty = true
		req.err = req.raw(context.WithoutCancel(req.ctx), db.wconn)
	}
	close(req.done)
}

// runBatch runs one group and releases every waiter.
//
// Optimistically, every fn runs straight in the group's transaction: no
// savepoints, which saves two statements and the savepoint journal's page
// copies per Write. If one fn fails, the transaction is rolled back and the
// group runs again with a savepoint per fn (runSavepoints), so a failing fn
// still rolls back only its own changes; the Driver contract allows running
// fn again. A lone fn that fails needs no second run: its error is the
// result and nothing was committed. After a group in which a fn failed, the
// next group goes straight to savepoints, so a run of failing Writes does
// not cost every group twice.
func (db *DB) runBatch(batch []*writeReq) {
	defer func() {
		for _, r := range batch {
			close(r.done)
		}
	}()
	if !db.lastFailed && db.runDirect(batch) {
		return
	}
	db.lastFailed = db.runSavepoints(batch)
}

// runDirect runs the group without savepoints. It returns false, with
// nothing committed and every r.err cleared, when the group must run again
// with savepoints; true when the group is done (committed, or failed as a
// whole, or its lone fn failed).
func (db *DB) runDirect(batch []*writeReq) (done bool) {
	c := db.wconn
	if !db.beginGroup(batch) {
		return true
	}
	ran := 0
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = ctxError(err)
			continue
		}
		t := &tx{q: c, stmts: db.wstmts, ctxOf: context.WithoutCancel, stores: db.stores, touched: db.notify.touched}
		r.err = db.call(r.fn, t)
		t.end()
		if r.err == nil {
			ran++
			continue
		}
		if _, err := c.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			db.log.Debug("sqlite: rollback of an optimistic group", "err", err)
		}
		db.lastFailed = true
		if len(batch) == 1 {
			return true
		}
		for _, r := range batch {
			r.err = nil
		}
		db.batches.Add(-1) // runSavepoints counts the group
		return false
	}
	if ran == 0 {
		if _, err := c.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			db.log.Error("sqlite: rollback of an empty group failed", "err", err)
		}
		return true
	}
	if _, err := db.execW("COMMIT"); err != nil {
		db.abort(batch, translate(err))
		return true
	}
	db.writes.Add(int64(ran))
	return true
}

// beginGroup opens a group's transaction (BEGIN IMMEDIATE) and counts the
// group. When that fails, every request of the group gets the error and it
// returns false.
func (db *DB) beginGroup(batch []*writeReq) bool {
	db.stores.reset()
	if _, err := db.execW("BEGIN IMMEDIATE"); err != nil {
		err = translate(err)
		for _, r := range batch {
			r.err = err
		}
		return false
	}
	db.batches.Add(1)
	return true
}

// runSavepoints runs one group: BEGIN IMMEDIATE, one savepoint per request,
// COMMIT. It reports whether a fn failed.
func (db *DB) runSavepoints(batch []*writeReq) (fnFailed bool) {
	// Statements run with a context that is never cancelled: an interrupt
	// in the middle of a statement can roll back the whole shared
	// transaction, not just one caller's savepoint.
	bg := context.Background()
	c := db.wconn
	if !db.beginGroup(batch) {
		return false
	}
	ran := 0
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = ctxError(err)
			continue
		}
		if _, err := db.execW("SAVEPOINT w"); err != nil {
			db.abort(batch, translate(err))
			return fnFailed
		}
		t := &tx{q: c, stmts: db.wstmts, ctxOf: context.WithoutCancel, stores: db.stores, touched: db.notify.touched}
		r.err = db.call(r.fn, t)
		t.end()
		if r.err != nil {
			fnFailed = true
			// ROLLBACK TO keeps the savepoint open; RELEASE pops it. If the
			// transaction itself is gone (SQLite rolls it back on some
			// errors), ROLLBACK TO fails and the whole group must fail.
			if _, err := db.execW("ROLLBACK TO w"); err != nil {
				db.abort(batch, translate(err))
				return fnFailed
			}
		} else {
			ran++
		}
		if _, err := db.execW("RELEASE w"); err != nil {
			db.abort(batch, translate(err))
			return fnFailed
		}
	}
	if ran == 0 {
		if _, err := c.ExecContext(bg, "ROLLBACK"); err != nil {
			db.log.Error("sqlite: rollback of an empty group failed", "err", err)
		}
		return fnFailed
	}
	if _, err := db.execW("COMMIT"); err != nil {
		db.abort(batch, translate(err))
		return fnFailed
	}
	db.writes.Add(int64(ran))
	return fnFailed
}

// execW runs a transaction-control statement on the writer connection
// through the statement cache.
func (db *DB) execW(query string) (sql.Result, error) {
	st, err := db.wstmts.get(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(context.Background())
}

// abort rolls back the group's transaction and fails every request that has
// not failed on its own: none of the group's changes were committed.
func (db *DB) abort(batch []*writeReq, err error) {
	if _, rerr := db.wconn.ExecContext(context.Background(), "ROLLBACK"); rerr != nil {
		db.log.Debug("sqlite: rollback after a failed group", "err", rerr)
	}
	db.log.Error("sqlite: group commit failed", "err", err, "writes", len(batch))
	for _, r := range batch {
		if r.err == nil {
			r.err = err
		}
	}
}

// call runs fn, turning a panic into an EINTERNAL error for its caller.
// When fn fails its changes will be rolled back, so the store cache forgets
// what it read.
func (db *DB) call(fn func(storage.Tx) error, t *tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			db.log.Error("sqlite: panic in Write", "panic", p, "stack", string(debug.Stack()))
			err = &trove.Error{Code: trove.EINTERNAL, Message: "internal error", Err: fmt.Errorf("panic: %v", p)}
		}
		if err != nil {
			db.stores.reset()
		}
	}()
	return fn(t)
}

// Stats reports how many group commits and how many committed Writes the
// database has done since Open. Writes/Batches is the mean group size.
func (db *DB) Stats() (batches, writes int64) {
	return db.batches.Load(), db.writes.Load()
}
