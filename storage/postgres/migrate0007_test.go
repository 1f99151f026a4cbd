package postgres_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
)

// TestMigration0007IndexesExistingMemories: a schema at version 1 with
// memories (one holding NUL bytes, which text cannot) is searchable after
// migrating, and the generated column then follows deletes and updates.
func TestMigration0007IndexesExistingMemories(t *testing.T) {
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
			('memstore_a', 'w', 'a', now(), now()), ('memstore_b', 'w', 'b', now(), now())`,
		`INSERT INTO memories (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at) VALUES
			('mem_1', 'memstore_a', '/notes/alpha.md', 'first words', 0, '', 'v1', now(), now()),
			('mem_2', 'memstore_a', '/notes/beta.md', '\x7365636f6e6400776f726473000000', 0, '', 'v2', now(), now()),
			('mem_3', 'memstore_b', '/gamma.md', 'third', 0, '', 'v3', now(), now())`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	db := openDBOn(t, testURL(t), schema, postgres.Options{})
	find := func(q string) []string {
		t.Helper()
		sq, err := trove.ParseSearchQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		if err := db.Read(ctx, func(tx storage.Tx) error {
			hits, err := tx.MemorySearch(ctx, storage.MemorySearchParams{WorkspaceID: "w", Query: sq})
			for _, h := range hits {
				out = append(out, h.Memory.StoreID+":"+h.Memory.Path)
			}
			return err
		}); err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		slices.Sort(out)
		return out
	}
	for q, want := range map[string][]string{
		"words":  {"memstore_a:/notes/alpha.md", "memstore_a:/notes/beta.md"}, // "second\x00words\x00\x00\x00"
		"notes":  {"memstore_a:/notes/alpha.md", "memstore_a:/notes/beta.md"},
		"third":  {"memstore_b:/gamma.md"},
		"second": {"memstore_a:/notes/beta.md"},
	} {
		if diff := cmp.Diff(want, find(q)); diff != "" {
			t.Errorf("after migration, search %q (-want +got):\n%s", q, diff)
		}
	}
	if err := db.Write(ctx, func(tx storage.Tx) error {
		if err := tx.MemoryDelete(ctx, "memstore_a", "mem_1"); err != nil {
			return err
		}
		c := "third again\x00"
		return tx.MemoryUpdate(ctx, &trove.Memory{ID: "mem_2", StoreID: "memstore_a", Path: "/moved.md", Content: &c, VersionID: "v4", UpdatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string][]string{
		"words": {},
		"notes": {},
		"third": {"memstore_a:/moved.md", "memstore_b:/gamma.md"},
	} {
		if diff := cmp.Diff(want, find(q)); diff != "" {
			t.Errorf("after a delete and an update, search %q (-want +got):\n%s", q, diff)
		}
	}
}
