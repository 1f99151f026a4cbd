// Package postgres is Trove's PostgreSQL storage driver: storage.Driver and
// storage.Migrator over a pgx/v5 connection pool, with its own SQL, embedded
// numbered migrations and one error translator.
//
// Several stateless trove nodes may share one database. Per-store invariants
// hold across them because core takes Tx.StoreLock (SELECT … FOR UPDATE)
// before every memory mutation, and Write runs at READ COMMITTED so that every
// statement after the lock sees what the previous lock holder committed.
//
// The driver fails fast when the database is unreachable: connecting and
// acquiring a pooled connection are bounded by Options.ConnectTimeout, and
// every database failure of that kind is reported as trove.EUNAVAILABLE (a
// retryable 503 at the HTTP edge). The pool replaces dead connections by
// itself (idle connections are pinged before reuse), so a restarted or
// briefly unreachable Postgres needs no reopen.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// Options configure Open. The zero value is usable.
type Options struct {
	// AutoMigrate applies missing migrations on Open. Without it, Open
	// refuses a database whose schema is older than the driver's.
	AutoMigrate bool
	// MaxConns caps the pool. 0 means the URL's pool_max_conns, else
	// DefaultMaxConns.
	MaxConns int32
	// ConnectTimeout bounds establishing a connection and waiting for a free
	// pooled one. 0 means the URL's connect_timeout (or PGCONNECT_TIMEOUT),
	// else DefaultConnectTimeout. Past it a call fails with EUNAVAILABLE.
	ConnectTimeout time.Duration
	// StatementTimeout is the server-side statement_timeout of every
	// connection: a statement running longer is cancelled (SQLSTATE 57014,
	// EUNAVAILABLE). 0 means the URL's statement_timeout, else
	// DefaultStatementTimeout; negative means none.
	StatementTimeout time.Duration
	// LockTimeout is the server-side lock_timeout: a statement waiting
	// longer for a lock (another transaction's store lock) fails with
	// SQLSTATE 55P03, EUNAVAILABLE. 0 means the URL's lock_timeout, else
	// DefaultLockTimeout; negative means none.
	LockTimeout time.Duration
	// IdleInTxTimeout is the server-side
	// idle_in_transaction_session_timeout: a backend whose transaction
	// waits longer than this for its client's next statement is ended by
	// the server, its transaction rolled back and its locks released, so a
	// node whose connection went silent cannot hold a store's lock. It also
	// settles a COMMIT whose acknowledgement is lost: Write answers only
	// once the server has either committed or ended the transaction (see
	// Write). 0 means DefaultIdleInTxTimeout; negative means none (and then
	// a COMMIT in doubt may still land after Write returned).
	IdleInTxTimeout time.Duration
	// TCPTimeout bounds how long a connection whose peer went silent (a
	// partition, a dead middlebox: no reset) stays open, on both ends:
	// TCP keepalives start after TCPTimeout/2 idle and probe every
	// TCPTimeout/6 (three probes), and TCP_USER_TIMEOUT (Linux) drops a
	// connection whose sent data stays unacknowledged for TCPTimeout. The
	// server gets the same values (tcp_keepalives_idle, …_interval,
	// …_count, tcp_user_timeout). 0 means DefaultTCPTimeout; negative
	// leaves the operating system's settings.
	TCPTimeout time.Duration
	// OpTimeout bounds each Read, Write and MemoryGet whose context has no
	// earlier deadline (background jobs, the change feed's reads): past it
	// the call is abandoned, its connection closed and EUNAVAILABLE
	// returned. 0 means DefaultOpTimeout; negative means none.
	OpTimeout time.Duration
	// Schema, when not "", is the search_path of every connection: all of
	// Trove's tables live in it. Used to isolate tests and tenants. The
	// schema is created by Migrate when missing.
	Schema string
	// SearchIndexDelay is how long the search indexer lets writes gather
	// after the first one before it indexes what they queued
	// (search_index.go); 0 means DefaultSearchIndexDelay, < 0 never (the
	// queue then waits for CatchUpSearch; searches stay exact).
	SearchIndexDelay time.Duration
	// SearchIndexLag is how many Writes make the indexer start before the
	// delay is over; 0 means DefaultSearchIndexLag.
	SearchIndexLag int
}

// Pool defaults, used when neither Options nor the URL sets the value.
const (
	DefaultMaxConns       = 8
	DefaultConnectTimeout = 5 * time.Second
	// defaultHealthCheckPeriod is how often idle pooled connections are
	// checked (the URL's pool_health_check_period wins).
	defaultHealthCheckPeriod = 10 * time.Second

	// Server-side guards and time bounds (see Options).
	DefaultStatementTimeout = 20 * time.Second
	DefaultLockTimeout      = 10 * time.Second
	DefaultIdleInTxTimeout  = 5 * time.Second
	DefaultTCPTimeout       = 20 * time.Second
	DefaultOpTimeout        = 30 * time.Second
)

// settleMargin is added to IdleInTxTimeout when Write waits for a COMMIT in
// doubt to be settled on the server: room for the server's timer.
const settleMargin = time.Second

// DB is an open PostgreSQL database. It implements storage.Driver and
// storage.Migrator and is safe for concurrent use.
type DB struct {
	pool           *pgxpool.Pool
	schema         string
	acquireTimeout time.Duration
	opTimeout      time.Duration // 0: none
	tcpTimeout     time.Duration // Options.TCPTimeout resolved; 0: off
	// settle is how long after sending a COMMIT the server has certainly
	// either committed or ended the transaction (IdleInTxTimeout plus
	// settleMargin); 0 when IdleInTxTimeout is off.
	settle time.Duration
	listen listener // NotifyVersions' connection (listen.go)
	search searchIndexer
	gates  storeGates // where this process's writers of one store queue (storegate.go)
}

var (
	_ storage.Driver   = (*DB)(nil)
	_ storage.Migrator = (*DB)(nil)

	_ storage.VersionNotifier = (*DB)(nil)
)

// maxAttempts bounds how many times Write runs fn when PostgreSQL reports a
// serialization failure or deadlock, and how many times Read and Write retry
// a BEGIN that failed on a dead pooled connection.
const maxAttempts = 5

// Open connects to the database at url (a postgres:// URL or a key=value
// DSN; unknown URL parameters such as search_path become session settings)
// and checks its schema version. With opts.AutoMigrate it migrates first.
//
// Pool settings take, in order: a non-zero Options field; the URL's
// setting (pool_max_conns; connect_timeout, or PGCONNECT_TIMEOUT, where 0
// counts as unset; pool_ping_timeout and pool_health_check_period); the
// defaults (DefaultMaxConns, DefaultConnectTimeout, a ping timeout equal to
// the connect timeout, a 10 s health check).
//
// It returns EUNAVAILABLE when the database cannot be reached within
// ConnectTimeout, EINVALID for a malformed url, and an error when the schema
// is newer than this driver knows or (without AutoMigrate) older.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error may echo the password: keep it out of the message.
		return nil, &trove.Error{Code: trove.EINVALID, Message: "invalid PostgreSQL connection URL", Err: errors.New("pgxpool.ParseConfig failed")}
	}
	inURL, err := urlSettings(url)
	if err != nil {
		return nil, err
	}
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !inURL["pool_max_conns"]:
		cfg.MaxConns = DefaultMaxConns
	}
	switch {
	case opts.ConnectTimeout > 0:
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	case cfg.ConnConfig.ConnectTimeout <= 0: // connect_timeout absent or 0
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	opts.ConnectTimeout = cfg.ConnConfig.ConnectTimeout
	tcp := durationOr(opts.TCPTimeout, DefaultTCPTimeout)
	// Every dial is bounded by the connect timeout (the URL's
	// connect_timeout bounded each dial through pgx's own dialer; this one
	// does now) and gets keepalives and TCP_USER_TIMEOUT (tcp.go).
	cfg.ConnConfig.DialFunc = dialer(opts.ConnectTimeout, tcp)
	// Server-side guards, in every connection's startup packet: the pool's
	// and the listener's (listen.go copies this config). A value given in
	// the URL wins over a default, not over an Options field.
	rp := cfg.ConnConfig.RuntimeParams
	setParam := func(name string, opt, def time.Duration) {
		switch {
		case opt < 0:
			delete(rp, name)
		case opt > 0:
			rp[name] = fmt.Sprint(opt.Milliseconds())
		case rp[name] == "":
			rp[name] = fmt.Sprint(def.Milliseconds())
		}
	}
	setParam("statement_timeout", opts.StatementTimeout, DefaultStatementTimeout)
	setParam("lock_timeout", opts.LockTimeout, DefaultLockTimeout)
	idle := durationOr(opts.IdleInTxTimeout, DefaultIdleInTxTimeout)
	if idle > 0 {
		// Always Trove's value: Write's settling relies on it.
		rp["idle_in_transaction_session_timeout"] = fmt.Sprint(idle.Milliseconds())
	} else {
		rp["idle_in_transaction_session_timeout"] = "0"
	}
	if tcp > 0 {
		rp["tcp_keepalives_idle"] = fmt.Sprint(max(1, int(tcp/2/time.Second)))
		rp["tcp_keepalives_interval"] = fmt.Sprint(max(1, int(tcp/6/time.Second)))
		rp["tcp_keepalives_count"] = "3"
		rp["tcp_user_timeout"] = fmt.Sprint(tcp.Milliseconds())
	}
	if !inURL["pool_ping_timeout"] {
		cfg.PingTimeout = opts.ConnectTimeout
	}
	if !inURL["pool_health_check_period"] {
		cfg.HealthCheckPeriod = defaultHealthCheckPeriod
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = opts.Schema
	}
	schema := opts.Schema
	if schema == "" {
		schema = cfg.ConnConfig.RuntimeParams["search_path"]
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, translate(err)
	}
	db := &DB{pool: pool, schema: schema, acquireTimeout: opts.ConnectTimeout, opTimeout: durationOr(opts.OpTimeout, DefaultOpTimeout), tcpTimeout: tcp}
	if idle > 0 {
		db.settle = idle + settleMargin
	}
	if opts.AutoMigrate {
		if err := db.Migrate(ctx); err != nil {
			pool.Close()
			return nil, err
		}
	}
	have, known, err := db.SchemaVersion(ctx)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if have > known {
		pool.Close()
		return nil, newerSchemaError(have)
	}
	if have < known {
		pool.Close()
		return nil, &trove.Error{Code: trove.EINVALID, Message: fmt.Sprintf("database schema version %d is older than this trove needs (%d): run trove migrate", have, known)}
	}
	db.startSearchIndexer(opts.SearchIndexDelay, opts.SearchIndexLag)
	return db, nil
}

// durationOr returns d, def when d is 0, and 0 (off) when d is negative.
func durationOr(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
}

// bound returns ctx with the OpTimeout deadline when it has no earlier one.
func (db *DB) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if db.opTimeout <= 0 {
		return ctx, func() {}
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= db.opTimeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, db.opTimeout)
}

// urlSettings reports which pool_* settings the connection string (URL or
// DSN) gives. pgxpool.ParseConfig consumes them without saying which were
// present, so the string is parsed again with pgx.ParseConfig, which keeps
// them among the runtime parameters.
func urlSettings(url string) (map[string]bool, error) {
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, &trove.Error{Code: trove.EINVALID, Message: "invalid PostgreSQL connection URL", Err: errors.New("pgx.ParseConfig failed")}
	}
	given := map[string]bool{}
	for k := range cc.RuntimeParams {
		if strings.HasPrefix(k, "pool_") {
			given[k] = true
		}
	}
	return given, nil
}

// Pool returns the underlying connection pool, for benchmarks and tests.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Close closes every pooled connection. Calls in flight finish first.
func (db *DB) Close() error {
	db.stopSearchIndexer()
	db.stopListening()
	db.pool.Close()
	return nil
}

// Ping checks that the database answers, within ConnectTimeout. It returns
// EUNAVAILABLE when it does not.
func (db *DB) Ping(ctx context.Context) error {
	return db.withConn(ctx, func(c *pgxpool.Conn) error { return c.Ping(ctx) })
}

// Read runs fn in a REPEATABLE READ READ ONLY transaction: every statement
// of fn sees one snapshot. Errors of fn are returned as they are; database
// errors are translated (EUNAVAILABLE when the database is unreachable).
//
// Like every call of the driver, it is bounded by ctx's deadline, else by
// OpTimeout: past it the statement in flight is abandoned, its connection
// closed (the pool dials a new one) and EUNAVAILABLE returned.
func (db *DB) Read(ctx context.Context, fn func(storage.Tx) error) error {
	ctx, cancel := db.bound(ctx)
	defer cancel()
	return db.withConn(ctx, func(c *pgxpool.Conn) error {
		return db.runTx(ctx, c, beginRead, fn)
	})
}

// MemoryGet is storage.Driver.MemoryGet: one statement in autocommit mode,
// one round trip. When the pooled connection turns out dead the read is
// retried on another, as a failed BEGIN is.
func (db *DB) MemoryGet(ctx context.Context, storeID, id string, withContent bool) (*trove.Memory, error) {
	ctx, cancel := db.bound(ctx)
	defer cancel()
	var m *trove.Memory
	err := db.withConn(ctx, func(c *pgxpool.Conn) error {
		// sent: no BEGIN is sent, so the statement runs on its own.
		t := &tx{conn: c.Conn(), sent: true}
		var err error
		m, err = t.MemoryGet(ctx, storeID, id, withContent)
		if err != nil && trove.ErrorCode(err) != trove.ENOTFOUND && c.Conn().IsClosed() {
			return &beginError{err: err, retry: true}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Write runs fn in a READ COMMITTED read-write transaction and commits it;
// nil means the commit succeeded (durable under PostgreSQL's default
// synchronous_commit). fn is run again, up to a few times, when PostgreSQL
// reports a serialization failure (40001) or deadlock (40P01); after that
// Write returns EUNAVAILABLE. It is bounded as Read is.
//
// An error from Write means the transaction can no longer commit: either
// COMMIT was never sent (the connection is closed or rolled back, and the
// server ends the transaction, at the latest after IdleInTxTimeout), or
// COMMIT was sent and not acknowledged (the connection failed or the
// deadline came): then the outcome is unknown, and Write waits, before
// returning EUNAVAILABLE, until the server has certainly either committed or
// ended the transaction (IdleInTxTimeout after the COMMIT was sent, plus a
// margin). COMMIT is therefore sent only while that much time is left
// before ctx's deadline; otherwise Write rolls back and returns
// EUNAVAILABLE. What the caller is told is final: a read after the error
// sees whether the write was applied, and that never changes afterwards.
func (db *DB) Write(ctx context.Context, fn func(storage.Tx) error) error {
	ctx, cancel := db.bound(ctx)
	defer cancel()
	if id := storage.WriteStoreOf(ctx); id != "" {
		defer db.gates.enter(ctx, id)()
	}
	err := db.write(ctx, fn)
	if err == nil {
		db.noteWrite()
	}
	return err
}

// write is Write without telling the search indexer (which writes through
// it itself).
func (db *DB) write(ctx context.Context, fn func(storage.Tx) error) error {
	var err error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		err = db.withConn(ctx, func(c *pgxpool.Conn) error {
			return db.runTx(ctx, c, beginWrite, fn)
		})
		if !isRetryable(err) {
			return err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return &trove.Error{Code: trove.EUNAVAILABLE, Message: "the database is busy; retry", Err: err}
}

// runReleasing runs f on c and releases c however f ends: also when f
// never returns, as when the goroutine exits inside it (runtime.Goexit: a
// test's t.Fatal in a Read's function), which left the connection acquired
// for good and Close waiting for it forever. A connection left inside a
// transaction is closed by the pool on release, not reused.
func runReleasing(c *pgxpool.Conn, f func(*pgxpool.Conn) error) error {
	defer c.Release()
	return f(c)
}

// withConn acquires a pooled connection within acquireTimeout and runs f on
// it. A BEGIN that fails because a pooled connection died (Postgres
// restarted, backend terminated) is retried on a fresh connection, since
// nothing was executed yet.
func (db *DB) withConn(ctx context.Context, f func(*pgxpool.Conn) error) error {
	var err error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		actx, cancel := context.WithTimeout(ctx, db.acquireTimeout)
		c, aerr := db.pool.Acquire(actx)
		cancel()
		if aerr != nil {
			if ctx.Err() == nil && errors.Is(aerr, context.DeadlineExceeded) {
				return &trove.Error{Code: trove.EUNAVAILABLE, Message: "the database is unavailable; retry", Err: fmt.Errorf("acquire connection within %v: %w", db.acquireTimeout, aerr)}
			}
			return translate(aerr)
		}
		err = runReleasing(c, f)
		var be *beginError
		if !errors.As(err, &be) {
			return err
		}
		err = be.err
		if !be.retry || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// beginError marks a failed BEGIN; retry is set when it failed because the
// connection was dead, so another connection may succeed.
type beginError struct {
	err   error
	retry bool
}

func (e *beginError) Error() string { return e.err.Error() }
func (e *beginError) Unwrap() error { return e.err }

// BEGIN statements of Read and Write transactions.
const (
	beginRead  = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
	beginWrite = "BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE"
)

// runTx runs fn in one transaction on c, begun with beginSQL (pipelined with
// fn's first statement), and returns fn's error as is or a translated
// database error. A panic in fn rolls back and becomes EINTERNAL.
func (db *DB) runTx(ctx context.Context, c *pgxpool.Conn, beginSQL string, fn func(storage.Tx) error) (err error) {
	t := &tx{conn: c.Conn(), beginSQL: beginSQL, rollbackTimeout: db.acquireTimeout}
	if beginSQL == beginWrite {
		t.settle = db.settle
	}
	defer func() {
		if p := recover(); p != nil {
			err = t.finish(ctx, &trove.Error{Code: trove.EINTERNAL, Message: "internal error", Err: fmt.Errorf("panic in transaction: %v", p)})
		}
	}()
	err = t.finish(ctx, fn(t))
	if err != nil && t.beginFailed {
		return &beginError{err: translate(err), retry: c.Conn().IsClosed()}
	}
	return translate(err)
}

// isRetryable reports whether err is a serialization failure or deadlock
// after which the whole transaction may be run again.
func isRetryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01"
	}
	return false
}
