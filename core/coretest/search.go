package coretest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
)

// --- search --------------------------------------------------------------

// search runs Search and fails the test on error.
func (e *env) search(t *testing.T, ctx context.Context, p trove.SearchParams) *trove.Page[trove.SearchResult] {
	t.Helper()
	pg, err := e.svc.Search(ctx, p)
	if err != nil {
		t.Fatalf("Search(%+v): %v", p, err)
	}
	return pg
}

// found returns "storeName:path" of every result, in order.
func found(pg *trove.Page[trove.SearchResult], names map[string]string) []string {
	out := []string{}
	for _, r := range pg.Data {
		out = append(out, names[r.Memory.StoreID]+":"+r.Memory.Path)
	}
	return out
}

// marked returns text with every range wrapped in [ ].
func marked(text string, rs []trove.TextRange) string {
	var b strings.Builder
	at := 0
	for _, r := range rs {
		b.WriteString(text[at:r.Start] + "[" + text[r.Start:r.End] + "]")
		at = r.End
	}
	return b.String() + text[at:]
}

// testSearchRelevance: a query finds the memory that contains it, ranked
// above memories that mention it once; a path match counts; the result
// has no content, the snippet is the content's bytes at SnippetOffset, and
// the highlights mark the matched words of the snippet and the path.
func testSearchRelevance(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	names := map[string]string{s.ID: "S"}
	filler := strings.Repeat("Nothing else of note happened in the meeting today. ", 4)
	e.memory(t, s.ID, "/meetings/monday.md", filler+"Someone mentioned Kubernetes once. "+filler)
	about := e.memory(t, s.ID, "/infra/cluster.md", "Kubernetes upgrade plan: drain each kubernetes node, upgrade kubernetes, check kubernetes pods.")
	e.memory(t, s.ID, "/infra/kubernetes.md", "Runbook for the cluster. "+filler)
	e.memory(t, s.ID, "/recipes/bread.md", "Flour, water, salt, yeast.")

	pg := e.search(t, e.ctx, trove.SearchParams{Query: "kubernetes"})
	got := found(pg, names)
	if len(got) != 3 || got[len(got)-1] != "S:/meetings/monday.md" || !slices.Contains(got[:2], "S:/infra/cluster.md") {
		t.Fatalf("ranking %v: want /infra/cluster.md (about it) and /infra/kubernetes.md (in the path) above /meetings/monday.md (one mention)", got)
	}
	if pg.NextPage != "" {
		t.Errorf("NextPage %q on the only page", pg.NextPage)
	}
	var r trove.SearchResult
	for _, x := range pg.Data {
		if x.Memory.ID == about.ID {
			r = x
		}
	}
	want := *about
	if diff := cmp.Diff(want, r.Memory); diff != "" {
		t.Errorf("result memory (-want +got):\n%s", diff)
	}
	content := "Kubernetes upgrade plan: drain each kubernetes node, upgrade kubernetes, check kubernetes pods."
	if r.Snippet != content[r.SnippetOffset:r.SnippetOffset+len(r.Snippet)] {
		t.Errorf("snippet %q is not the content at offset %d", r.Snippet, r.SnippetOffset)
	}
	if got, want := marked(r.Snippet, r.Highlights), "[Kubernetes] upgrade plan: drain each [kubernetes] node, upgrade [kubernetes], check [kubernetes] pods."; got != want {
		t.Errorf("highlighted snippet\n got %s\nwant %s", got, want)
	}
	if len(r.PathHighlights) != 0 {
		t.Errorf("path highlights %v for a path without the word", r.PathHighlights)
	}
	if r.Score <= 0 {
		t.Errorf("score %v", r.Score)
	}

	// A path match is highlighted in the path; the snippet is the content's
	// start when only the path matches.
	pg = e.search(t, e.ctx, trove.SearchParams{Query: "runbook kubernetes"})
	if len(pg.Data) != 1 {
		t.Fatalf("runbook kubernetes: %v", found(pg, names))
	}
	r = pg.Data[0]
	if got := marked(r.Memory.Path, r.PathHighlights); got != "/infra/[kubernetes].md" {
		t.Errorf("path highlights: %s", got)
	}
	if r.SnippetOffset != 0 || !strings.HasPrefix(marked(r.Snippet, r.Highlights), "[Runbook] for the cluster.") {
		t.Errorf("snippet at %d: %s", r.SnippetOffset, marked(r.Snippet, r.Highlights))
	}

	// In a long memory the snippet is cut around the matches, within the
	// size limit, on whole characters.
	long := strings.Repeat("préambule sans intérêt. ", 40) + "Here the needle and another needle sit. " + strings.Repeat("épilogue. ", 40)
	e.memory(t, s.ID, "/long.md", long)
	pg = e.search(t, e.ctx, trove.SearchParams{Query: "needle"})
	if len(pg.Data) != 1 {
		t.Fatalf("needle: %v", found(pg, names))
	}
	r = pg.Data[0]
	if len(r.Snippet) > trove.SearchSnippetBytes || r.SnippetOffset == 0 || long[r.SnippetOffset:r.SnippetOffset+len(r.Snippet)] != r.Snippet {
		t.Errorf("long snippet at %d (%d bytes): %q", r.SnippetOffset, len(r.Snippet), r.Snippet)
	}
	if m := marked(r.Snippet, r.Highlights); !strings.Contains(m, "Here the [needle] and another [needle] sit.") {
		t.Errorf("long snippet highlights: %s", m)
	}

	// Phrases, the prefix word, case.
	for _, c := range []struct {
		q    string
		want []string
	}{
		{`"upgrade plan"`, []string{"S:/infra/cluster.md"}},
		{`"plan upgrade"`, []string{}},
		{"FLOUR Yea", []string{"S:/recipes/bread.md"}},
		{"flour yea extra", []string{}},
	} {
		if diff := cmp.Diff(c.want, found(e.search(t, e.ctx, trove.SearchParams{Query: c.q}), names)); diff != "" {
			t.Errorf("search %q (-want +got):\n%s", c.q, diff)
		}
	}
	pg = e.search(t, e.ctx, trove.SearchParams{Query: `"upgrade plan"`})
	if got := marked(pg.Data[0].Snippet, pg.Data[0].Highlights); !strings.HasPrefix(got, "Kubernetes [upgrade plan]: drain") {
		t.Errorf("phrase highlight: %s", got)
	}
}

// testSearchInStep: search follows every way a memory changes through the
// service: update, rename, delete, directory rename and delete, store
// delete, and redaction (a redacted version's text is not findable; only
// current content is indexed, and redaction never touches it).
func testSearchInStep(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	names := map[string]string{s.ID: "S"}
	want := func(q string, paths ...string) {
		t.Helper()
		if paths == nil {
			paths = []string{}
		}
		got := found(e.search(t, e.ctx, trove.SearchParams{Query: q}), names)
		slices.Sort(got)
		if diff := cmp.Diff(paths, got); diff != "" {
			t.Errorf("search %q (-want +got):\n%s", q, diff)
		}
	}
	m := e.memory(t, s.ID, "/creds/db.md", "the password is hunter2")
	want("hunter2", "S:/creds/db.md")
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("the password is rotated")}); err != nil {
		t.Fatal(err)
	}
	want("hunter2")
	want("rotated", "S:/creds/db.md")
	// The old version still holds the text; redacting it keeps it unfindable.
	if _, err := e.svc.RedactVersion(e.ctx, s.ID, m.VersionID); err != nil {
		t.Fatal(err)
	}
	want("hunter2")
	want("password", "S:/creds/db.md")

	// Rename.
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Path: ptr("/secrets/database.md")}); err != nil {
		t.Fatal(err)
	}
	want("creds")
	want("secrets rotated", "S:/secrets/database.md")

	// Directory rename and delete.
	e.memory(t, s.ID, "/secrets/api.md", "token rotated weekly")
	if _, err := e.svc.RenameDirectory(e.ctx, s.ID, trove.RenameDirectoryParams{From: "/secrets", To: "/vault"}); err != nil {
		t.Fatal(err)
	}
	want("secrets")
	want("vault rotated", "S:/vault/api.md", "S:/vault/database.md")
	if _, err := e.svc.DeleteDirectory(e.ctx, s.ID, trove.DeleteDirectoryParams{Path: "/vault"}); err != nil {
		t.Fatal(err)
	}
	want("rotated")

	// Delete, then redact the deleted memory's versions.
	d := e.memory(t, s.ID, "/leak.md", "launch code swordfish")
	if err := e.svc.DeleteMemory(e.ctx, s.ID, d.ID, ""); err != nil {
		t.Fatal(err)
	}
	want("swordfish")
	if _, err := e.svc.RedactVersion(e.ctx, s.ID, d.VersionID); err != nil {
		t.Fatal(err)
	}
	want("swordfish")

	// Store delete.
	o := e.store(t, "O")
	e.memory(t, o.ID, "/o.md", "orphaned words")
	if err := e.svc.DeleteStore(e.ctx, o.ID); err != nil {
		t.Fatal(err)
	}
	want("orphaned")
}

// testSearchScope: an API key searches its workspace's non-archived stores
// (archived ones only when named); a session token only its attached
// stores, read_only ones included; naming a store the caller cannot read
// is ENOTFOUND; the path prefix narrows the search.
func testSearchScope(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	a, b, c, arch := e.store(t, "A"), e.store(t, "B"), e.store(t, "C"), e.store(t, "Arch")
	names := map[string]string{a.ID: "A", b.ID: "B", c.ID: "C", arch.ID: "Arch"}
	for _, st := range []*trove.Store{a, b, c, arch} {
		e.memory(t, st.ID, "/notes/common.md", "common ground")
		e.memory(t, st.ID, "/other/common.md", "common ground")
	}
	if _, err := e.svc.ArchiveStore(e.ctx, arch.ID); err != nil {
		t.Fatal(err)
	}
	foreign, err := e.svc.CreateStore(e.ctxB, trove.CreateStoreParams{Name: "F"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateMemory(e.ctxB, foreign.ID, trove.CreateMemoryParams{Path: "/notes/common.md", Content: "common ground"}); err != nil {
		t.Fatal(err)
	}
	names[foreign.ID] = "F"
	sorted := func(pg *trove.Page[trove.SearchResult]) []string {
		got := found(pg, names)
		slices.Sort(got)
		return got
	}
	check := func(what string, ctx context.Context, p trove.SearchParams, want ...string) {
		t.Helper()
		p.Query = "common"
		slices.Sort(want)
		if diff := cmp.Diff(want, sorted(e.search(t, ctx, p))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	check("api key, every store", e.ctx, trove.SearchParams{},
		"A:/notes/common.md", "A:/other/common.md", "B:/notes/common.md", "B:/other/common.md", "C:/notes/common.md", "C:/other/common.md")
	check("api key, named stores with an archived one", e.ctx, trove.SearchParams{StoreIDs: []string{arch.ID, b.ID, b.ID}},
		"Arch:/notes/common.md", "Arch:/other/common.md", "B:/notes/common.md", "B:/other/common.md")
	check("api key, prefix", e.ctx, trove.SearchParams{StoreIDs: []string{a.ID}, PathPrefix: "/notes"}, "A:/notes/common.md")
	check("api key, prefix with slash", e.ctx, trove.SearchParams{StoreIDs: []string{a.ID}, PathPrefix: "/notes/"}, "A:/notes/common.md")
	check("other workspace", e.ctxB, trove.SearchParams{}, "F:/notes/common.md")

	sctx, _, _ := e.sessionCtx(t,
		trove.AttachStoreParams{StoreID: a.ID, Access: trove.AccessReadWrite},
		trove.AttachStoreParams{StoreID: b.ID, Access: trove.AccessReadOnly})
	check("session, every attached store", sctx, trove.SearchParams{},
		"A:/notes/common.md", "A:/other/common.md", "B:/notes/common.md", "B:/other/common.md")
	check("session, one attached store", sctx, trove.SearchParams{StoreIDs: []string{b.ID}}, "B:/notes/common.md", "B:/other/common.md")
	for _, id := range []string{c.ID, arch.ID, foreign.ID, "memstore_missing"} {
		_, err := e.svc.Search(sctx, trove.SearchParams{Query: "common", StoreIDs: []string{a.ID, id}})
		wantCode(t, "session naming "+names[id]+id, err, trove.ENOTFOUND)
	}
	_, err = e.svc.Search(e.ctx, trove.SearchParams{Query: "common", StoreIDs: []string{foreign.ID}})
	wantCode(t, "api key naming another workspace's store", err, trove.ENOTFOUND)
}

// testSearchValidation: bad input is EINVALID with a message; no principal
// is EUNAUTHENTICATED.
func testSearchValidation(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	e.memory(t, s.ID, "/a.md", "alpha")
	many := make([]string, trove.MaxSearchStores+1)
	for i := range many {
		many[i] = fmt.Sprintf("memstore_%d", i)
	}
	for _, c := range []struct {
		what string
		p    trove.SearchParams
	}{
		{"empty query", trove.SearchParams{}},
		{"blank query", trove.SearchParams{Query: "   "}},
		{"punctuation only", trove.SearchParams{Query: `!!! "" -- *`}},
		{"too long", trove.SearchParams{Query: strings.Repeat("a", trove.MaxSearchQueryChars+1)}},
		{"too many words", trove.SearchParams{Query: strings.Repeat("w ", trove.MaxSearchTerms+1)}},
		{"invalid UTF-8", trove.SearchParams{Query: "a\xff"}},
		{"bad prefix", trove.SearchParams{Query: "alpha", PathPrefix: "notes"}},
		{"bad prefix segment", trove.SearchParams{Query: "alpha", PathPrefix: "/a/../b/"}},
		{"negative limit", trove.SearchParams{Query: "alpha", Limit: -1}},
		{"limit too big", trove.SearchParams{Query: "alpha", Limit: 101}},
		{"bad cursor", trove.SearchParams{Query: "alpha", Cursor: "page_nope"}},
		{"list cursor", trove.SearchParams{Query: "alpha", Cursor: mustListCursor(t, e, s.ID)}},
		{"too many stores", trove.SearchParams{Query: "alpha", StoreIDs: many}},
	} {
		_, err := e.svc.Search(e.ctx, c.p)
		wantCode(t, c.what, err, trove.EINVALID)
	}
	_, err := e.svc.Search(context.Background(), trove.SearchParams{Query: "alpha"})
	wantCode(t, "no principal", err, trove.EUNAUTHENTICATED)
	// Exactly MaxSearchTerms words and MaxSearchQueryChars characters pass.
	if _, err := e.svc.Search(e.ctx, trove.SearchParams{Query: strings.TrimSpace(strings.Repeat("w ", trove.MaxSearchTerms))}); err != nil {
		t.Errorf("%d words: %v", trove.MaxSearchTerms, err)
	}
	if _, err := e.svc.Search(e.ctx, trove.SearchParams{Query: strings.Repeat("é", trove.MaxSearchQueryChars)}); err != nil {
		t.Errorf("%d characters: %v", trove.MaxSearchQueryChars, err)
	}
}

// mustListCursor returns a memory listing's cursor (the wrong kind for
// Search).
func mustListCursor(t *testing.T, e *env, storeID string) string {
	t.Helper()
	e.memory(t, storeID, "/b.md", "beta")
	pg, err := e.svc.ListMemories(e.ctx, storeID, trove.ListMemoriesParams{Limit: 1})
	if err != nil || pg.NextPage == "" {
		t.Fatalf("ListMemories: %v, next %q", err, pg.NextPage)
	}
	return pg.NextPage
}

// testSearchPaging: following NextPage returns every match once, in the
// order of one big page, and the last page has no NextPage.
func testSearchPaging(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	for i := range 31 {
		e.memory(t, s.ID, fmt.Sprintf("/m/%02d.md", i), strings.Repeat("match ", 1+i%4)+strings.Repeat("other ", i%5))
	}
	e.memory(t, s.ID, "/none.md", "nothing")
	one := e.search(t, e.ctx, trove.SearchParams{Query: "match", Limit: 100})
	if len(one.Data) != 31 || one.NextPage != "" {
		t.Fatalf("one page: %d results, next %q", len(one.Data), one.NextPage)
	}
	var paged []trove.SearchResult
	p := trove.SearchParams{Query: "match", Limit: 7}
	for i := 0; ; i++ {
		if i > 10 {
			t.Fatal("paging does not end")
		}
		pg := e.search(t, e.ctx, p)
		if len(pg.Data) > 7 || pg.NextPage != "" && len(pg.Data) != 7 {
			t.Fatalf("page %d: %d results, next %q", i, len(pg.Data), pg.NextPage)
		}
		paged = append(paged, pg.Data...)
		if pg.NextPage == "" {
			break
		}
		p.Cursor = pg.NextPage
	}
	ids := func(rs []trove.SearchResult) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Memory.Path)
		}
		return out
	}
	if diff := cmp.Diff(ids(one.Data), ids(paged)); diff != "" {
		t.Errorf("paged results differ from one page (-one +paged):\n%s", diff)
	}
}
