package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/trovehq/trove"
)

// testFlow walks the flow in the browser, checking after each step
// what the page shows and what the API then returns: sign in; create a
// store and a memory; edit it; edit it again while a write lands through
// the API and resolve the conflict; view a diff; restore; redact; delete a
// memory; archive; delete the store; sign out.
func testFlow(t *testing.T, bctx context.Context) {
	e := newEnv(t, nil)
	tb := newTab(t, bctx)
	ctx := context.Background()

	e.signIn(t, tb, e.key)

	// Create a store.
	tb.run(t, "create store",
		sendKeys("#create-store #name", "Project notes"),
		sendKeys("#create-store #description", "What the agent learned"),
		submit("#create-store #name"),
		waitVisible("#notice"),
	)
	if got := tb.text(t, "h1"); !strings.Contains(got, "Project notes") {
		t.Fatalf("store page heading %q", got)
	}
	st := e.storeByName(t, "Project notes")
	if st == nil || st.Description != "What the agent learned" {
		t.Fatalf("API store after create = %+v", st)
	}

	// Describe it and set metadata.
	tb.run(t, "store settings",
		setValue("#store-settings #description", "What the agent learned about ACME"),
		setValue("#store-settings #metadata", "team=core\nenv=prod\n"),
		submit("#store-settings #name"),
		waitVisible("#notice"),
	)
	if st, err := e.api.GetStore(ctx, st.ID); err != nil || st.Description != "What the agent learned about ACME" || st.Metadata["team"] != "core" || st.Metadata["env"] != "prod" {
		t.Fatalf("API store after settings = %+v, %v", st, err)
	}
	tb.run(t, "remove a metadata key",
		setValue("#store-settings #metadata", "team=core\n"),
		submit("#store-settings #name"),
		waitVisible("#notice"),
	)
	if st, err := e.api.GetStore(ctx, st.ID); err != nil || len(st.Metadata) != 1 || st.Metadata["team"] != "core" {
		t.Fatalf("API store after removing a key = %+v, %v", st, err)
	}

	// Create a memory (the textarea sends CRLF line ends; LF is stored).
	tb.run(t, "new memory",
		click("#tab-memories"), // saving the settings stays on their tab
		click("#new-memory"),
		waitVisible("#new-memory-form"),
		setValue("#path", "/prefs/style.md"),
		setValue("#content", "Use tabs.\n"),
		submit("#path"),
		waitVisible("#memory-content"),
	)
	if got := tb.text(t, "#memory-content"); got != "Use tabs.\n" {
		t.Fatalf("page content %q", got)
	}
	m := e.memoryByPath(t, st.ID, "/prefs/style.md")
	if m == nil || *m.Content != "Use tabs.\n" {
		t.Fatalf("API memory after create = %+v", m)
	}
	vs, err := e.api.ListVersions(ctx, st.ID, trove.ListVersionsParams{MemoryID: m.ID})
	if err != nil {
		t.Fatal(err)
	}
	if a := vs.Data[0].CreatedBy; a == nil || a.Type != trove.ActorUser || a.UserID != "user_"+e.keyID {
		t.Fatalf("console edit attributed to %+v, want user_actor user_%s", a, e.keyID)
	}

	// Edit it.
	tb.run(t, "edit",
		setValue("#edit-form #content", "Use tabs.\nShort lines.\n"),
		submit("#edit-form #content"),
		waitVisible("#notice"),
	)
	if got := tb.text(t, "#memory-content"); got != "Use tabs.\nShort lines.\n" {
		t.Fatalf("page after edit %q", got)
	}
	if m = e.memoryByPath(t, st.ID, "/prefs/style.md"); *m.Content != "Use tabs.\nShort lines.\n" {
		t.Fatalf("API after edit %q", *m.Content)
	}

	// Open it again through the tree, whose directories load lazily.
	tb.run(t, "tree",
		chromedp.Navigate(e.url+"/console/stores/"+st.ID),
		waitVisible(`#store-stats[data-stats-loaded="1"]`),
	)
	if got := tb.text(t, `#store-stats [data-stat=memories]`); got != "1" {
		t.Errorf("store page counts %q memories, want 1", got)
	}
	tb.run(t, "tree expand",
		waitVisible("li.dir summary"),
		click("li.dir summary"),
		waitVisible(`li.dir li.file a`),
		click(`li.dir li.file a`),
		waitVisible("#edit-form"),
	)
	// Edit while the API writes: the save is refused, both sides shown.
	if _, err := e.api.UpdateMemory(ctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("API wrote this.\n")}); err != nil {
		t.Fatal(err)
	}
	tb.run(t, "conflicting edit",
		setValue("#edit-form #content", "Browser wrote this.\n"),
		submit("#edit-form #content"),
		waitVisible("#conflict"),
	)
	if got := tb.text(t, "#theirs"); got != "API wrote this.\n" {
		t.Errorf("conflict page: theirs %q", got)
	}
	if got := tb.text(t, "#mine"); got != "Browser wrote this.\n" {
		t.Errorf("conflict page: mine %q", got)
	}
	if d := tb.text(t, "pre.diff"); !strings.Contains(d, "-API wrote this.") || !strings.Contains(d, "+Browser wrote this.") {
		t.Errorf("conflict diff %q", d)
	}
	if m = e.memoryByPath(t, st.ID, "/prefs/style.md"); *m.Content != "API wrote this.\n" {
		t.Fatalf("API after the refused save %q: the console overwrote the concurrent write", *m.Content)
	}
	// Resolve: merge both and save over theirs.
	merged := "API wrote this.\nBrowser wrote this.\n"
	tb.run(t, "resolve",
		setValue("#resolve-form #content", merged),
		click("#save-mine"),
		waitVisible("#notice"),
	)
	if got := tb.text(t, "#memory-content"); got != merged {
		t.Errorf("page after resolving %q", got)
	}
	if m = e.memoryByPath(t, st.ID, "/prefs/style.md"); *m.Content != merged {
		t.Fatalf("API after resolving %q", *m.Content)
	}

	// History and a diff between the first version and the current content.
	all, err := e.api.ListVersions(ctx, st.ID, trove.ListVersionsParams{MemoryID: m.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Data) != 4 {
		t.Fatalf("%d versions, want 4 (create, edit, API edit, resolve)", len(all.Data))
	}
	first, second := all.Data[3], all.Data[2]
	tb.run(t, "history",
		click("#history-link"),
		waitVisible("#versions"),
	)
	rows := eval[int](t, tb, `document.querySelectorAll("#versions tbody tr[id^=v-]").length`)
	tb.run(t, "compare",
		click(`input[name=a][value="`+first.ID+`"]`),
		click(`input[name=b][value="current"]`),
		click("#compare"),
		waitVisible("pre.diff"),
	)
	if rows != 4 {
		t.Errorf("history shows %d versions, want 4", rows)
	}
	if d := tb.text(t, "pre.diff"); !strings.Contains(d, "-Use tabs.") || !strings.Contains(d, "+Browser wrote this.") {
		t.Errorf("diff first→current %q", d)
	}

	// Restore the first version: a new version with its content.
	tb.run(t, "restore",
		chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/memories/"+m.ID+"/history"),
		waitVisible("#versions"),
		click(`button[form="restore-`+first.ID+`"]`),
		waitVisible("#notice"),
	)
	if got := tb.text(t, "#memory-content"); got != "Use tabs.\n" {
		t.Errorf("page after restore %q", got)
	}
	if m = e.memoryByPath(t, st.ID, "/prefs/style.md"); *m.Content != "Use tabs.\n" {
		t.Fatalf("API after restore %q", *m.Content)
	}

	// Redact the second version, with its confirmation.
	tb.run(t, "redact",
		chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/versions/"+second.ID),
		waitVisible("#redact-form"),
	)
	if got := tb.text(t, "#redact"); !strings.Contains(got, "who made it, the operation and when") {
		t.Errorf("redact confirmation does not say what stays: %q", got)
	}
	tb.run(t, "redact submit",
		click(`#redact-form input[name=confirm]`),
		submit(`#redact-form input[name=confirm]`),
		waitVisible("#v-redacted"),
	)
	v, err := e.api.GetVersion(ctx, st.ID, second.ID, trove.ViewFull)
	if err != nil {
		t.Fatal(err)
	}
	if v.RedactedAt == nil || v.Content != nil || v.Path != nil || v.CreatedBy == nil {
		t.Fatalf("API version after redact = %+v", v)
	}

	// Delete a memory written through the API.
	other, err := e.api.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/tmp.md", Content: "scratch"})
	if err != nil {
		t.Fatal(err)
	}
	tb.run(t, "delete memory",
		chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/memories/"+other.ID),
		waitVisible("#delete-memory"),
		submit("#delete-memory button"),
		waitVisible("#notice"),
	)
	_, err = e.api.GetMemory(ctx, st.ID, other.ID, trove.ViewBasic)
	wantErrCode(t, "API get of the deleted memory", err, trove.ENOTFOUND)

	// Archive (one-way, confirmed).
	tb.run(t, "archive",
		chromedp.Navigate(e.url+"/console/stores/"+st.ID+"#danger"),
		waitVisible("#archive-store"),
		click(`#archive-store input[name=confirm]`),
		submit(`#archive-store input[name=confirm]`),
		waitVisible("#notice"),
	)
	if got := tb.text(t, "h1"); !strings.Contains(got, "archived") {
		t.Errorf("store heading after archive %q", got)
	}
	if s, err := e.api.GetStore(ctx, st.ID); err != nil || s.ArchivedAt == nil {
		t.Fatalf("API store after archive = %+v, %v", s, err)
	}

	// Delete: a wrong name is refused, the right one deletes.
	tb.run(t, "delete with a wrong name",
		click("#tab-danger"),
		sendKeys("#confirm_name", "Project"),
		submit("#confirm_name"),
		waitVisible("#error"),
	)
	if _, err := e.api.GetStore(ctx, st.ID); err != nil {
		t.Fatalf("store gone after a wrong confirmation: %v", err)
	}
	tb.run(t, "delete",
		chromedp.Navigate(e.url+"/console/stores/"+st.ID+"#danger"),
		waitVisible("#confirm_name"),
		sendKeys("#confirm_name", "Project notes"),
		submit("#confirm_name"),
		waitVisible("#stores"),
	)
	_, err = e.api.GetStore(ctx, st.ID)
	wantErrCode(t, "API get of the deleted store", err, trove.ENOTFOUND)

	// Sign out: the page and the old cookie stop working.
	c := tb.cookie(t, e.url)
	if c == nil {
		t.Fatal("no console cookie")
	}
	if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Secure {
		t.Errorf("cookie over HTTP: HttpOnly %v SameSite %v Secure %v; want HttpOnly, Strict, not Secure", c.HTTPOnly, c.SameSite, c.Secure)
	}
	if strings.Contains(c.Value, e.key[len("trove_sk_"):]) {
		t.Error("the cookie holds the API key")
	}
	token := c.Value
	tb.run(t, "sign out",
		click(".signout button"),
		waitVisible("#api_key"),
	)
	req, _ := http.NewRequest("GET", e.url+"/console/stores", nil)
	req.AddCookie(&http.Cookie{Name: "trove_console", Value: token})
	resp, err := plainClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/signin") {
		t.Errorf("old cookie after sign-out: %d %s, want 303 to the sign-in page", resp.StatusCode, loc)
	}
	tb.quiet(t)
	if f := tb.foreign(e.url); len(f) > 0 {
		t.Errorf("requests to other origins: %q", f)
	}
}

func ptr[T any](v T) *T { return &v }

// testRename moves a memory by editing its path; a path taken by another
// memory is refused with the API's reason and the typed text kept.
func testRename(t *testing.T, bctx context.Context) {
	e := newEnv(t, nil)
	ctx := context.Background()
	st, err := e.api.CreateStore(ctx, trove.CreateStoreParams{Name: "moves"})
	if err != nil {
		t.Fatal(err)
	}
	x, err := e.api.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/a/x.md", Content: "x\n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.api.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/b/y.md", Content: "y\n"}); err != nil {
		t.Fatal(err)
	}
	tb := newTab(t, bctx)
	e.signIn(t, tb, e.key)
	tb.run(t, "move onto a taken path",
		chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/memories/"+x.ID),
		waitVisible("#edit-form"),
		setValue("#edit-form #path", "/b/y.md"),
		setValue("#edit-form #content", "typed text\n"),
		submit("#edit-form #path"),
		waitVisible("#error"),
	)
	if got := tb.text(t, "#error"); !strings.Contains(got, "Not saved") || !strings.Contains(got, "/b/y.md") {
		t.Errorf("refusal says %q", got)
	}
	if v := eval[string](t, tb, `document.querySelector("#edit-form #content").value`); v != "typed text\n" {
		t.Errorf("typed text lost: the form holds %q", v)
	}
	if m, err := e.api.GetMemory(ctx, st.ID, x.ID, trove.ViewFull); err != nil || m.Path != "/a/x.md" || *m.Content != "x\n" {
		t.Fatalf("API after the refused move = %+v, %v", m, err)
	}
	tb.run(t, "move",
		setValue("#edit-form #path", "/c/x.md"),
		submit("#edit-form #path"),
		waitVisible("#notice"),
	)
	if got := tb.text(t, "#memory-path"); got != "/c/x.md" {
		t.Errorf("page after the move shows %q", got)
	}
	if m, err := e.api.GetMemory(ctx, st.ID, x.ID, trove.ViewFull); err != nil || m.Path != "/c/x.md" || *m.Content != "typed text\n" {
		t.Fatalf("API after the move = %+v, %v", m, err)
	}
	tb.quiet(t)
}

// testKeyboard signs in and opens a directory and a memory with the
// keyboard only: Enter in the key field, Tab to the tree, Enter on a
// directory (loaded then), Enter on a link.
func testKeyboard(t *testing.T, bctx context.Context) {
	e := newEnv(t, nil)
	ctx := context.Background()
	st, err := e.api.CreateStore(ctx, trove.CreateStoreParams{Name: "keys"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.api.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/dir/note.md", Content: "by keyboard\n"}); err != nil {
		t.Fatal(err)
	}
	tb := newTab(t, bctx)
	tb.run(t, "sign in with Enter",
		chromedp.Navigate(e.url+"/console/signin"),
		waitVisible("#api_key"),
		sendKeys("#api_key", e.key+"\r"),
		waitVisible("#stores"),
		chromedp.Navigate(e.url+"/console/stores/"+st.ID),
		waitVisible("li.dir summary"),
	)
	// Tab from the "New memory" button reaches the breadcrumb, then the
	// directory.
	eval[bool](t, tb, `(document.querySelector("#new-memory").focus(), true)`)
	for i := 0; i < 10; i++ {
		if eval[bool](t, tb, `document.activeElement && document.activeElement.matches("li.dir summary")`) {
			break
		}
		tb.run(t, "tab", chromedp.KeyEvent("\t"))
	}
	if !eval[bool](t, tb, `document.activeElement.matches("li.dir summary")`) {
		t.Fatal("Tab never reached the directory")
	}
	tb.run(t, "open the directory with Enter", chromedp.KeyEvent("\r"), waitVisible("li.dir li.file a"))
	tb.run(t, "tab to the memory", chromedp.KeyEvent("\t"))
	if !eval[bool](t, tb, `document.activeElement.matches("li.dir li.file a")`) {
		t.Fatal("Tab after the directory does not reach its memory")
	}
	tb.run(t, "open it with Enter", chromedp.KeyEvent("\r"), waitVisible("#memory-content"))
	if got := tb.text(t, "#memory-content"); got != "by keyboard\n" {
		t.Errorf("memory page shows %q", got)
	}
	tb.quiet(t)
}
