package console_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/claudetest"
)

// screenshots writes PNGs of the main pages, at desktop width and one at
// phone width, into dir (TROVE_CONSOLE_SCREENSHOTS=docs/console):
//
//	TROVE_CONSOLE_SCREENSHOTS=$PWD/docs/console go test ./console -run TestBrowser/Screenshots
func screenshots(t *testing.T, bctx context.Context, dir string) {
	e := newEnv(t, nil)
	ctx := context.Background()
	st, err := e.api.CreateStore(ctx, trove.CreateStoreParams{Name: "acme-project", Description: "What the coding agent learned about the ACME repository"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.api.CreateStore(ctx, trove.CreateStoreParams{Name: "user-preferences", Description: "How this user likes to work"}); err != nil {
		t.Fatal(err)
	}
	mems := map[string]string{
		"/architecture/overview.md": "# ACME architecture\n\nThe API is a Go service in cmd/api; it talks to PostgreSQL through internal/store.\nBackground jobs run in cmd/worker.\n",
		"/architecture/database.md": "Migrations live in db/migrations, numbered, applied by `make migrate`.\n",
		"/conventions/style.md":     "Use tabs.\nWrap at 100 columns.\nTests are table-driven.\n",
		"/conventions/reviews.md":   "Every PR needs one approval from the owning team.\n",
		"/todo.md":                  "- flaky test in worker/retry_test.go\n- upgrade pgx\n",
	}
	var styleID string
	for p, c := range mems {
		m, err := e.api.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: c})
		if err != nil {
			t.Fatal(err)
		}
		if p == "/conventions/style.md" {
			styleID = m.ID
		}
	}
	se, token, err := e.svc.CreateSession(trove.WithPrincipal(ctx, mustPrincipal(t, e)), trove.CreateSessionParams{Title: "style pass", Stores: []trove.AttachStoreParams{{StoreID: st.ID, Instructions: "Check conventions before writing code."}}})
	if err != nil {
		t.Fatal(err)
	}
	agent := newAPI(e, token)
	for _, c := range []string{"Use tabs.\nWrap at 100 columns.\nTests are table-driven.\nPrefer errors.Is over string matching.\n", "Use tabs.\nWrap at 120 columns.\nTests are table-driven.\nPrefer errors.Is over string matching.\n"} {
		if _, err := agent.UpdateMemory(ctx, st.ID, styleID, trove.UpdateMemoryParams{Content: &c}); err != nil {
			t.Fatal(err)
		}
	}
	_ = se
	vs, err := e.api.ListVersions(ctx, st.ID, trove.ListVersionsParams{MemoryID: styleID})
	if err != nil {
		t.Fatal(err)
	}

	tb := newTab(t, bctx)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tb.run(t, "desktop", chromedp.EmulateViewport(1280, 800))
	tb.run(t, "sign-in page", chromedp.Navigate(e.url+"/console/signin"), waitVisible("#api_key"))
	shot("signin")
	e.signIn(t, tb, e.key)
	tb.run(t, "stores", waitVisible(`tr[data-stats-loaded="1"]`))
	shot("stores")
	tb.run(t, "store",
		chromedp.Navigate(e.url+"/console/stores/"+st.ID),
		waitVisible(`#store-stats[data-stats-loaded="1"]`),
		click(`li.dir:nth-of-type(2) summary`),
		waitVisible(`li.dir li.file a`),
	)
	shot("store")
	tb.run(t, "store history tab", chromedp.Navigate(e.url+"/console/stores/"+st.ID+"#history"), waitVisible("#asof-form"))
	shot("store-history")
	tb.run(t, "memory", chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/memories/"+styleID), waitVisible("#memory-content"))
	shot("memory")
	// A conflict: the agent writes while the page is open.
	c := "Use tabs.\nWrap at 120 columns.\nTests are table-driven.\nPrefer errors.Is over string matching.\nRun go vet before pushing.\n"
	if _, err := agent.UpdateMemory(ctx, st.ID, styleID, trove.UpdateMemoryParams{Content: &c}); err != nil {
		t.Fatal(err)
	}
	tb.run(t, "conflict",
		setValue("#edit-form #content", "Use tabs.\nWrap at 100 columns.\nTests are table-driven.\nPrefer errors.Is over string matching.\n"),
		submit("#edit-form #content"),
		waitVisible("#conflict"),
	)
	shot("conflict")
	tb.run(t, "history", chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/memories/"+styleID+"/history"), waitVisible("#versions"))
	shot("history")
	tb.run(t, "diff", chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/memories/"+styleID+"/diff?a="+vs.Data[len(vs.Data)-1].ID+"&b=current"), waitVisible("pre.diff"))
	shot("diff")
	tb.run(t, "version", chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/versions/"+vs.Data[1].ID), waitVisible("#redact-form"))
	shot("version-redact")
	tb.run(t, "sessions", chromedp.Navigate(e.url+"/console/sessions/"+se.ID), waitVisible("main h1"))
	shot("session")
	// A completed dream and its change set.
	dst, dse := dreamFixture(t, e, claudetest.Turn{ToolUses: []claudetest.ToolUse{
		claudetest.Memory(map[string]any{"command": "str_replace", "path": "/memories/home.md", "old_str": "lives in Paris.", "new_str": "lives in Lyon (moved from Paris last month)."}),
		claudetest.Memory(map[string]any{"command": "delete", "path": "/memories/drinks-copy.md"}),
		claudetest.Memory(map[string]any{"command": "create", "path": "/memories/drinks.md", "file_text": "The user drinks tea (switched from coffee).\n"}),
	}, Usage: claudetest.Usage{Input: 1840, Output: 152, CacheCreation: 1200}}, claudetest.Turn{Text: "Done.", Usage: claudetest.Usage{Input: 2010, Output: 24, CacheRead: 1200}})
	dr, err := e.api.CreateDream(ctx, trove.CreateDreamParams{StoreID: dst.ID, SessionIDs: []string{dse.ID}, Model: trove.DefaultDreamModel, Instructions: "Prefer the newest evidence; keep file names stable."})
	if err != nil {
		t.Fatal(err)
	}
	tb.waitDreamStatus(t, e.url+"/console/dreams/"+dr.ID, "completed")
	shot("dream")
	tb.run(t, "dreams", chromedp.Navigate(e.url+"/console/dreams"), waitVisible("#dreams"))
	shot("dreams")
	tb.run(t, "search", chromedp.Navigate(e.url+"/console/search?q=columns"), waitVisible("#hits"))
	shot("search")
	tb.run(t, "as of", chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/asof/"+styleID+"?at="+vs.Data[len(vs.Data)-1].ID), waitVisible("#asof-content"))
	shot("asof")
	tb.run(t, "rollback preview", chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/rollback?actor="+se.ID+"&since="+vs.Data[len(vs.Data)-1].ID), waitVisible("#rb-changes"))
	shot("rollback")
	tb.run(t, "phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulatePortrait),
		chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/memories/"+styleID), waitVisible("#memory-content"))
	shot("memory-phone")
	tb.run(t, "stores on a phone", chromedp.Navigate(e.url+"/console/stores"), waitVisible("#stores"))
	shot("stores-phone")
	tb.run(t, "rollback on a phone", chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/rollback?actor="+se.ID+"&since="+vs.Data[len(vs.Data)-1].ID), waitVisible("#rb-changes"))
	shot("rollback-phone")
	tb.quiet(t)
}
