package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage/sqlite"
)

// TestMigration0016MovesDreamLeasesToJobs: dreams written at the schema
// before 0016_dream_jobs.sql with their own lease columns
// (coretest.LegacyDreams) migrate to jobs holding the same leases, and
// the runners' claims go on from there (coretest.LegacyDreamJobs).
func TestMigration0016MovesDreamLeasesToJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trove.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	q := []string{`CREATE TABLE schema_version (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`}
	ents, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i, e := range ents {
		if e.Name() == "0016_dream_jobs.sql" {
			found = true
			break
		}
		b, err := os.ReadFile("migrations/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		q = append(q, string(b), fmt.Sprintf(`INSERT INTO schema_version VALUES (%d, '%s', 0)`, i+1, e.Name()))
	}
	if !found {
		t.Fatal("no migrations/0016_dream_jobs.sql")
	}
	for _, d := range coretest.LegacyDreams {
		lease := "NULL"
		if d.LeaseUntil != 0 {
			lease = fmt.Sprint(d.LeaseUntil * 1e6)
		}
		q = append(q, fmt.Sprintf(`INSERT INTO dreams (id, workspace_id, status, input_store_id, session_ids, model,
			model_speed, instructions, output_behavior, output_store_id, session_id, input_tokens, output_tokens,
			cache_read_tokens, cache_creation_tokens, created_by_type, created_by_id, created_at, lease_owner,
			lease_expires_at, attempts)
			VALUES ('%s', 'wrkspc_one', '%s', 'memstore_a', '["sesn_in"]', 'm', 'standard', '', 'create_new', '',
			'%s', 0, 0, 0, 0, 'api_actor', 'apikey_x', %d, '%s', %s, %d)`,
			d.ID, d.Status, d.SessionID, d.Created*1e6, d.LeaseOwner, lease, d.Attempts))
	}
	for _, s := range q {
		if _, err := raw.ExecContext(ctx, s); err != nil {
			t.Fatalf("%.60s: %v", s, err)
		}
	}
	raw.Close()
	db, err := sqlite.Open(ctx, path, sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if have, known, err := db.SchemaVersion(ctx); err != nil || have != known {
		t.Fatalf("SchemaVersion after migrating = %d of %d, %v", have, known, err)
	}
	coretest.LegacyDreamJobs(t, db)
}
