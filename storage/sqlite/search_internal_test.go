package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// searchPaths runs MemorySearch for q over workspace "w" and returns the
// hits' "store:path", sorted. (A bare last word is a prefix: quote it for
// a whole word.)
func searchPaths(t *testing.T, db *DB, q string) []string {
	t.Helper()
	sq, err := trove.ParseSearchQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	err = db.ReadSearch(context.Background(), func(tx storage.Tx) error {
		hits, err := tx.MemorySearch(context.Background(), storage.MemorySearchParams{WorkspaceID: "w", Query: sq})
		for _, h := range hits {
			out = append(out, h.Memory.StoreID+":"+h.Memory.Path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	slices.Sort(out)
	return out
}

// TestMigration0007IndexesExistingMemories: a database at schema version 1
// with memories (one holding a NUL byte) is searchable after migrating,
// and the triggers then keep the index in step.
func TestMigration0007IndexesExistingMemories(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trove.db")
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", dsn(path, writerParams))
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{ms[0].sql,
		`CREATE TABLE schema_version (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
		`INSERT INTO schema_version VALUES (1, '0001_init.sql', 0)`,
		`INSERT INTO stores (id, workspace_id, name, created_at, updated_at) VALUES ('memstore_a', 'w', 'a', 0, 0), ('memstore_b', 'w', 'b', 0, 0)`,
		`INSERT INTO memories (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at) VALUES
			('mem_1', 'memstore_a', '/notes/alpha.md', 'first words', 0, '', 'v1', 0, 0),
			('mem_2', 'memstore_a', '/notes/beta.md', 'second' || char(0) || 'words', 0, '', 'v2', 0, 0),
			('mem_3', 'memstore_b', '/gamma.md', 'third', 0, '', 'v3', 0, 0)`,
	}
	for _, q := range stmts {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	db, err := Open(ctx, path, Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for q, want := range map[string][]string{
		"words":  {"memstore_a:/notes/alpha.md", "memstore_a:/notes/beta.md"},
		"notes":  {"memstore_a:/notes/alpha.md", "memstore_a:/notes/beta.md"},
		"third":  {"memstore_b:/gamma.md"},
		"second": {"memstore_a:/notes/beta.md"},
	} {
		if diff := cmp.Diff(want, searchPaths(t, db, q)); diff != "" {
			t.Errorf("after migration, search %q (-want +got):\n%s", q, diff)
		}
	}
	if err := db.Write(ctx, func(tx storage.Tx) error {
		if err := tx.MemoryDelete(ctx, "memstore_a", "mem_1"); err != nil {
			return err
		}
		c := "third again"
		return tx.MemoryUpdate(ctx, &trove.Memory{ID: "mem_2", StoreID: "memstore_a", Path: "/moved.md", Content: &c, VersionID: "v4", UpdatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string][]string{
		"words": {},
		"notes": {},
		"third": {"memstore_a:/moved.md", "memstore_b:/gamma.md"},
	} {
		if diff := cmp.Diff(want, searchPaths(t, db, q)); diff != "" {
			t.Errorf("after a delete and an update, search %q (-want +got):\n%s", q, diff)
		}
	}
}

// TestSearchSurvivesVacuum: the index is keyed by the memories' implicit
// rowids, so it relies on VACUUM keeping them; after deletes (holes in the
// rowids) and a VACUUM, search still finds exactly the right memories, and
// updates and deletes still reach the right index rows.
func TestSearchSurvivesVacuum(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openInternal(t, Options{})
	if err := db.Write(ctx, func(tx storage.Tx) error {
		return tx.StoreInsert(ctx, &trove.Store{ID: "memstore_v", WorkspaceID: "w", Name: "v", Metadata: map[string]string{}})
	}); err != nil {
		t.Fatal(err)
	}
	mem := func(i int, content string) *trove.Memory {
		return &trove.Memory{ID: fmt.Sprintf("mem_%03d", 300-i), StoreID: "memstore_v", Path: fmt.Sprintf("/m%03d", i),
			Content: &content, VersionID: "v", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	}
	if err := db.Write(ctx, func(tx storage.Tx) error {
		for i := range 200 {
			if err := tx.MemoryInsert(ctx, mem(i, fmt.Sprintf("word%d common", i))); err != nil {
				return err
			}
		}
		for i := 0; i < 200; i += 3 {
			if err := tx.MemoryDelete(ctx, "memstore_v", mem(i, "").ID); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	busy := fmt.Sprintf("_busy_timeout=%d", DefaultBusyTimeout.Milliseconds())
	raw, err := sql.Open("sqlite", dsn(db.Path(), append([]string{busy}, writerParams...)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, "VACUUM"); err != nil {
		t.Fatalf("VACUUM: %v", err)
	}
	raw.Close()
	for i := range 200 {
		want := []string{fmt.Sprintf("memstore_v:/m%03d", i)}
		if i%3 == 0 {
			want = []string{}
		}
		if diff := cmp.Diff(want, searchPaths(t, db, fmt.Sprintf(`"word%d"`, i))); diff != "" {
			t.Fatalf("after VACUUM, word%d (-want +got):\n%s", i, diff)
		}
	}
	if got := len(searchPaths(t, db, "common")); got != 133 {
		t.Errorf("after VACUUM, common: %d hits, want 133", got)
	}
	if err := db.Write(ctx, func(tx storage.Tx) error {
		if err := tx.MemoryUpdate(ctx, mem(1, "changed")); err != nil {
			return err
		}
		return tx.MemoryDelete(ctx, "memstore_v", mem(2, "").ID)
	}); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string][]string{`"word1"`: {}, "changed": {"memstore_v:/m001"}, `"word2"`: {}, `"word4"`: {"memstore_v:/m004"}} {
		if diff := cmp.Diff(want, searchPaths(t, db, q)); diff != "" {
			t.Errorf("after VACUUM and writes, %s (-want +got):\n%s", q, diff)
		}
	}
}

// TestSearchPagingThroughTies: rankSearch's ranking reads memory IDs for
// its top rows only and sets aside a run of equal scores at its end; pages
// of every size must still follow (score descending, ID ascending) exactly,
// through runs of equal scores longer than a page, whether or not the
// database holds memories outside the searched stores (the statement
// without and with the store filter).
func TestSearchPagingThroughTies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openInternal(t, Options{})
	q, err := trove.ParseSearchQuery(`"needle"`)
	if err != nil {
		t.Fatal(err)
	}
	insert := func(ws, store string, n int) {
		t.Helper()
		if err := db.Write(ctx, func(tx storage.Tx) error {
			if err := tx.StoreInsert(ctx, &trove.Store{ID: store, WorkspaceID: ws, Name: store, Metadata: map[string]string{}}); err != nil {
				return err
			}
			for i := range n {
				// IDs in another order than the rowids; three runs of n/3
				// equal scores (one, two or three needles).
				c := strings.Repeat("needle ", 1+i%3) + "hay"
				m := &trove.Memory{ID: fmt.Sprintf("mem_%s_%03d", store, (i*37)%n), StoreID: store, Path: fmt.Sprintf("/m%03d", i),
					Content: &c, VersionID: "v", CreatedAt: time.Now(), UpdatedAt: time.Now()}
				if err := tx.MemoryInsert(ctx, m); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	search := func(p storage.MemorySearchParams) []storage.MemorySearchHit {
		t.Helper()
		var hits []storage.MemorySearchHit
		if err := db.ReadSearch(ctx, func(tx storage.Tx) error {
			var err error
			hits, err = tx.MemorySearch(ctx, p)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return hits
	}
	ids := func(hits []storage.MemorySearchHit) []string {
		out := []string{}
		for _, h := range hits {
			out = append(out, h.Memory.ID)
		}
		return out
	}
	check := func(name string, p storage.MemorySearchParams) {
		t.Helper()
		all := search(p) // Limit 0: every match, no run set aside
		if len(all) != 60 {
			t.Fatalf("%s: %d hits, want 60", name, len(all))
		}
		scores := map[float64]bool{}
		for i, h := range all {
			scores[h.Score] = true
			if i > 0 && (all[i-1].Score < h.Score || all[i-1].Score == h.Score && all[i-1].Memory.ID >= h.Memory.ID) {
				t.Fatalf("%s: order broken at %d: (%v, %s) then (%v, %s)", name, i, all[i-1].Score, all[i-1].Memory.ID, h.Score, h.Memory.ID)
			}
		}
		if len(scores) != 3 {
			t.Fatalf("%s: %d distinct scores, want 3", name, len(scores))
		}
		// Page boundaries inside each run of ties (3, 4, 7: together most
		// positions of a run of 20), at a run's edge (20, 21) and one short
		// of the end (59). A limit of 1 (a boundary at every position, 60
		// searches a check) was half of the test's time under -race.
		for _, limit := range []int{3, 4, 7, 20, 21, 59} {
			var paged []storage.MemorySearchHit
			p := p
			p.After, p.Limit = nil, limit
			for len(paged) <= len(all) {
				page := search(p)
				paged = append(paged, page...)
				if len(page) < limit {
					break
				}
				last := page[len(page)-1]
				p.After = &storage.SearchPosition{Score: last.Score, ID: last.Memory.ID}
			}
			if diff := cmp.Diff(ids(all), ids(paged)); diff != "" {
				t.Errorf("%s, pages of %d (-all +paged):\n%s", name, limit, diff)
			}
		}
	}
	insert("w", "memstore_a", 60)
	check("one store, all of the database", storage.MemorySearchParams{WorkspaceID: "w", Query: q})
	check("one store named, all of the database", storage.MemorySearchParams{WorkspaceID: "w", StoreIDs: []string{"memstore_a"}, Query: q})
	insert("w2", "memstore_b", 60)
	check("one workspace of two", storage.MemorySearchParams{WorkspaceID: "w", Query: q})
	check("one store named of two", storage.MemorySearchParams{WorkspaceID: "w", StoreIDs: []string{"memstore_a"}, Query: q})
	check("the other workspace", storage.MemorySearchParams{WorkspaceID: "w2", Query: q})
	for _, h := range search(storage.MemorySearchParams{WorkspaceID: "w2", Query: q}) {
		if h.Memory.StoreID != "memstore_b" {
			t.Fatalf("workspace w2 found %s of %s", h.Memory.ID, h.Memory.StoreID)
		}
	}
}

// TestScopedSearchMatchesPlain: a search of one store among others reads
// the scoped columns (migration 0019: words Go splits and folds, under the
// store's tag) and a search of every store the plain ones (words FTS5's
// unicode61 splits and folds); both must find the same memories of the
// store, for every word of text in many scripts, as a word and as a
// prefix, and as phrases.
func TestScopedSearchMatchesPlain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openInternal(t, Options{})
	texts := []string{
		"Café naïve résumé, CAFÉ",
		"Cafe\u0301 decomposed cafe",
		"İstanbul ıstakoz ISTANBUL istanbul",
		"Straße STRASSE strasse",
		"東京タワー 北京 東京",
		"Ελληνικά ΣΟΦΊΑ σοφία σοφιας",
		"emoji 😀party ☃snow",
		"x²³ ½ 12abc 3.14 v1.2.3",
		"ǅungla ǆungla ﬁle file",
		"Ⅻ roman ⅻ",
		"ქართული ᲥᲐᲠᲗᲣᲚᲘ",
		"ᏣᎳᎩ ꮳꮃꭹ",
		"\ue000private \ue0001xword",
		"nul\x00byte after",
		"Ǆ ǅ ǆ Ⱥ ⱥ ẞ ß",
		"𐐀𐐨 Deseret 𞤀𞤢 Adlam",
		"ꟂꟃꟐ newer letters ᲀ",
		"snake_case kebab-case dot.path /notes/a.md",
		"ا لعربية مرحبا עברית",
		"हिन्दी देवनागरी ภาษาไทย",
	}
	for i, s := range []string{"memstore_a", "memstore_b"} {
		if err := db.Write(ctx, func(tx storage.Tx) error {
			if err := tx.StoreInsert(ctx, &trove.Store{ID: s, WorkspaceID: "w", Name: s, Metadata: map[string]string{}}); err != nil {
				return err
			}
			for j, text := range texts {
				if i == 1 && j%2 == 0 { // store b holds some of the texts too
					continue
				}
				m := &trove.Memory{ID: fmt.Sprintf("mem_%d_%02d", i, j), StoreID: s, Path: fmt.Sprintf("/t%02d/%s.md", j, strings.Fields(text)[0]),
					Content: &text, VersionID: "v", CreatedAt: time.Now(), UpdatedAt: time.Now()}
				if err := tx.MemoryInsert(ctx, m); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	search := func(q trove.SearchQuery, stores []string) []string {
		t.Helper()
		var out []string
		err := db.ReadSearch(ctx, func(tx storage.Tx) error {
			hits, err := tx.MemorySearch(ctx, storage.MemorySearchParams{WorkspaceID: "w", Query: q, StoreIDs: stores})
			for _, h := range hits {
				if h.Memory.StoreID == "memstore_a" {
					out = append(out, h.Memory.Path)
				}
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	queries := map[string]bool{}
	for _, text := range texts {
		words := trove.SearchWords(text)
		for i, w := range words {
			queries[`"`+w+`"`] = true
			if r := []rune(w); len(r) > 3 {
				queries[string(r[:len(r)/2])] = true // a bare last word of 2 or more: a prefix
			}
			if i > 0 {
				queries[`"`+words[i-1]+" "+w+`"`] = true
			}
		}
		if up := strings.ToUpper(text); slices.Equal(trove.SearchWords(up), words) { // not ı, ᲀ: upper case loses them
			queries[up] = true
		}
	}
	for q := range queries {
		sq, err := trove.ParseSearchQuery(q)
		if err != nil || len(sq.Terms) == 0 {
			continue
		}
		plain := search(sq, nil)
		if len(plain) == 0 {
			t.Errorf("search %q of every store found nothing in store a", q)
		}
		if diff := cmp.Diff(plain, search(sq, []string{"memstore_a"})); diff != "" {
			t.Errorf("search %q: store a alone (+) against every store (-):\n%s", q, diff)
		}
	}
}

// TestSearchManyNamedStores: a search of named stores, or of every store
// of a workspace while another workspace holds memories, reads the scoped
// columns, unless the stores times the terms pass maxScopedPhrases; then
// the plain columns filtered by store_id. Both find exactly the searched
// stores' memories of the caller's workspace (every store: not an
// archived one).
func TestSearchManyNamedStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openInternal(t, Options{})
	var ids []string
	for s := range 12 {
		id, ws := fmt.Sprintf("memstore_%02d", s), "w"
		if s == 11 {
			ws = "x" // another workspace's store: never found from w
		}
		var archived *time.Time
		if s == 10 {
			now := time.Now()
			archived = &now // searched only when named
		}
		ids = append(ids, id)
		if err := db.Write(ctx, func(tx storage.Tx) error {
			if err := tx.StoreInsert(ctx, &trove.Store{ID: id, WorkspaceID: ws, Name: id, Metadata: map[string]string{}, ArchivedAt: archived}); err != nil {
				return err
			}
			for i := range 3 {
				c := "one two three four five six seven eight"
				m := &trove.Memory{ID: fmt.Sprintf("mem_%02d_%d", s, i), StoreID: id, Path: fmt.Sprintf("/m%d", i), Content: &c, VersionID: "v", CreatedAt: time.Now(), UpdatedAt: time.Now()}
				if err := tx.MemoryInsert(ctx, m); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		query  string
		stores []string
		want   []string
		scoped bool // the way searchWhere must take
	}{
		{"scoped", `one two three four five six seven "eight"`, []string{ids[1], ids[11]}, []string{ids[1]}, true},
		{"filtered", `one two three four five six seven "eight"`, append(slices.Clone(ids[2:11]), ids[11]), ids[2:11], false},
		{"scoped, one term", `"eight"`, append(slices.Clone(ids[2:11]), ids[11]), ids[2:11], true},
		{"every store, scoped", `"eight"`, nil, ids[:10], true},
		{"every store, filtered", `one two three four five six seven "eight"`, nil, ids[:10], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := trove.ParseSearchQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			p := storage.MemorySearchParams{WorkspaceID: "w", Query: q, StoreIDs: tc.stores}
			err = db.ReadSearch(ctx, func(stx storage.Tx) error {
				// The way: the scoped columns under the stores' keys, no
				// store_id filter; or the plain columns and the filter.
				w, _, err := stx.(*tx).searchWhere(ctx, p)
				if err != nil {
					return err
				}
				match, where := w.args[0].(string), strings.Join(w.conds, " AND ")
				if scoped, filtered := strings.HasPrefix(match, "{spath scontent}"), strings.Contains(where, "store_id IN"); scoped != tc.scoped || filtered == tc.scoped {
					t.Errorf("MATCH %q WHERE %s: scoped columns %v, store_id filter %v; want scoped %v", match, where, scoped, filtered, tc.scoped)
				}
				hits, err := stx.MemorySearch(ctx, p)
				for _, h := range hits {
					got[h.Memory.StoreID]++
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]int{}
			for _, id := range tc.want {
				want[id] = 3
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("hits by store (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSearchBacklogLogged: opening a database whose search queue holds a
// backlog (what a migration that rebuilds the index leaves: every memory)
// says so in the log, with the count, so that a first search waiting for
// it is explained; a queue under searchBacklogNote says nothing.
func TestSearchBacklogLogged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		queued int
		want   bool
	}{
		{"backlog", searchBacklogNote, true},
		{"under the note", searchBacklogNote - 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "trove.db")
			db, err := Open(ctx, path, Options{AutoMigrate: true})
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			raw, err := sql.Open("sqlite", dsn(path, writerParams))
			if err != nil {
				t.Fatal(err)
			}
			// Entries for rows that do not exist: a catch-up drops them.
			if _, err := raw.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
				INSERT INTO memories_search_queue (mrowid) SELECT i FROM n`, tc.queued); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			var log strings.Builder
			db, err = Open(ctx, path, Options{AutoMigrate: true, SearchIndexIdle: -1, SearchIndexLag: -1,
				Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.CatchUpSearch(ctx); err != nil { // after the committer's first look
				t.Fatal(err)
			}
			db.Close()
			got := strings.Contains(log.String(), fmt.Sprintf("search index has memories to index (after an upgrade or a bulk load); they are indexed while no write comes, and a search waits until they are\" queued=%d", tc.queued))
			if got != tc.want {
				t.Errorf("%d queued: logged %v, want %v; the log:\n%s", tc.queued, got, tc.want, log.String())
			}
		})
	}
}
