package postgres_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
)

// TestMigration0004NumbersVersions: a schema at version 3 with versions
// gets each store's history numbered 1..n in the order versions were listed
// until then ((created_at, id)), and new versions go on from n.
func TestMigration0004NumbersVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	c := adminConn(t)
	q := []string{"SET LOCAL search_path TO " + schema}
	for _, f := range []string{"0001_init.sql", "0002_memory_count.sql", "0003_drop_memories_version.sql"} {
		b, err := os.ReadFile("migrations/" + f)
		if err != nil {
			t.Fatal(err)
		}
		q = append(q, string(b))
	}
	q = append(q,
		`CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO schema_version (version, name) VALUES (1, '0001_init.sql'), (2, '0002_memory_count.sql'), (3, '0003_drop_memories_version.sql')`,
		`INSERT INTO stores (id, workspace_id, name, created_at, updated_at) VALUES
			('memstore_a', 'w', 'a', now(), now()), ('memstore_b', 'w', 'b', now(), now()), ('memstore_c', 'w', 'c', now(), now())`,
		// Inserted out of order: b's time is first, then ties broken by id.
		`INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256, created_at) VALUES
			('memver_3', 'memstore_a', 'mem_1', 'modified', '/1', '', 0, '', '2026-01-01T00:00:20Z'),
			('memver_1', 'memstore_a', 'mem_1', 'created', '/1', '', 0, '', '2026-01-01T00:00:10Z'),
			('memver_2b', 'memstore_a', 'mem_2', 'created', '/2', '', 0, '', '2026-01-01T00:00:15Z'),
			('memver_2a', 'memstore_a', 'mem_3', 'created', '/3', '', 0, '', '2026-01-01T00:00:15Z'),
			('memver_9', 'memstore_b', 'mem_4', 'created', '/1', '', 0, '', '2026-01-01T00:00:05Z')`)
	execAll(t, c, q)
	db := openDBOn(t, testURL(t), schema, postgres.Options{})
	type numbered struct {
		ID  string
		Seq int64
	}
	history := func(storeID string) (out []numbered, last int64) {
		if err := db.Read(ctx, func(tx storage.Tx) error {
			vs, err := tx.VersionScan(ctx, storage.VersionScanParams{StoreID: storeID})
			if err != nil {
				return err
			}
			for _, v := range vs {
				out = append(out, numbered{v.ID, v.Seq})
			}
			last, err = tx.StoreSeq(ctx, storeID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return out, last
	}
	gotA, lastA := history("memstore_a")
	wantA := []numbered{{"memver_1", 1}, {"memver_2a", 2}, {"memver_2b", 3}, {"memver_3", 4}}
	if !slices.Equal(gotA, wantA) || lastA != 4 {
		t.Errorf("store a after migration: %v (last %d), want %v (last 4)", gotA, lastA, wantA)
	}
	if gotB, lastB := history("memstore_b"); !slices.Equal(gotB, []numbered{{"memver_9", 1}}) || lastB != 1 {
		t.Errorf("store b after migration: %v (last %d), want memver_9 as 1", gotB, lastB)
	}
	if gotC, lastC := history("memstore_c"); len(gotC) != 0 || lastC != 0 {
		t.Errorf("store c after migration: %v (last %d), want nothing", gotC, lastC)
	}
	v := &trove.MemoryVersion{ID: "memver_new", StoreID: "memstore_a", MemoryID: "mem_1", Operation: trove.OpDeleted,
		Path: new("/1"), CreatedAt: time.Now()}
	if err := db.Write(ctx, func(tx storage.Tx) error { return tx.VersionInsert(ctx, v) }); err != nil {
		t.Fatal(err)
	}
	if v.Seq != 5 {
		t.Errorf("first version after migration numbered %d, want 5", v.Seq)
	}
}
