package sqlite_test

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"

	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/storagetest"
)

// TestBackupConformance runs the backup part of the port's suite with
// SQLite as both source and target.
func TestBackupConformance(t *testing.T) {
	t.Parallel()
	storagetest.RunBackup(t, storagetest.Opener{Name: "SQLite", Open: func(t *testing.T) storage.Driver { return openTest(t) }})
}

// TestBackupCoversEverySchemaObject: a table or column the backup format
// does not name makes Dump and Load fail, naming it, rather than leave it
// out of backups (the guard for whoever adds a table).
func TestBackupCoversEverySchemaObject(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, ddl, want string }{
		{"table", `CREATE TABLE webhooks_new (id TEXT PRIMARY KEY)`, "table webhooks_new is not covered"},
		{"column", `ALTER TABLE stores ADD COLUMN color TEXT`, "column stores.color is not covered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := openTest(t)
			rawExec(t, db.Path(), tc.ddl)
			err := db.Dump(context.Background(), &storagetest.Dump{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Dump = %v, want an error with %q", err, tc.want)
			}
			err = db.Load(context.Background(), func(storage.LoadTx) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// rawExec runs a statement on the database file outside the driver.
func rawExec(t *testing.T, path, stmt string) {
	t.Helper()
	// The busy timeout: the driver's committer may hold the write lock.
	raw, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path, RawQuery: "_pragma=busy_timeout(10000)"}).String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}
