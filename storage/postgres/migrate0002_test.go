package postgres_test

import (
	"context"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
)

// TestMigration0002BackfillsMemoryCount: a schema at version 1 with
// memories gets exact per-store counters from migration 0002, which the
// trigger then keeps (inserts, deletes, the cascade of a store delete).
func TestMigration0002BackfillsMemoryCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	c := adminConn(t)
	v1, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SET LOCAL search_path TO " + schema,
		string(v1),
		`CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO schema_version (version, name) VALUES (1, '0001_init.sql')`,
		`INSERT INTO stores (id, workspace_id, name, created_at, updated_at) VALUES
			('memstore_a', 'w', 'a', now(), now()), ('memstore_b', 'w', 'b', now(), now()), ('memstore_c', 'w', 'c', now(), now())`,
		`INSERT INTO memories (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at) VALUES
			('mem_1', 'memstore_a', '/1', '', 0, '', 'v1', now(), now()), ('mem_2', 'memstore_a', '/2', '', 0, '', 'v2', now(), now()),
			('mem_3', 'memstore_a', '/3', '', 0, '', 'v3', now(), now()), ('mem_4', 'memstore_b', '/1', '', 0, '', 'v4', now(), now())`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	db := openDBOn(t, testURL(t), schema, postgres.Options{})
	counts := func() map[string]int {
		got := map[string]int{}
		if err := db.Read(ctx, func(tx storage.Tx) error {
			for _, id := range []string{"memstore_a", "memstore_b", "memstore_c"} {
				n, err := tx.MemoryCount(ctx, id)
				if err != nil {
					return err
				}
				got[id] = n
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := counts(), map[string]int{"memstore_a": 3, "memstore_b": 1, "memstore_c": 0}; !maps.Equal(got, want) {
		t.Errorf("after migration: %v, want %v", got, want)
	}
	if err := db.Write(ctx, func(tx storage.Tx) error {
		if err := tx.MemoryDelete(ctx, "memstore_a", "mem_1"); err != nil {
			return err
		}
		now := time.Now()
		c := "x"
		if err := tx.MemoryInsert(ctx, &trove.Memory{ID: "mem_5", StoreID: "memstore_c", Path: "/5", Content: &c, SizeBytes: 1,
			VersionID: "v5", CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		return tx.StoreDelete(ctx, "memstore_b")
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := counts(), map[string]int{"memstore_a": 2, "memstore_b": 0, "memstore_c": 1}; !maps.Equal(got, want) {
		t.Errorf("after a delete, an insert and a store delete: %v, want %v", got, want)
	}
}
