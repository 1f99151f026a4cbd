package core_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/storagetest"
)

// TestCoreSQLite runs the service conformance suite over the real SQLite
// driver, one fresh database file per test.
func TestCoreSQLite(t *testing.T) {
	storagetest.RunCore(t, func(t *testing.T) storage.Driver {
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
		if err != nil {
			t.Fatalf("sqlite.Open: %v", err)
		}
		return db
	})
}

// TestCorePostgres runs the suite over PostgreSQL at $TROVE_TEST_POSTGRES,
// one fresh schema per test. It skips when the variable is unset and fails
// when it is set but the database is unreachable.
func TestCorePostgres(t *testing.T) {
	url := os.Getenv("TROVE_TEST_POSTGRES")
	if url == "" {
		t.Skip("TROVE_TEST_POSTGRES is not set; set it to a PostgreSQL URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run core over PostgreSQL")
	}
	storagetest.RunCore(t, func(t *testing.T) storage.Driver {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("TROVE_TEST_POSTGRES is set but the database is unreachable: %v", err)
		}
		defer admin.Close(ctx)
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "trove_core_" + hex.EncodeToString(b[:])
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
				return
			}
			defer c.Close(ctx)
			if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
			}
		})
		db, err := postgres.Open(ctx, url, postgres.Options{AutoMigrate: true, Schema: schema, MaxConns: 20})
		if err != nil {
			t.Fatalf("postgres.Open: %v", err)
		}
		return db
	})
}

// TestCoreMemDriver runs the suite over the in-memory test driver, which
// checks core's rules independently of any database's own guards.
func TestCoreMemDriver(t *testing.T) {
	storagetest.RunCore(t, func(t *testing.T) storage.Driver { return newMemDriver() })
}
