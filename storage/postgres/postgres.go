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
	"net"
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
	// StatementTimeout is the server-side statement_timeout (0 means none).
	StatementTimeout time.Duration
	// Schema, when not "", is the search_path of every connection: all of
	// Trove's tables live in it. Used to isolate tests and tenants. The
	// schema is created by Migrate when missing.
	Schema string
}

// Pool defaults, used when neither Options nor the URL sets the value.
const (
	DefaultMaxConns       = 8
	DefaultConnectTimeout = 5 * time.Second
	// defaultHealthCheckPeriod is how often idle pooled connections are
	// checked (the URL's pool_health_check_period wins).
	defaultHealthCheckPeriod = 10 * time.Second
)

// DB is an open PostgreSQL database. It implements storage.Driver and
// storage.Migrator and is safe for concurrent use.
type DB struct {
	pool           *pgxpool.Pool
	schema         string
	acquireTimeout time.Duration
	listen         listener // NotifyVersions' connection (listen.go)
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
		// The URL's connect_timeout also bounded each dial; this one does.
		cfg.ConnConfig.DialFunc = (&net.Dialer{Timeout: opts.ConnectTimeout}).DialContext
	case cfg.ConnConfig.ConnectTimeout <= 0: // connect_timeout absent or 0
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	opts.ConnectTimeout = cfg.ConnConfig.ConnectTimeout
	if !inURL["pool_ping_timeout"] {
		cfg.PingTimeout = opts.ConnectTimeout
	}
	if !inURL["pool_health_check_period"] {
		cfg.HealthCheckPeriod = defaultHealthCheckPeriod
	}
	if opts.StatementTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(opts.StatementTimeout.Milliseconds())
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
	db := &DB{pool: pool, schema: schema, acquireTimeout: opts.ConnectTimeout}
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
	return db, nil
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
func (db *DB) Read(ctx context.Context, fn func(storage.Tx) error) error {
	return db.withConn(ctx, func(c *pgxpool.Conn) error {
		return db.runTx(ctx, c, beginRead, fn)
	})
}

// MemoryGet is storage.Driver.MemoryGet: one statement in autocommit mode,
// one round trip. When the pooled connection turns out dead the read is
// retried on another, as a failed BEGIN is.
func (db *DB) MemoryGet(ctx context.Context, storeID, id string, withContent bool) (*trove.Memory, error) {
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
// Write returns EUNAVAILABLE. If the connection is lost during COMMIT the
// outcome is unknown and Write returns EUNAVAILABLE.
func (db *DB) Write(ctx context.Context, fn func(storage.Tx) error) error {
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
		err = f(c)
		c.Release()
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
