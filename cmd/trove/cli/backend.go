package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
	"github.com/trovehq/trove/storage/sqlite"
)

// This file opens a local database (SQLite in a data directory, or
// PostgreSQL); target.go picks between it and a server, conn.go opens the
// pick.

// closeFn releases what openLocal opened.
type closeFn func() error

// defaultWorkspace is the workspace of the key the first serve creates.
const defaultWorkspace = "wrkspc_default"

// defaultDataDir returns $TROVE_DATA, else $XDG_DATA_HOME/trove, else
// ~/.local/share/trove.
func defaultDataDir() string {
	if d := os.Getenv("TROVE_DATA"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "trove")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "trove")
	}
	return filepath.Join(".", "trove-data")
}

// isPostgresURL reports whether databaseURL selects the PostgreSQL driver.
func isPostgresURL(databaseURL string) bool {
	return strings.HasPrefix(databaseURL, "postgres://") || strings.HasPrefix(databaseURL, "postgresql://")
}

// backend is an open database with the core service over it.
type backend struct {
	svc    *core.Service
	driver storage.Driver
	kind   string // "sqlite" or "postgres"
	where  string // the SQLite file, or the PostgreSQL URL without password
	close  closeFn
}

// health reports whether the database answers a query.
func (b *backend) health(ctx context.Context) error {
	return b.driver.Read(ctx, func(tx storage.Tx) error {
		_, err := tx.StoreList(ctx, storage.StoreListParams{WorkspaceID: "wrkspc_healthz", Limit: 1})
		return err
	})
}

// schema returns the database's schema version and the newest this build
// knows; ok is false for a driver without versioned schemas.
func (b *backend) schema(ctx context.Context) (have, known int, ok bool, err error) {
	m, isM := b.driver.(storage.Migrator)
	if !isM {
		return 0, 0, false, nil
	}
	have, known, err = m.SchemaVersion(ctx)
	return have, known, true, err
}

// openBackend opens the database chosen by databaseURL: PostgreSQL for a
// postgres:// or postgresql:// URL, otherwise SQLite at <dataDir>/trove.db
// (dataDir is created with mode 0700). With autoMigrate, missing migrations
// are applied. It refuses a database whose schema is newer than this build
// knows, and (without autoMigrate) one that is older.
func openBackend(ctx context.Context, dataDir, databaseURL string, autoMigrate bool, log *slog.Logger) (*backend, error) {
	return openBackendWith(ctx, dataDir, databaseURL, autoMigrate, core.Options{Logger: log}, dbOptions{})
}

// dbOptions are the PostgreSQL pool settings serve exposes; SQLite ignores
// them. A zero field means the URL's setting, else the driver's default
// (see postgres.Open).
type dbOptions struct {
	maxConns       int32
	connectTimeout time.Duration
	// Server-side guards and time bounds (postgres.Options).
	statementTimeout, lockTimeout, idleInTxTimeout, tcpTimeout, opTimeout time.Duration
}

// openBackendWith is openBackend with the core options of the service
// (opts.Logger also receives the SQLite driver's logs) and the PostgreSQL
// pool settings.
func openBackendWith(ctx context.Context, dataDir, databaseURL string, autoMigrate bool, opts core.Options, dbo dbOptions) (*backend, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &backend{}
	switch {
	case isPostgresURL(databaseURL):
		db, err := postgres.Open(ctx, databaseURL, postgres.Options{AutoMigrate: autoMigrate, MaxConns: dbo.maxConns, ConnectTimeout: dbo.connectTimeout,
			StatementTimeout: dbo.statementTimeout, LockTimeout: dbo.lockTimeout, IdleInTxTimeout: dbo.idleInTxTimeout, TCPTimeout: dbo.tcpTimeout, OpTimeout: dbo.opTimeout})
		if err != nil {
			return nil, fmt.Errorf("opening PostgreSQL: %w", err)
		}
		b.driver, b.kind, b.where, b.close = db, "postgres", postgres.RedactDSN(databaseURL), db.Close
	case databaseURL != "":
		return nil, trove.Errorf(trove.EINVALID, "--database must be a postgres:// or postgresql:// URL (leave it empty for SQLite in --data), got %q", postgres.RedactDSN(databaseURL))
	default:
		if dataDir == "" {
			return nil, trove.Errorf(trove.EINVALID, "no data directory: pass --data or set TROVE_DATA")
		}
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating the data directory: %w", err)
		}
		path := filepath.Join(dataDir, "trove.db")
		db, err := sqlite.Open(ctx, path, sqlite.Options{AutoMigrate: autoMigrate, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", path, err)
		}
		b.driver, b.kind, b.where, b.close = db, "sqlite", path, db.Close
	}
	have, known, ok, err := b.schema(ctx)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("reading the schema version: %w", err)
	}
	if ok && have > known {
		b.close()
		return nil, trove.Errorf(trove.EINVALID, "the database schema (version %d) is newer than this trove knows (%d): upgrade trove", have, known)
	}
	if ok && have < known && !autoMigrate {
		b.close()
		return nil, trove.Errorf(trove.EINVALID, "the database schema (version %d) is older than this trove needs (%d): run trove migrate", have, known)
	}
	opts.Logger = log
	b.svc = core.New(b.driver, opts)
	return b, nil
}

// openLocal opens the database chosen by databaseURL (see openBackend) and
// returns the core service over it with the function that closes it.
func openLocal(ctx context.Context, dataDir, databaseURL string, autoMigrate bool) (*core.Service, closeFn, error) {
	b, err := openBackend(ctx, dataDir, databaseURL, autoMigrate, nil)
	if err != nil {
		return nil, nil, err
	}
	return b.svc, b.close, nil
}
