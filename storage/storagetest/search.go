package storagetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- search ----

// mustQuery parses q or fails the test.
func mustQuery(t *testing.T, q string) trove.SearchQuery {
	t.Helper()
	sq, err := trove.ParseSearchQuery(q)
	if err != nil {
		t.Fatalf("ParseSearchQuery(%q): %v", q, err)
	}
	return sq
}

// search runs MemorySearch in a storage.ReadSearch and returns its hits.
func search(t *testing.T, d storage.Driver, p storage.MemorySearchParams) []storage.MemorySearchHit {
	t.Helper()
	hits, err := trySearch(context.Background(), d, p)
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	return hits
}

// trySearch runs MemorySearch in a storage.ReadSearch.
func trySearch(ctx context.Context, d storage.Driver, p storage.MemorySearchParams) ([]storage.MemorySearchHit, error) {
	var hits []storage.MemorySearchHit
	err := storage.ReadSearch(ctx, d, func(tx storage.Tx) error {
		var err error
		hits, err = tx.MemorySearch(ctx, p)
		return err
	})
	return hits, err
}

func hitPaths(hits []storage.MemorySearchHit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, h.Memory.Path)
	}
	return out
}

// testMemorySearchMatching: what a query matches — every word, whole words
// case-insensitively, phrases in order, the prefix word, words of the path
// and of the content, punctuation as a separator, content with NUL and
// non-ASCII text — and the hit carries the memory with its content.
func testMemorySearchMatching(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	m1, _ := insertMemory(t, d, s.ID, "/notes/kubernetes-setup.md", "How to install the cluster.\nUse kubectl apply.", secs(1))
	insertMemory(t, d, s.ID, "/notes/cooking.md", "Bake the bread at 220 degrees; the CLUSTER of grapes goes on top.", secs(2))
	insertMemory(t, d, s.ID, "/journal/2026-03-15.md", "Met Zoë at the café.\x00Talked about Größe and naïve plans.", secs(3))
	insertMemory(t, d, s.ID, "/people/alice.md", "alice@example.com works on project_x (v1.2) with bob's team", secs(4))

	cases := []struct {
		query string
		want  []string // sorted by path; order is checked in the ranking test
	}{
		{"cluster", []string{"/notes/cooking.md", "/notes/kubernetes-setup.md"}},
		{"CLUSTER install", []string{"/notes/kubernetes-setup.md"}},
		{"kubernetes", []string{"/notes/kubernetes-setup.md"}},                         // a path word
		{"setup cluster", []string{"/notes/kubernetes-setup.md"}},                      // path and content words together
		{"kub", []string{"/notes/kubernetes-setup.md"}},                                // the last word as a prefix
		{"kub cluster", []string{}},                                                    // only the last word is a prefix
		{`"the cluster"`, []string{"/notes/cooking.md", "/notes/kubernetes-setup.md"}}, // phrase
		{`"install the"`, []string{"/notes/kubernetes-setup.md"}},                      // phrase
		{`"the install"`, []string{}},                                                  // phrase order
		{`"the cluster of grapes"`, []string{"/notes/cooking.md"}},                     // longer phrase
		{"bread cluster grapes", []string{"/notes/cooking.md"}},                        // every word must match
		{"bread kubectl", []string{}},                                                  // in different memories: no match
		{"zoë café", []string{"/journal/2026-03-15.md"}},                               // non-ASCII words, diacritics kept
		{"talked größe", []string{"/journal/2026-03-15.md"}},                           // words after a NUL byte
		{"2026", []string{"/journal/2026-03-15.md"}},                                   // numbers in a path
		{"example", []string{"/people/alice.md"}},                                      // e-mail address parts
		{"project x", []string{"/people/alice.md"}},                                    // underscore separates
		{"v1", []string{"/people/alice.md"}},                                           // "v1.2" is v1 and 2
		{"bob", []string{"/people/alice.md"}},                                          // apostrophe separates
		{"clust", []string{"/notes/cooking.md", "/notes/kubernetes-setup.md"}},         // prefix
		{"nothing", []string{}},
	}
	for _, c := range cases {
		hits := search(t, d, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: mustQuery(t, c.query), Limit: 10})
		got := hitPaths(hits)
		slices.Sort(got)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("search %q (-want +got):\n%s", c.query, diff)
		}
	}
	// A hit is the whole memory, content included, with a positive score.
	hits := search(t, d, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: mustQuery(t, "kubectl"), Limit: 10})
	if len(hits) != 1 {
		t.Fatalf("search kubectl: %d hits, want 1", len(hits))
	}
	if diff := cmp.Diff(*m1, hits[0].Memory); diff != "" {
		t.Errorf("hit memory (-want +got):\n%s", diff)
	}
	if hits[0].Score <= 0 {
		t.Errorf("hit score %v, want > 0", hits[0].Score)
	}
	// Words with characters of FTS5 or tsquery syntax (which ParseSearchQuery
	// never produces) are quoted, not interpreted: no error, no match.
	for _, w := range []string{`zz"zz`, `zz'zz`, `zz\zz`, `*`, `zz:*`, `NEAR(zz zz)`, `!zz`, `(`, `zz OR a`} {
		q := trove.SearchQuery{Terms: []trove.SearchTerm{{Words: []string{w}}}}
		if hits := search(t, d, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: q, Limit: 10}); len(hits) != 0 {
			t.Errorf("hostile word %q matched %v", w, hitPaths(hits))
		}
	}
}

// testMemorySearchRanking: a memory about a word ranks above one that
// mentions it once; a match in the path ranks above one in the content;
// keyset paging with After walks the same order without gaps or repeats.
func testMemorySearchRanking(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	filler := " The weather was fine and the meeting ran long as usual."
	insertMemory(t, d, s.ID, "/a/once.md", "We talked about postgres once."+filler+filler, secs(1))
	insertMemory(t, d, s.ID, "/a/often.md", "Postgres tuning: postgres vacuum, postgres indexes, postgres replicas."+filler, secs(2))
	insertMemory(t, d, s.ID, "/a/postgres.md", "Notes on the database we use."+filler+filler, secs(3))
	hits := search(t, d, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: mustQuery(t, "postgres"), Limit: 10})
	got := hitPaths(hits)
	if len(got) != 3 || got[2] != "/a/once.md" {
		t.Errorf("ranking %v: want /a/once.md (one mention in a long text) last", got)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("scores not descending: %v then %v", hits[i-1].Score, hits[i].Score)
		}
	}

	// Paging: 25 memories that match equally and differently, pages of 4.
	for i := range 25 {
		insertMemory(t, d, s.ID, "/p/"+string(rune('a'+i))+".md", strings.Repeat("needle ", 1+i%3)+"hay", secs(10+i))
	}
	all := search(t, d, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: mustQuery(t, "needle"), Limit: 100})
	if len(all) != 25 {
		t.Fatalf("needle: %d hits, want 25", len(all))
	}
	var paged []storage.MemorySearchHit
	var after *storage.SearchPosition
	for i := 0; ; i++ {
		if i > 30 {
			t.Fatal("paging does not end")
		}
		page := search(t, d, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: mustQuery(t, "needle"), After: after, Limit: 4})
		paged = append(paged, page...)
		if len(page) < 4 {
			break
		}
		last := page[len(page)-1]
		after = &storage.SearchPosition{Score: last.Score, ID: last.Memory.ID}
	}
	if diff := cmp.Diff(hitPaths(all), hitPaths(paged)); diff != "" {
		t.Errorf("paged order differs from one page (-one +paged):\n%s", diff)
	}
	// MaxBytes: the hits end after the one whose content takes them past
	// it, in rank order.
	for _, tc := range []struct {
		name string
		max  int
		want int
	}{
		{"one byte", 1, 1},
		{"the first content exactly", len(*all[0].Memory.Content), 2},
		{"past two contents", len(*all[0].Memory.Content) + len(*all[1].Memory.Content) + 1, 3},
		{"all of them", 1 << 20, 25},
	} {
		got := search(t, d, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: mustQuery(t, "needle"), Limit: 100, MaxBytes: tc.max})
		if diff := cmp.Diff(hitPaths(all[:tc.want]), hitPaths(got)); diff != "" {
			t.Errorf("MaxBytes %s (-want +got):\n%s", tc.name, diff)
		}
	}
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.Score < b.Score || a.Score == b.Score && a.Memory.ID > b.Memory.ID {
			t.Errorf("order broken at %d: (%v, %s) then (%v, %s)", i, a.Score, a.Memory.ID, b.Score, b.Memory.ID)
		}
	}
}

// searchCatchUp is a driver whose search index can be brought up to date
// on demand (both drivers: the SQLite and PostgreSQL search queues).
type searchCatchUp interface {
	CatchUpSearch(ctx context.Context) error
}

// testMemorySearchScope: only the workspace's stores, only StoreIDs when
// given (archived ones too), archived stores left out otherwise, and the
// path prefix as a byte prefix.
func testMemorySearchScope(t *testing.T, d storage.Driver) {
	a := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	b := insertStore(t, d, newStore("wrkspc_a", secs(1)))
	arch := newStore("wrkspc_a", secs(2))
	arch.ArchivedAt = timePtr(secs(3))
	insertStore(t, d, arch)
	other := insertStore(t, d, newStore("wrkspc_b", secs(4)))
	for _, st := range []*trove.Store{a, b, arch, other} {
		insertMemory(t, d, st.ID, "/x/shared.md", "shared word", secs(5))
		insertMemory(t, d, st.ID, "/xy/shared.md", "shared word", secs(6))
	}
	stores := func(hits []storage.MemorySearchHit) []string {
		out := []string{}
		for _, h := range hits {
			out = append(out, h.Memory.StoreID+h.Memory.Path)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(xs ...string) []string { slices.Sort(xs); return xs }
	q := mustQuery(t, "shared")
	cases := []struct {
		name string
		p    storage.MemorySearchParams
		want []string
	}{
		{"workspace", storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: q},
			sorted(a.ID+"/x/shared.md", a.ID+"/xy/shared.md", b.ID+"/x/shared.md", b.ID+"/xy/shared.md")},
		{"one store", storage.MemorySearchParams{WorkspaceID: "wrkspc_a", StoreIDs: []string{b.ID}, Query: q},
			sorted(b.ID+"/x/shared.md", b.ID+"/xy/shared.md")},
		{"archived named", storage.MemorySearchParams{WorkspaceID: "wrkspc_a", StoreIDs: []string{arch.ID, a.ID}, Query: q},
			sorted(arch.ID+"/x/shared.md", arch.ID+"/xy/shared.md", a.ID+"/x/shared.md", a.ID+"/xy/shared.md")},
		{"another workspace's store named", storage.MemorySearchParams{WorkspaceID: "wrkspc_a", StoreIDs: []string{other.ID}, Query: q},
			[]string{}},
		{"unknown store", storage.MemorySearchParams{WorkspaceID: "wrkspc_a", StoreIDs: []string{"memstore_nope"}, Query: q},
			[]string{}},
		{"prefix", storage.MemorySearchParams{WorkspaceID: "wrkspc_a", StoreIDs: []string{a.ID}, Query: q, Prefix: "/x/"},
			sorted(a.ID + "/x/shared.md")},
		{"other workspace", storage.MemorySearchParams{WorkspaceID: "wrkspc_b", Query: q},
			sorted(other.ID+"/x/shared.md", other.ID+"/xy/shared.md")},
	}
	check := func(state string) {
		t.Helper()
		for _, c := range cases {
			if diff := cmp.Diff(c.want, stores(search(t, d, c.p))); diff != "" {
				t.Errorf("%s, %s (-want +got):\n%s", state, c.name, diff)
			}
		}
		if hits := search(t, d, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: q, Limit: 1}); len(hits) != 1 {
			t.Errorf("%s, limit 1: %d hits", state, len(hits))
		}
	}
	check("as written")
	// A driver whose index trails the writes (a queue an indexer applies)
	// answers from other statements once the index has caught up: the
	// same scope, whichever way it is read.
	if ix, ok := d.(searchCatchUp); ok {
		if err := ix.CatchUpSearch(context.Background()); err != nil {
			t.Fatalf("CatchUpSearch: %v", err)
		}
		check("indexed")
	}
	if hits := search(t, d, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: trove.SearchQuery{}}); len(hits) != 0 {
		t.Errorf("empty query: %d hits, want none", len(hits))
	}
}

// testMemorySearchInStep: the index follows every change in the same
// transaction: an update's old words are gone and its new ones found, a
// rename changes the path words, a delete and a store delete remove the
// memory (also when a new memory then takes its place), a rolled-back
// Write leaves nothing, and a Read sees the index as of its snapshot.
func testMemorySearchInStep(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	m, _ := insertMemory(t, d, s.ID, "/old/name.md", "alpha bravo", secs(1))
	find := func(query string) []string {
		t.Helper()
		return hitPaths(search(t, d, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: mustQuery(t, query), Limit: 10}))
	}
	want := func(query string, paths ...string) {
		t.Helper()
		if paths == nil {
			paths = []string{}
		}
		if diff := cmp.Diff(paths, find(query)); diff != "" {
			t.Errorf("search %q (-want +got):\n%s", query, diff)
		}
	}
	want("alpha", "/old/name.md")

	// Content update.
	m.Content, m.SizeBytes, m.SHA256, m.UpdatedAt = strPtr("charlie delta"), 13, sha("charlie delta"), secs(2)
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryUpdate(ctx, m) })
	want("alpha")
	want("charlie", "/old/name.md")

	// Rename.
	m.Path = "/new/title.md"
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryUpdate(ctx, m) })
	want("old")
	want("title charlie", "/new/title.md")

	// A failed Write changes nothing.
	err := d.Write(context.Background(), func(tx storage.Tx) error {
		ctx := context.Background()
		m2 := *m
		m2.Content = strPtr("echo foxtrot")
		if err := tx.MemoryUpdate(ctx, &m2); err != nil {
			return err
		}
		n, _ := newMemory(s.ID, "/rolled/back.md", "echo", secs(3))
		if err := tx.MemoryInsert(ctx, n); err != nil {
			return err
		}
		return trove.Errorf(trove.EINVALID, "roll back")
	})
	wantCode(t, "rolled-back Write", err, trove.EINVALID)
	want("echo")
	want("charlie", "/new/title.md")

	// A Read keeps its snapshot of the index.
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan []string)
	go func() {
		var got []string
		_ = storage.ReadSearch(ctx, d, func(tx storage.Tx) error {
			// The first statement fixes the snapshot.
			if _, err := tx.MemorySearch(ctx, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: mustQuery(t, "charlie"), Limit: 10}); err != nil {
				close(started)
				return err
			}
			close(started)
			<-release
			hits, err := tx.MemorySearch(ctx, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: mustQuery(t, "charlie"), Limit: 10})
			if err == nil {
				got = hitPaths(hits)
			}
			return err
		})
		done <- got
	}()
	<-started
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryDelete(ctx, s.ID, m.ID) })
	close(release)
	if diff := cmp.Diff([]string{"/new/title.md"}, <-done); diff != "" {
		t.Errorf("search in a Read started before the delete (-want +got):\n%s", diff)
	}
	want("charlie")

	// A store delete takes its memories out of the index, also when a new
	// memory reuses the place (rowid) the last one had.
	gone := insertStore(t, d, newStore("wrkspc_a", secs(4)))
	insertMemory(t, d, gone.ID, "/g.md", "golf hotel", secs(5))
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.StoreDelete(ctx, gone.ID) })
	insertMemory(t, d, s.ID, "/fresh.md", "india", secs(6))
	want("golf")
	want("india", "/fresh.md")
	// So does a memory delete followed by a new memory.
	last, _ := insertMemory(t, d, s.ID, "/last.md", "juliet", secs(7))
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryDelete(ctx, s.ID, last.ID) })
	insertMemory(t, d, s.ID, "/next.md", "kilo", secs(8))
	want("juliet")
	want("kilo", "/next.md")
}

// FuzzMemorySearch is the fuzz target of a driver's search query building:
// for any input that trove.ParseSearchQuery accepts, MemorySearch over a
// few memories must not fail (no byte of the input may reach FTS5 or
// tsquery syntax), and, for ASCII input, every hit must match every term
// as trove.SearchQuery.Matches reads the path or the content (the index
// and the highlighter agree on words). d must be a fresh, empty driver;
// the caller closes it.
func FuzzMemorySearch(f *testing.F, d storage.Driver) {
	for _, s := range []string{
		"kubernetes", `"upgrade plan" now`, `a OR b* NEAR(c d) -e col:f`, `"`, `""`, `a"b`, `*`, `'it''s'`, `\`, `:*`,
		`a:*`, `^a`, `(a`, `a)`, `&|!`, `<->`, `path:notes`, `content:x`, `{path content}:a`, `a AND NOT b`, `x + y`,
		"ÉCOLE", "日本語", "e\u0301", "İstanbul", "ß", "\x00", "\u200b", "“a”b\"c", "plan'", "!(plan)", "pl",
	} {
		f.Add(s)
	}
	ctx := context.Background()
	st := newStore("wrkspc_fuzz", secs(0))
	if err := d.Write(ctx, func(tx storage.Tx) error {
		if err := tx.StoreInsert(ctx, st); err != nil {
			return err
		}
		for i, c := range []string{
			"Kubernetes upgrade plan: drain each node.",
			"a OR b NEAR c d e col f: it's \\ a \"quoted\" <-> thing & more | !",
			"ÉCOLE école e\u0301 İstanbul straße 日本語",
			"path notes content x",
		} {
			m, v := newMemory(st.ID, fmt.Sprintf("/notes/m%d.md", i), c, secs(1+i))
			if err := tx.MemoryInsert(ctx, m); err != nil {
				return err
			}
			if err := tx.VersionInsert(ctx, v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		q, err := trove.ParseSearchQuery(in)
		if err != nil {
			return
		}
		hits, err := trySearch(ctx, d, storage.MemorySearchParams{WorkspaceID: st.WorkspaceID, Query: q, Limit: 10})
		if err != nil {
			t.Fatalf("MemorySearch(%q → %+v): %v", in, q, err)
		}
		ascii := true
		for _, r := range in {
			ascii = ascii && r < 0x80
		}
		if !ascii {
			return
		}
		for _, h := range hits {
			for _, term := range q.Terms {
				one := trove.SearchQuery{Terms: []trove.SearchTerm{term}}
				if len(one.Matches(h.Memory.Path)) == 0 && len(one.Matches(*h.Memory.Content)) == 0 {
					t.Errorf("%q: hit %s does not match term %v", in, h.Memory.Path, term.Words)
				}
			}
		}
	})
}
