package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/dreamrun"
	"github.com/trovehq/trove/internal/claudetest"
)

// dreamFixture makes a store and a session that used it, and starts a
// dream runner on e whose Messages API answers turns.
func dreamFixture(t *testing.T, e *env, turns ...claudetest.Turn) (*trove.Store, *trove.Session) {
	t.Helper()
	ctx := trove.WithPrincipal(context.Background(), mustPrincipal(t, e))
	st, err := e.svc.CreateStore(ctx, trove.CreateStoreParams{Name: "user prefs"})
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"/home.md": "The user lives in Paris.\n", "/drinks-copy.md": "Coffee.\n"} {
		if _, err := e.svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	se, _, err := e.svc.CreateSession(ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.AppendEvents(ctx, se.ID, []trove.NewSessionEvent{
		{Type: trove.EventUserMessage, Body: `{"content":[{"type":"text","text":"I moved to Lyon."}]}`},
	}); err != nil {
		t.Fatal(err)
	}
	claude := claudetest.New(t, turns...)
	c := anthropic.NewClient(option.WithBaseURL(claude.URL), option.WithAPIKey("sk-ant-test-key"), option.WithMaxRetries(0))
	r := dreamrun.New(dreamrun.Config{Service: e.svc, Claude: &c, Heartbeat: 50 * time.Millisecond, Poll: 20 * time.Millisecond})
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(rctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return st, se
}

// waitDreamStatus reloads a dream page until it shows want.
func (tb *tab) waitDreamStatus(t *testing.T, url, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		tb.run(t, "dream page", chromedp.Navigate(url), waitVisible("#dream-status"))
		got := tb.text(t, "#dream-status")
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("dream page still shows %q after 20s, want %q", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// testDreams creates a dream in the console whose agent writes markup into
// paths and contents, with markup in its instructions; sees it complete;
// reads its change set as text; archives it; then cancels a second one
// while it runs. The API agrees with each step.
func testDreams(t *testing.T, bctx context.Context) {
	e := newEnv(t, nil)
	ctx := context.Background()
	hostilePath := `/<img src=x onerror=alert('path')>.md`
	hostileContent := `<script>alert("content")</script>` + "\n"
	hostileInstr := `<script>alert("instr")</script><b>keep</b>`
	hold, reached := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(hold) })
	st, se := dreamFixture(t, e,
		claudetest.Turn{ToolUses: []claudetest.ToolUse{
			claudetest.Memory(map[string]any{"command": "str_replace", "path": "/memories/home.md", "old_str": "Paris", "new_str": "Lyon"}),
			claudetest.Memory(map[string]any{"command": "delete", "path": "/memories/drinks-copy.md"}),
			claudetest.Memory(map[string]any{"command": "create", "path": "/memories" + hostilePath, "file_text": hostileContent}),
		}},
		claudetest.Turn{Text: "Moved the user to Lyon."},
		claudetest.Turn{Hold: hold, Reached: reached},  // the second dream runs until canceled
		claudetest.Turn{Status: http.StatusBadRequest}, // the third fails
	)

	tb := newTab(t, bctx)
	e.signIn(t, tb, e.key)
	// A dream without sessions: the API's message, on the form again.
	tb.run(t, "new dream without sessions",
		click(`nav a[href="/console/dreams"]`),
		waitVisible("#new-dream"),
		chromedp.SetValue(chromedp.CSS("#store"), st.ID),
		submit("#store"),
		waitVisible("#create-dream"),
		setValue("#instructions", hostileInstr),
		submit("#instructions"),
		waitVisible("#error"),
	)
	if got := tb.text(t, "#error"); !strings.Contains(got, "session") {
		t.Errorf("error without sessions: %q", got)
	}
	if v := eval[string](t, tb, `document.querySelector("#instructions").value`); v != hostileInstr {
		t.Errorf("instructions kept as %q", v)
	}
	tb.run(t, "create dream",
		click(`input[name=session][value="`+se.ID+`"]`),
		submit("#instructions"),
		waitVisible("#dream-status"),
	)
	dreamURL := eval[string](t, tb, `location.pathname`)
	id := strings.TrimPrefix(dreamURL, "/console/dreams/")
	tb.waitDreamStatus(t, e.url+dreamURL, "completed")

	d, err := e.api.GetDream(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != trove.DreamCompleted || d.InputStoreID != st.ID || d.Instructions != hostileInstr || !cmp.Equal(d.SessionIDs, []string{se.ID}) || d.OutputStoreID == "" || d.OutputStoreID == st.ID {
		t.Fatalf("API dream = %+v", d)
	}
	if got := tb.text(t, "#dream-instructions"); got != hostileInstr {
		t.Errorf("instructions shown as %q", got)
	}
	if href := eval[string](t, tb, `document.querySelector("#output-store").getAttribute("href")`); href != "/console/stores/"+d.OutputStoreID {
		t.Errorf("output store link %q", href)
	}
	type change struct{ Kind, Path, Diff string }
	got := eval[[]change](t, tb, `[...document.querySelectorAll("#changes article.change")].map(a => ({Kind: a.dataset.kind, Path: a.querySelector(".path").textContent, Diff: a.querySelector("pre.diff").textContent}))`)
	want := []change{
		{"added", hostilePath, "--- /dev/null\n+++ output" + hostilePath + "\n@@ -0,0 +1 @@\n+" + hostileContent},
		{"removed", "/drinks-copy.md", "--- input/drinks-copy.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-Coffee.\n"},
		{"modified", "/home.md", "--- input/home.md\n+++ output/home.md\n@@ -1 +1 @@\n-The user lives in Paris.\n+The user lives in Lyon.\n"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("change set on the page (-want +got):\n%s", diff)
	}
	if n := eval[int](t, tb, `document.querySelectorAll("main img, main script:not([src]), main b, main iframe").length`); n != 0 {
		t.Errorf("%d elements made from the dream's content", n)
	}

	tb.run(t, "archive", submit("#archive-dream button"), waitVisible("#dream-archived"))
	if d, err := e.api.GetDream(ctx, id); err != nil || d.ArchivedAt == nil {
		t.Fatalf("after archive: %+v, %v", d, err)
	}
	tb.run(t, "list hides archived", chromedp.Navigate(e.url+"/console/dreams"), waitVisible("#dreams"))
	if n := eval[int](t, tb, `document.querySelectorAll("#dreams a[href^='/console/dreams/drm_']").length`); n != 0 {
		t.Errorf("list without archived shows %d dreams", n)
	}

	// A second dream, canceled from the console while it runs.
	tb.run(t, "second dream",
		chromedp.Navigate(e.url+"/console/stores/"+st.ID),
		click("#new-dream-from-store"),
		waitVisible("#create-dream"),
		click(`input[name=session][value="`+se.ID+`"]`),
		submit("#model"),
		waitVisible("#cancel-dream"),
	)
	id2 := strings.TrimPrefix(eval[string](t, tb, `location.pathname`), "/console/dreams/")
	select {
	case <-reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the runner never started the second dream")
	}
	tb.waitDreamStatus(t, e.url+"/console/dreams/"+id2, "running")
	// A cancel without the page's CSRF token is refused and changes nothing.
	code := postForm(t, e.url+"/console/dreams/"+id2+"/cancel", tb.cookie(t, e.url).Value, url.Values{"csrf": {"guess"}})
	if d, err := e.api.GetDream(ctx, id2); code != http.StatusForbidden || err != nil || d.Status != trove.DreamRunning {
		t.Fatalf("cancel without CSRF token: %d; dream %+v, %v", code, d, err)
	}
	tb.run(t, "cancel", submit("#cancel-dream button"), waitVisible("#notice"))
	if got := tb.text(t, "#dream-status"); got != "canceled" {
		t.Errorf("after cancel the page shows %q", got)
	}
	if d, err := e.api.GetDream(ctx, id2); err != nil || d.Status != trove.DreamCanceled {
		t.Fatalf("after cancel: %+v, %v", d, err)
	}

	// A failed dream shows why, and can be archived but not canceled.
	d3, err := e.api.CreateDream(ctx, trove.CreateDreamParams{StoreID: st.ID, SessionIDs: []string{se.ID}, Model: trove.DefaultDreamModel})
	if err != nil {
		t.Fatal(err)
	}
	tb.waitDreamStatus(t, e.url+"/console/dreams/"+d3.ID, "failed")
	if d3, err = e.api.GetDream(ctx, d3.ID); err != nil || d3.Error == nil {
		t.Fatalf("API failed dream: %+v, %v", d3, err)
	}
	if got, want := tb.text(t, "#dream-error"), d3.Error.Type+": "+d3.Error.Message; got != want {
		t.Errorf("failed dream shows %q, want %q", got, want)
	}
	if n := eval[int](t, tb, `document.querySelectorAll("#archive-dream").length - document.querySelectorAll("#cancel-dream").length`); n != 1 {
		t.Errorf("a failed dream offers archive but not cancel: got %d", n)
	}
	tb.run(t, "list with archived, canceled only", chromedp.Navigate(e.url+"/console/dreams?status=canceled&archived=1"), waitVisible("#dreams"))
	if rows := eval[[]string](t, tb, `[...document.querySelectorAll("#dreams tbody code")].map(c => c.textContent).filter(s => s.startsWith("drm_"))`); !cmp.Equal(rows, []string{id2}) {
		t.Errorf("canceled dreams listed: %q, want %q", rows, id2)
	}
	tb.quiet(t)
	if f := tb.foreign(e.url); len(f) > 0 {
		t.Errorf("requests to other origins: %q", f)
	}
}
