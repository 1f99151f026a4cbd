package postgres_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage/postgres"
)

// TestMigration0014CountsExistingRows: a schema at the version before
// 0014_store_limits.sql holding stores, memories and versions written out
// of order migrates to counters that match them (coretest.LegacyCounters
// names the rows), and the service's writes and limits go on from there.
func TestMigration0014CountsExistingRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ents, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	at := slices.IndexFunc(ents, func(e os.DirEntry) bool { return e.Name() == "0014_store_limits.sql" })
	if at < 0 {
		t.Fatal("no migrations/0014_store_limits.sql")
	}
	schema := newSchema(t)
	c := adminConn(t)
	const (
		ins = `INSERT INTO memories (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at) VALUES `
		ver = `INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256, created_at, seq) VALUES `
	)
	q := schemaAt(t, schema, at)
	q = append(q,
		`INSERT INTO stores (id, workspace_id, name, created_at, updated_at) VALUES
			('memstore_b', 'wrkspc_one', 'b', now(), now()), ('memstore_c', 'wrkspc_two', 'c', now(), now()), ('memstore_a', 'wrkspc_one', 'a', now(), now())`,
		ins+`('mem_3', 'memstore_a', '/z', 'zzz', 3, 's', 'memver_3', now(), now()),
			('mem_1', 'memstore_a', '/a', '0123456789', 10, 's', 'memver_4', now(), now()),
			('mem_2', 'memstore_a', '/m', '', 0, 's', 'memver_2', now(), now()),
			('mem_c', 'memstore_c', '/c', 'ccccc', 5, 's', 'memver_c', now(), now())`,
		ver+`('memver_4', 'memstore_a', 'mem_1', 'modified', '/a', '0123456789', 10, 's', now(), 4),
			('memver_1', 'memstore_a', 'mem_1', 'created', '/a', 'x', 1, 's', now(), 1),
			('memver_3', 'memstore_a', 'mem_3', 'created', '/z', 'zzz', 3, 's', now(), 3),
			('memver_2', 'memstore_a', 'mem_2', 'created', '/m', '', 0, 's', now(), 2),
			('memver_6', 'memstore_a', 'mem_4', 'deleted', '/gone', NULL, NULL, NULL, now(), 6),
			('memver_5', 'memstore_a', 'mem_4', 'created', '/gone', 'gone', 4, 's', now(), 5),
			('memver_b2', 'memstore_b', 'mem_b', 'deleted', '/b', NULL, NULL, NULL, now(), 2),
			('memver_b1', 'memstore_b', 'mem_b', 'created', '/b', 'b', 1, 's', now(), 1),
			('memver_c', 'memstore_c', 'mem_c', 'created', '/c', 'ccccc', 5, 's', now(), 1)`,
		`INSERT INTO version_seqs (store_id, last) VALUES ('memstore_b', 2), ('memstore_a', 6)`)
	execAll(t, c, q)
	db := openDBOn(t, testURL(t), schema, postgres.Options{})
	var version int
	if err := c.QueryRow(ctx, "SELECT max(version) FROM "+schema+".schema_version").Scan(&version); err != nil || version <= at {
		t.Fatalf("schema version %d (%v), want past %d", version, err, at)
	}
	coretest.LegacyCounters(t, db)
}
