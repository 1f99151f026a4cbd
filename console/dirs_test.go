package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trovehq/trove"
)

// testDirectories renames and deletes a directory from the store page: a
// move onto a taken path is refused with nothing moved; a move keeps every
// memory's ID and content; a delete needs the path typed and removes only
// what lies below the directory; neither works without the CSRF token.
func testDirectories(t *testing.T, bctx context.Context) {
	e := newEnv(t, nil)
	ctx := context.Background()
	st, err := e.api.CreateStore(ctx, trove.CreateStoreParams{Name: "dirs"})
	if err != nil {
		t.Fatal(err)
	}
	content := map[string]string{} // memory ID → content
	mk := func(p, c string) *trove.Memory {
		m, err := e.api.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: c})
		if err != nil {
			t.Fatal(err)
		}
		content[m.ID] = c
		return m
	}
	a, b := mk("/notes/a.md", "a\n"), mk("/notes/sub/b.md", "b\n")
	other, taken := mk("/other/c.md", "c\n"), mk("/archive/a.md", "old a\n")
	storeURL := e.url + "/console/stores/" + st.ID
	want := func(m *trove.Memory, path string) {
		t.Helper()
		got, err := e.api.GetMemory(ctx, st.ID, m.ID, trove.ViewFull)
		if err != nil || got.Path != path || got.Content == nil || *got.Content != content[m.ID] {
			t.Fatalf("memory %s = %+v, %v; want it at %s with its content", m.ID, got, err, path)
		}
	}

	tb := newTab(t, bctx)
	e.signIn(t, tb, e.key)
	tb.run(t, "no directory card at the root", chromedp.Navigate(storeURL), waitVisible("#tree"))
	if n := eval[int](t, tb, `document.querySelectorAll("#directory").length`); n != 0 {
		t.Errorf("the store's root shows %d directory cards", n)
	}

	tb.run(t, "move onto a taken path",
		chromedp.Navigate(storeURL+"?dir="+url.QueryEscape("/notes/")),
		waitVisible("#rename-dir"),
		setValue("#rename-dir #dir-to", "/archive"),
		submit("#rename-dir #dir-to"),
		waitVisible("#error"),
	)
	if got := tb.text(t, "#error"); !strings.Contains(got, "/archive/a.md") {
		t.Errorf("refused move says %q; want the taken path named", got)
	}
	want(a, "/notes/a.md")
	want(b, "/notes/sub/b.md")
	want(taken, "/archive/a.md")

	tb.run(t, "move",
		chromedp.Navigate(storeURL+"?dir="+url.QueryEscape("/notes/")),
		waitVisible("#rename-dir"),
		setValue("#rename-dir #dir-to", "kept/notes/"),
		submit("#rename-dir #dir-to"),
		waitVisible("#notice"),
	)
	if got := tb.text(t, "#dir-h"); !strings.Contains(got, "/kept/notes/") {
		t.Errorf("after the move the page shows directory %q", got)
	}
	want(a, "/kept/notes/a.md")
	want(b, "/kept/notes/sub/b.md")
	want(other, "/other/c.md")

	tb.run(t, "delete with the wrong path typed",
		setValue("#delete-dir #dir-confirm", "/kept"),
		submit("#delete-dir #dir-confirm"),
		waitVisible("#error"),
	)
	if got := tb.text(t, "#error"); !strings.Contains(got, "/kept/notes") {
		t.Errorf("refused delete says %q", got)
	}
	want(a, "/kept/notes/a.md")

	// Without the CSRF token neither form does anything.
	c := tb.cookie(t, e.url)
	for _, p := range []string{"/dir/rename", "/dir/delete"} {
		form := url.Values{"dir": {"/kept/notes"}, "to": {"/elsewhere"}, "confirm": {"/kept/notes"}}
		if code := postForm(t, storeURL+p, c.Value, form); code != http.StatusForbidden {
			t.Errorf("POST %s without a CSRF token: %d, want 403", p, code)
		}
	}
	want(a, "/kept/notes/a.md")

	tb.run(t, "delete",
		chromedp.Navigate(storeURL+"?dir="+url.QueryEscape("/kept/notes/")),
		waitVisible("#delete-dir"),
		setValue("#delete-dir #dir-confirm", "/kept/notes/"),
		submit("#delete-dir #dir-confirm"),
		waitVisible("#notice"),
	)
	for _, m := range []*trove.Memory{a, b} {
		if _, err := e.api.GetMemory(ctx, st.ID, m.ID, trove.ViewBasic); trove.ErrorCode(err) != trove.ENOTFOUND {
			t.Errorf("memory %s after the directory's delete: %v, want not found", m.Path, err)
		}
		vs, err := e.api.ListVersions(ctx, st.ID, trove.ListVersionsParams{MemoryID: m.ID})
		if err != nil || len(vs.Data) == 0 || vs.Data[0].Operation != trove.OpDeleted {
			t.Errorf("history of %s after the delete: %+v, %v; want a deletion on top", m.Path, vs, err)
		}
	}
	want(other, "/other/c.md")
	want(taken, "/archive/a.md")
	tb.quiet(t)
}
