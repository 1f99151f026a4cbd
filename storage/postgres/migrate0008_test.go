package postgres_test

import (
	"context"
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage/postgres"
)

// TestMigration0008ChainsAfterLegacy: a schema at version 7 holding a store
// with history migrates to 8; its versions stay unhashed (reported as
// predating the chain), reads as of them work, and the next write starts
// the chain.
func TestMigration0008ChainsAfterLegacy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	c := adminConn(t)
	q := schemaAt(t, schema, 7)
	q = append(q,
		`INSERT INTO stores (id, workspace_id, name, created_at, updated_at) VALUES ('memstore_old', 'wrkspc_old', 'old', now(), now())`,
		`INSERT INTO memories (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at) VALUES
			('mem_1', 'memstore_old', '/kept', 'b', 1, '3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d', 'memver_2', now(), now())`,
		`INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256, created_at, seq) VALUES
			('memver_1', 'memstore_old', 'mem_1', 'created', '/kept', 'a', 1, 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb', now(), 1),
			('memver_2', 'memstore_old', 'mem_1', 'modified', '/kept', 'b', 1, '3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d', now(), 2)`,
		`INSERT INTO version_seqs (store_id, last) VALUES ('memstore_old', 2)`)
	execAll(t, c, q)
	db := openDBOn(t, testURL(t), schema, postgres.Options{})
	if have, known, err := db.SchemaVersion(ctx); err != nil || have != known || have < 8 {
		t.Fatalf("SchemaVersion after migrating = %d of %d, %v", have, known, err)
	}
	coretest.LegacyHistory(t, db, "wrkspc_old", "memstore_old", 2, []string{"/kept"})
}
