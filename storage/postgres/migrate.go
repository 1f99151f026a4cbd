package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trovehq/trove"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the embedded migrations/NNNN_name.sql files in order; their
// numbers must be 1, 2, 3… without gaps.
var migrations = mustLoadMigrations()

func mustLoadMigrations() []migration {
	ents, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	var ms []migration
	for _, e := range ents {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic("postgres: bad migration file name " + e.Name())
		}
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			panic(err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			panic(fmt.Sprintf("postgres: migration %s out of sequence", m.name))
		}
	}
	return ms
}

// migrateLockKey is the first key of the advisory lock that serializes
// migrations; the second is a hash of the configured schema (search_path),
// so separate schemas migrate independently.
const migrateLockKey = 0x7472 // "tr"

// Migrate applies, in one transaction, every migration the database lacks.
// It takes a transaction-scoped advisory lock first, so several nodes
// starting at once migrate exactly once. It creates Options.Schema when
// missing. It refuses a database whose schema is newer than the driver knows.
func (db *DB) Migrate(ctx context.Context) error {
	return db.withConn(ctx, func(c *pgxpool.Conn) error {
		err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			// Waiting for another node's migration, and the migration
			// itself, may take longer than Options.StatementTimeout and
			// Options.LockTimeout (a migration's DDL waits for the locks of
			// every transaction on its tables).
			if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", migrateLockKey, db.schema); err != nil {
				return err
			}
			if db.schema != "" && !strings.Contains(db.schema, ",") {
				if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{strings.TrimSpace(db.schema)}.Sanitize()); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
				version    integer PRIMARY KEY,
				name       text NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
				return err
			}
			var have int
			if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_version").Scan(&have); err != nil {
				return err
			}
			if have > len(migrations) {
				return newerSchemaError(have)
			}
			for _, m := range migrations[have:] {
				if _, err := tx.Exec(ctx, m.sql); err != nil {
					return fmt.Errorf("migration %s: %w", m.name, err)
				}
				if _, err := tx.Exec(ctx, "INSERT INTO schema_version (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
					return err
				}
			}
			return nil
		})
		return translate(err)
	})
}

func newerSchemaError(have int) error {
	return &trove.Error{Code: trove.EINVALID, Message: fmt.Sprintf("database schema version %d is newer than this trove knows (%d): upgrade trove", have, len(migrations))}
}

// SchemaVersion returns the database's schema version (0 when Trove's
// tables do not exist yet) and the newest version the driver knows.
func (db *DB) SchemaVersion(ctx context.Context) (have, known int, err error) {
	known = len(migrations)
	err = db.withConn(ctx, func(c *pgxpool.Conn) error {
		var exists bool
		if err := c.QueryRow(ctx, "SELECT to_regclass('schema_version') IS NOT NULL").Scan(&exists); err != nil {
			return translate(err)
		}
		if !exists {
			return nil
		}
		return translate(c.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_version").Scan(&have))
	})
	return have, known, err
}
