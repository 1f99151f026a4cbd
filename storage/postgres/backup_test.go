package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/storagetest"
)

// TestBackupConformance runs the backup part of the port's suite with
// PostgreSQL as both source and target.
func TestBackupConformance(t *testing.T) {
	t.Parallel()
	testURL(t)
	storagetest.RunBackup(t, storagetest.Opener{Name: "PostgreSQL", Open: openConformance})
}

// TestBackupCoversEverySchemaObject: a table or column the backup format
// does not name makes Dump and Load fail, naming it.
func TestBackupCoversEverySchemaObject(t *testing.T) {
	t.Parallel()
	testURL(t)
	for _, tc := range []struct{ name, ddl, want string }{
		{"table", `CREATE TABLE webhooks_new (id text PRIMARY KEY)`, "table webhooks_new is not covered"},
		{"column", `ALTER TABLE stores ADD COLUMN color text`, "column stores.color is not covered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := openDB(t)
			if _, err := db.Pool().Exec(context.Background(), tc.ddl); err != nil {
				t.Fatal(err)
			}
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
