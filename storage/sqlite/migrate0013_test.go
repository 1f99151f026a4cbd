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

// TestMigration0013CountsExistingRows: a database at the schema before
// 0013_store_limits.sql holding stores, memories and versions written out
// of order migrates to counters that match them (coretest.LegacyCounters
// names the rows), and the service's writes and limits go on from there.
func TestMigration0013CountsExistingRows(t *testing.T) {
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
		if e.Name() == "0013_store_limits.sql" {
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
		t.Fatal("no migrations/0013_store_limits.sql")
	}
	const (
		ins = `INSERT INTO memories (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at) VALUES `
		ver = `INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256, created_at, seq) VALUES `
	)
	q = append(q,
		`INSERT INTO stores (id, workspace_id, name, created_at, updated_at) VALUES
			('memstore_b', 'wrkspc_one', 'b', 2, 2), ('memstore_c', 'wrkspc_two', 'c', 3, 3), ('memstore_a', 'wrkspc_one', 'a', 1, 1)`,
		ins+`('mem_3', 'memstore_a', '/z', 'zzz', 3, 's', 'memver_3', 1, 1),
			('mem_1', 'memstore_a', '/a', '0123456789', 10, 's', 'memver_4', 1, 1),
			('mem_2', 'memstore_a', '/m', '', 0, 's', 'memver_2', 1, 1),
			('mem_c', 'memstore_c', '/c', 'ccccc', 5, 's', 'memver_c', 1, 1)`,
		ver+`('memver_4', 'memstore_a', 'mem_1', 'modified', '/a', '0123456789', 10, 's', 4, 4),
			('memver_1', 'memstore_a', 'mem_1', 'created', '/a', 'x', 1, 's', 1, 1),
			('memver_3', 'memstore_a', 'mem_3', 'created', '/z', 'zzz', 3, 's', 3, 3),
			('memver_2', 'memstore_a', 'mem_2', 'created', '/m', '', 0, 's', 2, 2),
			('memver_6', 'memstore_a', 'mem_4', 'deleted', '/gone', NULL, NULL, NULL, 6, 6),
			('memver_5', 'memstore_a', 'mem_4', 'created', '/gone', 'gone', 4, 's', 5, 5),
			('memver_b2', 'memstore_b', 'mem_b', 'deleted', '/b', NULL, NULL, NULL, 2, 2),
			('memver_b1', 'memstore_b', 'mem_b', 'created', '/b', 'b', 1, 's', 1, 1),
			('memver_c', 'memstore_c', 'mem_c', 'created', '/c', 'ccccc', 5, 's', 1, 1)`,
		`INSERT INTO version_seqs (store_id, last) VALUES ('memstore_b', 2), ('memstore_a', 6)`)
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
	coretest.LegacyCounters(t, db)
}
