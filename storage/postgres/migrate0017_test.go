package postgres_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage/postgres"
)

// TestMigration0017MovesDreamLeasesToJobs: dreams written at the schema
// before 0017_dream_jobs.sql with their own lease columns
// (coretest.LegacyDreams) migrate to jobs holding the same leases, and
// the runners' claims go on from there (coretest.LegacyDreamJobs).
func TestMigration0017MovesDreamLeasesToJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ents, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	at := slices.IndexFunc(ents, func(e os.DirEntry) bool { return e.Name() == "0017_dream_jobs.sql" })
	if at < 0 {
		t.Fatal("no migrations/0017_dream_jobs.sql")
	}
	schema := newSchema(t)
	c := adminConn(t)
	q := schemaAt(t, schema, at)
	for _, d := range coretest.LegacyDreams {
		lease := "NULL"
		if d.LeaseUntil != 0 {
			lease = fmt.Sprintf("to_timestamp(%d)", d.LeaseUntil)
		}
		q = append(q, fmt.Sprintf(`INSERT INTO dreams (id, workspace_id, status, input_store_id, session_ids, model,
			model_speed, instructions, output_behavior, output_store_id, session_id, input_tokens, output_tokens,
			cache_read_tokens, cache_creation_tokens, created_by_type, created_by_id, created_at, lease_owner,
			lease_expires_at, attempts)
			VALUES ('%s', 'wrkspc_one', '%s', 'memstore_a', ARRAY['sesn_in'], 'm', 'standard', '', 'create_new', '',
			'%s', 0, 0, 0, 0, 'api_actor', 'apikey_x', to_timestamp(%d), '%s', %s, %d)`,
			d.ID, d.Status, d.SessionID, d.Created, d.LeaseOwner, lease, d.Attempts))
	}
	execAll(t, c, q)
	db := openDBOn(t, testURL(t), schema, postgres.Options{})
	var version int
	if err := c.QueryRow(ctx, "SELECT max(version) FROM "+schema+".schema_version").Scan(&version); err != nil || version <= at {
		t.Fatalf("schema version %d (%v), want past %d", version, err, at)
	}
	coretest.LegacyDreamJobs(t, db)
}
