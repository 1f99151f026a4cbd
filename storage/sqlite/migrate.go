package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trovehq/trove"
)

// migrationFS holds the schema migrations: migrations/NNNN_name.sql, numbered
// from 1 without gaps, each applied once in its own step of one transaction.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

var (
	loadOnce   sync.Once
	migrations []migration
	loadErr    error
)

// loadMigrations parses the embedded migrations once.
func loadMigrations() ([]migration, error) {
	loadOnce.Do(func() {
		migrations, loadErr = parseMigrations(migrationFS, "migrations")
	})
	return migrations, loadErr
}

// parseMigrations reads dir of fsys: every file must be NNNN_name.sql and
// the numbers must run 1, 2, 3… without gaps or duplicates.
func parseMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("sqlite: bad migration file name %q (want NNNN_name.sql)", name)
		}
		b, err := fs.ReadFile(fsys, dir+"/"+name)
		if err != nil {
			return nil, fmt.Errorf("sqlite: read migration %s: %w", name, err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("sqlite: migrations must be numbered 1..N without gaps; %s is number %d at position %d", m.name, m.version, i+1)
		}
	}
	return ms, nil
}

// knownVersion is the newest schema version this build knows.
func knownVersion() (int, error) {
	ms, err := loadMigrations()
	if err != nil {
		return 0, err
	}
	return len(ms), nil
}

// querier is what *sql.Conn, *sql.Tx and *sql.DB share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readSchemaVersion returns the version recorded in schema_version, 0 when
// the table does not exist yet (a new database).
func readSchemaVersion(ctx context.Context, q querier) (int, error) {
	var n int
	err := q.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_version'`).Scan(&n)
	if err != nil {
		return 0, translate(err)
	}
	if n == 0 {
		return 0, nil
	}
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT max(version) FROM schema_version`).Scan(&v); err != nil {
		return 0, translate(err)
	}
	return int(v.Int64), nil
}

func (db *DB) schemaVersion(ctx context.Context, q querier) (have, known int, err error) {
	known, err = knownVersion()
	if err != nil {
		return 0, 0, err
	}
	have, err = readSchemaVersion(ctx, q)
	return have, known, err
}

// SchemaVersion returns the database's schema version and the newest
// version this build knows.
func (db *DB) SchemaVersion(ctx context.Context) (have, known int, err error) {
	db.mu.RLock()
	closed := db.closed
	db.mu.RUnlock()
	if closed {
		return 0, 0, errClosed
	}
	return db.schemaVersion(ctx, db.rdb)
}

// Migrate applies every migration the database lacks, all in one IMMEDIATE
// transaction, so that concurrent Migrate calls from several processes are
// serialized by SQLite's write lock and each migration runs exactly once.
// It returns EINVALID if the database is newer than this build.
func (db *DB) Migrate(ctx context.Context) error {
	err := db.submit(ctx, &writeReq{ctx: ctx, raw: func(ctx context.Context, c *sql.Conn) error {
		if err := migrate(ctx, c); err != nil {
			return err
		}
		_, _ = db.lookAtSearchQueue(ctx, c) // a migration may rebuild the index; only the log line matters here
		return nil
	}})
	if err == nil {
		db.needMigrate.Store(false)
	}
	return err
}

// migrate runs on the writer connection (outside any group).
func migrate(ctx context.Context, c *sql.Conn) (err error) {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return translate(err)
	}
	defer func() {
		if err != nil {
			c.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	if _, err := c.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return translate(err)
	}
	have, err := readSchemaVersion(ctx, c)
	if err != nil {
		return err
	}
	if have > len(ms) {
		return trove.Errorf(trove.EINVALID,
			"sqlite: database schema version %d is newer than the %d this build of trove knows; upgrade trove", have, len(ms))
	}
	for _, m := range ms[have:] {
		if _, err := c.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("sqlite: migration %s: %w", m.name, translate(err))
		}
		if _, err := c.ExecContext(ctx,
			`INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, time.Now().UnixMicro()); err != nil {
			return translate(err)
		}
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return translate(err)
	}
	return nil
}
