package postgres_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
)

// TestMigration0020CarriesStores: migration 0020 rebuilds memories_fts
// with each memory's store: the vectors an indexer had stored at version
// 19 keep their values and gain their memories' stores, a row whose memory
// is gone is dropped, and a search of one store finds its own memories
// from the rebuilt table (nothing queued, so from memories_fts alone).
func TestMigration0020CarriesStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	c := adminConn(t)
	q := append(schemaAt(t, schema, 19),
		`INSERT INTO stores (id, workspace_id, name, created_at, updated_at) VALUES
			('memstore_a', 'w', 'a', now(), now()), ('memstore_b', 'w', 'b', now(), now())`,
		`INSERT INTO memories (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at) VALUES
			('mem_1', 'memstore_a', '/one.md', convert_to('shared word one', 'UTF8'), 15, '', 'v1', now(), now()),
			('mem_2', 'memstore_b', '/two.md', convert_to('shared word two', 'UTF8'), 15, '', 'v2', now(), now())`,
		// What the indexer of version 19 leaves: vectors, an empty queue,
		// and a row it had not yet removed for a deleted memory.
		`INSERT INTO memories_fts (memory_id, search) SELECT id, trove_search_vector(path, content) FROM memories`,
		`INSERT INTO memories_fts (memory_id, search) VALUES ('mem_gone', to_tsvector('simple', 'shared'))`,
		`DELETE FROM memories_search_queue`,
	)
	execAll(t, c, q)
	vectors := func(withStore bool) map[string]string {
		t.Helper()
		col := "''"
		if withStore {
			col = "store_id"
		}
		return queryPairs(t, c, "SELECT memory_id, "+col+" || ' ' || search::text FROM "+schema+".memories_fts")
	}
	before := vectors(false)

	db := openDBOn(t, testURL(t), schema, postgres.Options{SearchIndexDelay: -1})
	want := map[string]string{"mem_1": "memstore_a" + before["mem_1"], "mem_2": "memstore_b" + before["mem_2"]}
	if diff := cmp.Diff(want, vectors(true)); diff != "" {
		t.Errorf("memories_fts after 0020 (-want +got):\n%s", diff)
	}
	sq, err := trove.ParseSearchQuery("shared")
	if err != nil {
		t.Fatal(err)
	}
	for store, wantID := range map[string]string{"memstore_a": "mem_1", "memstore_b": "mem_2"} {
		var got []string
		if err := db.Read(ctx, func(tx storage.Tx) error {
			hits, err := tx.MemorySearch(ctx, storage.MemorySearchParams{WorkspaceID: "w", StoreIDs: []string{store}, Query: sq})
			for _, h := range hits {
				got = append(got, h.Memory.ID)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{wantID}, got); diff != "" {
			t.Errorf("search of %s (-want +got):\n%s", store, diff)
		}
	}
}
