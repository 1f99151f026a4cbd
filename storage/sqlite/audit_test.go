package sqlite_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/sqlite"
)

// TestAuditDetectsTampering alters version rows in the SQLite file through
// a connection of its own, as anyone with the file could, and checks that
// `audit verify` (core.VerifyStore) names the version where the chain
// breaks. The connection waits for the driver's write lock, as a forger's
// would.
func TestAuditDetectsTampering(t *testing.T) {
	t.Parallel()
	coretest.Tamper(t, func(t *testing.T) storage.Driver { return openTest(t) },
		func(t *testing.T, d storage.Driver, query string, args ...any) {
			t.Helper()
			// busy_timeout: the driver's committer may hold the write lock
			// (it indexes the search queue when idle), and without a wait
			// this connection's UPDATE fails with SQLITE_BUSY.
			u := url.URL{Scheme: "file", Path: d.(*sqlite.DB).Path(), RawQuery: "_pragma=busy_timeout(10000)"}
			raw, err := sql.Open("sqlite", u.String())
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
