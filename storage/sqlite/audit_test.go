package sqlite_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/sqlite"
)

// TestAuditDetectsTampering alters version rows in the SQLite file through
// a connection of its own, as anyone with the file could, and checks that
// `audit verify` (core.VerifyStore) names the version where the chain
// breaks.
func TestAuditDetectsTampering(t *testing.T) {
	t.Parallel()
	coretest.Tamper(t, func(t *testing.T) storage.Driver { return openTest(t) },
		func(t *testing.T, d storage.Driver, query string, args ...any) {
			t.Helper()
			raw, err := sql.Open("sqlite", d.(*sqlite.DB).Path())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			res, err := raw.ExecContext(context.Background(), query, args...)
			if err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("%s changed %d rows, want 1", query, n)
			}
		})
}
