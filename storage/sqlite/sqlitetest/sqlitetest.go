// Package sqlitetest gives tests a fresh, fully migrated SQLite database
// file without paying for the migrations each time.
//
// Migrating an empty database costs 0.4–0.7 s (the full-text index and the
// commit of the whole schema; several times that under -race, where
// SQLite's translated C is instrumented too), against ~35 ms to write a
// copy of one and open it. Most tests want a fresh database, so this
// package migrates one once per test process, keeps its bytes in memory,
// and writes them to each new path. The copy is what migrating the empty
// file would have produced (the migrations only backfill existing rows);
// the migrations themselves are tested in storage/sqlite, on empty and on
// older databases.
//
// Only _test.go files import this package.
package sqlitetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/trovehq/trove/storage/sqlite"
)

var (
	once     sync.Once
	template []byte
	tmplErr  error
)

// build migrates an empty database in a temporary directory, closes it
// (which checkpoints the WAL into the file) and keeps the file's bytes.
func build() ([]byte, error) {
	dir, err := os.MkdirTemp("", "trove-sqlitetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "trove.db")
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{AutoMigrate: true})
	if err != nil {
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("sqlitetest: %s-wal holds %d bytes after Close; the template would miss them", path, fi.Size())
	}
	return os.ReadFile(path)
}

// Path writes a fresh, migrated database file named trove.db into a new
// temporary directory of tb and returns its path, for sqlite.Open with the
// caller's options.
func Path(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "trove.db")
	Write(tb, path)
	return path
}

// Write writes a fresh, migrated database file at path (which must not
// exist yet).
func Write(tb testing.TB, path string) {
	tb.Helper()
	once.Do(func() { template, tmplErr = build() })
	if tmplErr != nil {
		tb.Fatalf("sqlitetest: migrating the template database: %v", tmplErr)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		tb.Fatalf("sqlitetest: %v", err)
	}
	if _, err := f.Write(template); err != nil {
		f.Close()
		tb.Fatalf("sqlitetest: %v", err)
	}
	if err := f.Close(); err != nil {
		tb.Fatalf("sqlitetest: %v", err)
	}
}
