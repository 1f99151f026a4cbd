package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
)

// TestMigration0010SameSearchValues: migration 0010's trove_search_words
// gives the text 0007's gave for every code point, so the search values
// that a schema at version 9 stored are the ones 0010 computes: they are
// unchanged by the migration and by recomputing them afterwards, and
// searches find the same memories.
func TestMigration0010SameSearchValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	c := adminConn(t)
	q := schemaAt(t, schema, 9)
	q = append(q,
		`INSERT INTO stores (id, workspace_id, name, created_at, updated_at) VALUES ('memstore_a', 'w', 'a', now(), now())`,
		`INSERT INTO memories (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at) VALUES
			('mem_1', 'memstore_a', '/notes/v1.2_release-notes.md', convert_to(E'e-mail: ann@example.org; {a|b} [c]\\d^e~f`+"`"+`g\'h"i (x+y)*z=1,5% #tag $5 & <b>!?', 'UTF8'), 0, '', 'v1', now(), now()),
			('mem_2', 'memstore_a', '/übung/Ça/日本語.md', '\x436166c3a92c206e61c3af76652e2e2e00c39c62756e67005a65696c65', 0, '', 'v2', now(), now())`,
	)
	execAll(t, c, q)
	// The stored vectors: memories.search until 0018, memories_fts since.
	values := func(table string) map[string]string {
		t.Helper()
		col := "id"
		if table == "memories_fts" {
			col = "memory_id"
		}
		return queryPairs(t, c, "SELECT "+col+", search::text FROM "+schema+"."+table)
	}
	before := values("memories")
	if len(before) != 2 {
		t.Fatalf("before migrating: %d memories, want 2", len(before))
	}

	db := openDBOn(t, testURL(t), schema, postgres.Options{})
	var version int
	if err := c.QueryRow(ctx, "SELECT max(version) FROM "+schema+".schema_version").Scan(&version); err != nil || version < 10 {
		t.Fatalf("schema version %d (%v), want at least 10", version, err)
	}
	// Every code point but the surrogates, 4,096 at a time, through the
	// new function and through 0007's translate.
	var differ int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM (
			SELECT string_agg(chr(i), '' ORDER BY i) AS s FROM generate_series(1, 1114111) i
			WHERE i NOT BETWEEN 55296 AND 57343 GROUP BY i / 4096) b
		WHERE `+schema+`.trove_search_words(s) IS DISTINCT FROM translate(s, E'!"#$%&\'()*+,-./:;<=>?@[\\]^_`+"`"+`{|}~', repeat(' ', 32))`).Scan(&differ); err != nil {
		t.Fatal(err)
	}
	if differ != 0 {
		t.Errorf("trove_search_words differs from 0007's in %d blocks of 4,096 code points", differ)
	}
	if diff := cmp.Diff(before, values("memories_fts")); diff != "" {
		t.Errorf("search values changed by migrating (-before +after):\n%s", diff)
	}
	// Recompute every vector with the current function (0010's words
	// inside 0018's trove_search_vector): queue every memory, catch up.
	if _, err := c.Exec(ctx, "DELETE FROM "+schema+".memories_fts; INSERT INTO "+schema+".memories_search_queue (memory_id) SELECT id FROM "+schema+".memories"); err != nil {
		t.Fatal(err)
	}
	if err := db.CatchUpSearch(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, values("memories_fts")); diff != "" {
		t.Errorf("search values recomputed by 0010's function differ from 0007's (-0007 +0010):\n%s", diff)
	}
	for query, want := range map[string][]string{
		"example": {"/notes/v1.2_release-notes.md"},
		"release": {"/notes/v1.2_release-notes.md"},
		"z":       {"/notes/v1.2_release-notes.md"},
		"übung":   {"/übung/Ça/日本語.md"},
		"zeile":   {"/übung/Ça/日本語.md"},
		"café":    {"/übung/Ça/日本語.md"},
	} {
		sq, err := trove.ParseSearchQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		if err := db.Read(ctx, func(tx storage.Tx) error {
			hits, err := tx.MemorySearch(ctx, storage.MemorySearchParams{WorkspaceID: "w", Query: sq})
			for _, h := range hits {
				got = append(got, h.Memory.Path)
			}
			return err
		}); err != nil {
			t.Fatalf("search %q: %v", query, err)
		}
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("search %q (-want +got):\n%s", query, diff)
		}
	}
}
