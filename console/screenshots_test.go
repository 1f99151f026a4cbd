package console_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trovehq/trove"
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
	se, token, err := e.svc.CreateSession(trove.WithPrincipal(ctx, mustPrincipal(t, e)), trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: st.ID, Instructions: "Check conventions before writing code."}}})
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
	tb.run(t, "search", chromedp.Navigate(e.url+"/console/search?q=columns"), waitVisible("#hits"))
	shot("search")
	tb.run(t, "as of", chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/asof/"+styleID+"?at="+vs.Data[len(vs.Data)-1].ID), waitVisible("#asof-content"))
	shot("asof")
	tb.run(t, "rollback preview", chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/rollback?actor="+se.ID+"&since="+vs.Data[len(vs.Data)-1].ID), waitVisible("#rb-changes"))
	shot("rollback")
	tb.run(t, "phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulatePortrait),
		chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/memories/"+styleID), waitVisible("#memory-content"))
	shot("memory-phone")
	tb.quiet(t)
}
