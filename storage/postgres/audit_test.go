package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
)

// TestAuditDetectsTampering alters version rows with plain SQL on the
// driver's own pool (its schema), as anyone with database access could,
// and checks that `audit verify` (core.VerifyStore) names the version where
// the chain breaks.
func TestAuditDetectsTampering(t *testing.T) {
	t.Parallel()
	coretest.Tamper(t, func(t *testing.T) storage.Driver { return openDB(t) },
		func(t *testing.T, d storage.Driver, query string, args ...any) {
			t.Helper()
			for i := range args {
				query = strings.Replace(query, "?", fmt.Sprintf("$%d", i+1), 1)
			}
			tag, err := d.(*postgres.DB).Pool().Exec(context.Background(), query, args...)
			if err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			if tag.RowsAffected() != 1 {
				t.Fatalf("%s changed %d rows, want 1", query, tag.RowsAffected())
			}
		})
}
