package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove/storage/sqlite/sqlitetest"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/console"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/sqlite"
)

// namingCore is core with its key and session listings counted: a page
// names its actors with one listing of each, never one per row.
type namingCore struct {
	*core.Service
	keyLists, sessLists atomic.Int64
}

func (c *namingCore) ListKeys(ctx context.Context, ws string) ([]trove.APIKey, error) {
	c.keyLists.Add(1)
	return c.Service.ListKeys(ctx, ws)
}

func (c *namingCore) ListSessions(ctx context.Context, p trove.ListSessionsParams) (*trove.Page[trove.Session], error) {
	c.sessLists.Add(1)
	return c.Service.ListSessions(ctx, p)
}

// currentEnv is a console over core with a fixed clock: the data is
// written at t0, the console reads it 3 hours and 30 seconds later.
type currentEnv struct {
	svc   *namingCore
	h     http.Handler
	ctx   context.Context
	token string
	keyID string
	api   context.Context // the API key's own principal
	t0    time.Time
}

func newCurrentEnv(t *testing.T) *currentEnv {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	svc := &namingCore{Service: core.New(db, core.Options{Now: func() time.Time { return t0 }})}
	k, secret, err := svc.CreateKey(context.Background(), "wrkspc_default", "alice's laptop")
	if err != nil {
		t.Fatal(err)
	}
	token, p, err := svc.StartConsoleSession(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := svc.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	h := console.New(console.Config{Services: svc, Sessions: svc, Dreams: svc, Auth: svc,
		Now: func() time.Time { return t0.Add(3*time.Hour + 30*time.Second) }})
	return &currentEnv{svc: svc, h: h, ctx: trove.WithPrincipal(context.Background(), p), token: token, keyID: k.ID, t0: t0, api: trove.WithPrincipal(context.Background(), ap)}
}

func (e *currentEnv) do(t *testing.T, method, path string, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	var req *http.Request
	if form != nil {
		req = httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, path, nil)
	}
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: e.token})
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	return w
}

func (e *currentEnv) get(t *testing.T, path string) string {
	t.Helper()
	w := e.do(t, "GET", path, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %.400s", path, w.Code, w.Body.String())
	}
	return w.Body.String()
}

// currentFixture is a store whose memory the console user wrote and a
// titled session rewrote, and where an untitled session and the API key
// itself wrote a memory each.
type currentFixture struct {
	st       *trove.Store
	mem      *trove.Memory
	sess     *trove.Session // titled
	untitled *trove.Session
}

func (e *currentEnv) fixture(t *testing.T) currentFixture {
	t.Helper()
	st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "acme notes"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/style.md", Content: "Use tabs.\nWrap at 100 columns.\n"})
	if err != nil {
		t.Fatal(err)
	}
	se, tok, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Title: "nightly cleanup", Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := e.svc.Authenticate(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.UpdateMemory(trove.WithPrincipal(context.Background(), sp), st.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("Use spaces.\nWrap at 100 columns.\n")}); err != nil {
		t.Fatal(err)
	}
	un, tok2, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	up, err := e.svc.Authenticate(context.Background(), tok2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateMemory(trove.WithPrincipal(context.Background(), up), st.ID, trove.CreateMemoryParams{Path: "/untitled.md", Content: "x\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateMemory(e.api, st.ID, trove.CreateMemoryParams{Path: "/by-key.md", Content: "k\n"}); err != nil {
		t.Fatal(err)
	}
	return currentFixture{st: st, mem: m, sess: se, untitled: un}
}

// TestConsoleCurrent checks, without a browser, what the console's pages
// write for relative times, names, the store's tabs, the dreams list and
// the rollback preview.
func TestConsoleCurrent(t *testing.T) {
	t.Parallel()
	e := newCurrentEnv(t)
	f := e.fixture(t)
	sid := f.st.ID

	t.Run("RelativeTimesWithUTCOnHover", func(t *testing.T) {
		body := e.get(t, "/console/stores/"+sid+"/memories/"+f.mem.ID+"/history")
		want := `<time datetime="2026-12-02T09:00:00Z" title="2026-12-02 09:00:00 UTC">3 hours ago</time>`
		if n := strings.Count(body, want); n != 2 {
			t.Errorf("history page has %d times written %s, want 2 (one per version)\n%s", n, want, body)
		}
		if strings.Contains(body, ">2026-12-02 09:00:00 UTC<") {
			t.Errorf("history page still shows a bare UTC time")
		}
	})

	t.Run("KeyAndSessionNames", func(t *testing.T) {
		e.svc.keyLists.Store(0)
		e.svc.sessLists.Store(0)
		body := e.get(t, "/console/stores/"+sid+"/memories/"+f.mem.ID+"/history")
		for _, want := range []string{
			`<span class="actor" title="user_` + e.keyID + `">console user <span class="actor-name">alice&#39;s laptop</span></span>`,
			`<span class="actor" title="` + f.sess.ID + `">session <span class="actor-name">nightly cleanup</span></span>`,
			`title="Signed in with API key ` + e.keyID + `">alice&#39;s laptop</span>`, // the header
		} {
			if !strings.Contains(body, want) {
				t.Errorf("history page lacks %s", want)
			}
		}
		if strings.Contains(body, ">API key apikey_") || strings.Contains(body, ">session sesn_") {
			t.Errorf("history page shows a raw ID where a name exists:\n%s", body)
		}
		if k, s := e.svc.keyLists.Load(), e.svc.sessLists.Load(); k != 1 || s != 1 {
			t.Errorf("the page listed keys %d times and sessions %d times, want once each", k, s)
		}
		// A session without a title shows its ID.
		body = e.get(t, "/console/stores/"+sid+"/asof?at=now")
		if !strings.Contains(body, "session "+f.untitled.ID) {
			t.Errorf("as-of page does not show the untitled session by ID")
		}
		if want := `<span class="actor" title="` + e.keyID + `">API key <span class="actor-name">alice&#39;s laptop</span></span>`; !strings.Contains(body, want) {
			t.Errorf("as-of page lacks %s", want)
		}
	})

	t.Run("StoreTabs", func(t *testing.T) {
		body := e.get(t, "/console/stores/"+sid)
		for _, want := range []string{
			`<a href="#memories" id="tab-memories">Memories</a>`,
			`<a href="#history" id="tab-history">History and time machine</a>`,
			`<a href="#settings" id="tab-settings">Settings</a>`,
			`<a href="#danger" id="tab-danger">Danger zone</a>`,
			`<div class="tabpanel" id="memories">`, `<div class="tabpanel" id="history">`,
			`<div class="tabpanel" id="settings">`, `<div class="tabpanel" id="danger">`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("store page lacks %s", want)
			}
		}
		// Each form sits in its tab.
		order := []string{`id="memories"`, `id="tree"`, `id="history"`, `id="asof-form"`, `id="fork-form"`, `id="settings"`, `id="store-settings"`, `id="danger"`, `id="archive-store"`, `id="delete-store"`}
		at := 0
		for _, s := range order {
			i := strings.Index(body, s)
			if i < at {
				t.Errorf("%s is not after the elements before it in %q", s, order)
			}
			at = i
		}
		// Saving the settings comes back to the settings tab.
		form := url.Values{"csrf": {csrfOf(t, body)}, "name": {"acme notes"}, "description": {"d"}}
		w := e.do(t, "POST", "/console/stores/"+sid, form)
		if loc := w.Header().Get("Location"); w.Code != http.StatusSeeOther || loc != "/console/stores/"+sid+"?done=saved#settings" {
			t.Errorf("saving settings: %d to %q, want 303 to the settings tab", w.Code, loc)
		}
	})

	t.Run("DreamsStoreAndSessionNames", func(t *testing.T) {
		dr, err := e.svc.CreateDream(e.ctx, trove.CreateDreamParams{StoreID: sid, SessionIDs: []string{f.sess.ID}, Model: trove.DefaultDreamModel})
		if err != nil {
			t.Fatal(err)
		}
		// The dream's page names its sessions.
		if want := `<a href="/console/sessions/` + f.sess.ID + `"><span class="actor" title="` + f.sess.ID + `"><span class="actor-name">nightly cleanup</span></span></a>`; !strings.Contains(e.get(t, "/console/dreams/"+dr.ID), want) {
			t.Errorf("dream page lacks %s", want)
		}
		body := e.get(t, "/console/dreams")
		want := `<a href="/console/stores/` + sid + `" class="store-link" title="` + sid + `">acme notes</a>`
		if !strings.Contains(body, want) {
			t.Errorf("dreams list lacks %s", want)
		}
		if strings.Contains(body, "<code>"+sid+"</code>") {
			t.Errorf("dreams list shows the store's raw ID")
		}
	})

	t.Run("RollbackPreviewContent", func(t *testing.T) {
		v := url.Values{"actor": {f.sess.ID}, "since": {"1"}}
		body := e.get(t, "/console/stores/"+sid+"/rollback?"+v.Encode())
		for _, want := range []string{
			`<pre class="content rb-content">Use tabs.` + "\nWrap at 100 columns.\n</pre>",
			`<span class="d-removed">-Use spaces.</span>`,
			`<span class="d-added">&#43;Use tabs.</span>`,
			`<span class="actor-name">nightly cleanup</span>`, // the heading names the session
		} {
			if !strings.Contains(body, want) {
				t.Errorf("rollback preview lacks %s\n%s", want, body)
			}
		}
		if m, err := e.svc.GetMemory(e.ctx, sid, f.mem.ID, trove.ViewFull); err != nil || *m.Content != "Use spaces.\nWrap at 100 columns.\n" {
			t.Errorf("the preview changed the memory: %+v, %v", m, err)
		}
	})
}
