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

// TestMigration0008ChainsAfterLegacy: a database at schema 7 holding a store
// with history migrates to 8; its versions stay unhashed (reported as
// predating the chain), reads as of them work, and the next write starts
// the chain.
func TestMigration0008ChainsAfterLegacy(t *testing.T) {
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
	for i, e := range ents[:7] {
		b, err := os.ReadFile("migrations/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		q = append(q, string(b), fmt.Sprintf(`INSERT INTO schema_version VALUES (%d, '%s', 0)`, i+1, e.Name()))
	}
	q = append(q,
		`INSERT INTO stores (id, workspace_id, name, description, metadata, created_at, updated_at) VALUES ('memstore_old', 'wrkspc_old', 'old', '', '{}', 1, 1)`,
		`INSERT INTO memories (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at) VALUES
			('mem_1', 'memstore_old', '/kept', 'b', 1, '3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d', 'memver_2', 1, 1)`,
		`INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256, created_at, seq) VALUES
			('memver_1', 'memstore_old', 'mem_1', 'created', '/kept', 'a', 1, 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb', 1, 1),
			('memver_2', 'memstore_old', 'mem_1', 'modified', '/kept', 'b', 1, '3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d', 2, 2)`,
		`INSERT INTO version_seqs (store_id, last) VALUES ('memstore_old', 2)`)
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
	if have, known, err := db.SchemaVersion(ctx); err != nil || have != known || have < 8 {
		t.Fatalf("SchemaVersion after migrating = %d of %d, %v", have, known, err)
	}
	coretest.LegacyHistory(t, db, "wrkspc_old", "memstore_old", 2, []string{"/kept"})
}
