package console_test

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/trovehq/trove"
)

// testCurrent drives, at a desktop's 1280 px and a phone's 390 px, what
// issue 23 asked of the console: relative times with the exact UTC time
// on hover, key and session names instead of IDs, the store page in tabs
// (also without script), the dreams list with store names and every
// column in view, a header whose search box fits the screen, and a
// rollback preview showing the content that comes back.
func testCurrent(t *testing.T, bctx context.Context) {
	e := newEnv(t, nil)
	ctx := context.Background()
	st, err := e.api.CreateStore(ctx, trove.CreateStoreParams{Name: "acme notes"})
	if err != nil {
		t.Fatal(err)
	}
	const before = "Use tabs.\nWrap at 100 columns.\n"
	m, err := e.api.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/conventions/style.md", Content: before})
	if err != nil {
		t.Fatal(err)
	}
	// A titled session (the API client sends a title only with an agent).
	se, tok, err := e.svc.CreateSession(trove.WithPrincipal(ctx, mustPrincipal(t, e)), trove.CreateSessionParams{Title: "nightly cleanup", Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newAPI(e, tok).UpdateMemory(ctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("Use spaces.\nWrap at 100 columns.\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateDream(trove.WithPrincipal(ctx, mustPrincipal(t, e)), trove.CreateDreamParams{StoreID: st.ID, SessionIDs: []string{se.ID}, Model: trove.DefaultDreamModel}); err != nil {
		t.Fatal(err)
	}
	storeURL := e.url + "/console/stores/" + st.ID
	utc := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$`)
	recent := regexp.MustCompile(`^(just now|\d+ minutes? ago)$`)

	e.signIn(t, newTab(t, bctx), e.key) // the browser's tabs share the cookie
	for _, w := range []struct {
		name   string
		width  int
		height int
		phone  bool
	}{{"1280", 1280, 900, false}, {"390", 390, 844, true}} {
		t.Run(w.name, func(t *testing.T) {
			tb := newTab(t, bctx)
			vp := chromedp.EmulateViewport(int64(w.width), int64(w.height))
			if w.phone {
				vp = chromedp.EmulateViewport(int64(w.width), int64(w.height), chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulatePortrait)
			}
			tb.run(t, "viewport", vp, chromedp.Navigate(e.url+"/console/stores"), waitVisible("#stores"))
			fits := func(page string) {
				t.Helper()
				if sw := eval[int](t, tb, `document.documentElement.scrollWidth`); sw > w.width {
					t.Errorf("%s: the page is %d px wide on a %d px screen", page, sw, w.width)
				}
			}
			visible := func(sel string) bool {
				t.Helper()
				return eval[bool](t, tb, `(() => { const el = document.querySelector(`+jsString(sel)+`); return !!el && el.getClientRects().length > 0; })()`)
			}

			// The header: the search box is on screen, usable, and leads
			// to the search page.
			fits("stores")
			type rect struct{ Left, Right, Width float64 }
			r := eval[rect](t, tb, `(() => { const b = document.querySelector("#nav-q").getBoundingClientRect(); return {Left: b.left, Right: b.right, Width: b.width}; })()`)
			if r.Left < 0 || r.Right > float64(w.width) || r.Width < 150 {
				t.Errorf("the header's search box spans %.0f..%.0f px on a %d px screen", r.Left, r.Right, w.width)
			}
			tb.run(t, "search from the header", sendKeys("#nav-q", "columns\n"), waitVisible("#hits"))

			// Relative times, the exact UTC time on hover; names for the
			// API key and the session that wrote.
			tb.run(t, "history", chromedp.Navigate(storeURL+"/memories/"+m.ID+"/history"), waitVisible("#versions"))
			fits("history")
			type when struct{ Text, Title, DateTime string }
			times := eval[[]when](t, tb, `[...document.querySelectorAll("#versions time")].map(t => ({Text: t.textContent, Title: t.title, DateTime: t.dateTime}))`)
			if len(times) != 2 {
				t.Errorf("history shows %d times, want 2", len(times))
			}
			for _, tm := range times {
				if !recent.MatchString(tm.Text) || !utc.MatchString(tm.Title) || !strings.HasPrefix(tm.DateTime, tm.Title[:10]+"T") {
					t.Errorf("a version's time reads %+v, want a relative time with the UTC time on hover", tm)
				}
			}
			names := eval[[]string](t, tb, `[...document.querySelectorAll("#versions .actor-name")].map(n => n.textContent)`)
			if strings.Join(names, ",") != "nightly cleanup,browser test" {
				t.Errorf("history names its writers %q, want the session's title and the key's name", names)
			}
			if txt := tb.text(t, "#versions"); strings.Contains(txt, "apikey_") || strings.Contains(txt, "sesn_") {
				t.Errorf("history shows raw IDs: %q", txt)
			}
			if who := tb.text(t, "header"); !w.phone && !strings.Contains(who, "browser test") {
				t.Errorf("the header does not name the signed-in key: %q", who)
			}

			// The store page's tabs: one section at a time, each with its
			// own URL.
			tb.run(t, "store", chromedp.Navigate(storeURL), waitVisible("#store-tabs"))
			fits("store")
			shown := func(want string) {
				t.Helper()
				for _, sel := range []string{"#tree", "#asof-form", "#store-settings", "#delete-store"} {
					if got := visible(sel); got != (sel == want) {
						t.Errorf("%s visible = %v with %s chosen", sel, got, want)
					}
				}
			}
			shown("#tree")
			tb.run(t, "settings tab", click("#tab-settings"), waitVisible("#store-settings"))
			shown("#store-settings")
			if h := eval[string](t, tb, `location.hash`); h != "#settings" {
				t.Errorf("the settings tab's URL ends in %q", h)
			}
			if y := eval[float64](t, tb, `window.scrollY`); y != 0 {
				t.Errorf("choosing a tab scrolled the page to %v", y)
			}
			tb.run(t, "danger tab", click("#tab-danger"), waitVisible("#delete-store"))
			shown("#delete-store")
			tb.run(t, "history tab by URL", chromedp.Navigate(storeURL+"#history"), waitVisible("#asof-form"))
			shown("#asof-form")
			// Without script the tabs work the same.
			scripts := func(off bool) {
				t.Helper()
				if _, err := chromedp.Call(tb.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: off}); err != nil {
					t.Fatalf("script execution disabled=%v: %v", off, err)
				}
			}
			scripts(true)
			tb.run(t, "script off", chromedp.Navigate(storeURL+"#danger"), waitVisible("#delete-store"))
			shown("#delete-store")
			tb.run(t, "memories tab without script", click("#tab-memories"), waitVisible("#tree"))
			shown("#tree")
			scripts(false)

			// The dreams list: store names, and at a desktop's width every
			// column in view.
			tb.run(t, "dreams", chromedp.Navigate(e.url+"/console/dreams"), waitVisible("#dreams"))
			fits("dreams")
			if got := eval[[]string](t, tb, `[...document.querySelectorAll("#dreams tbody .store-link")].map(a => a.textContent)`); strings.Join(got, ",") != "acme notes" {
				t.Errorf("dreams list names the input store %q, want acme notes", got)
			}
			if !w.phone {
				if n := eval[int](t, tb, `[...document.querySelectorAll("#dreams th")].filter(th => th.getBoundingClientRect().right > window.innerWidth || th.getBoundingClientRect().right > th.closest(".table-wrap").getBoundingClientRect().right + 0.5).length`); n != 0 {
					t.Errorf("%d columns of the dreams list are out of view at 1280 px", n)
				}
			}

			// The rollback preview shows the content that comes back.
			q := url.Values{"actor": {se.ID}, "since": {"1"}}
			tb.run(t, "rollback preview", chromedp.Navigate(storeURL+"/rollback?"+q.Encode()), waitVisible("#rb-changes"))
			fits("rollback")
			if got := eval[string](t, tb, `document.querySelector(".rb-content").textContent`); got != before {
				t.Errorf("the preview brings back %q, want %q", got, before)
			}
			if d := tb.text(t, ".rb-back pre.diff"); !strings.Contains(d, "-Use spaces.") || !strings.Contains(d, "+Use tabs.") {
				t.Errorf("the preview's difference reads %q", d)
			}
			if h := tb.text(t, "h1"); !strings.Contains(h, "nightly cleanup") {
				t.Errorf("the preview's heading %q does not name the session", h)
			}
			tb.quiet(t)
		})
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
