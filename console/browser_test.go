package console_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/console"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/skipnote"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// requireChromiumEnv makes a missing Chromium a failure (CI sets it).
const requireChromiumEnv = "TROVE_REQUIRE_CHROMIUM"

// chromiumPath finds Debian's chromium (or another Chrome); without one the
// browser tests skip with a line naming the package, unless
// TROVE_REQUIRE_CHROMIUM is set, where they fail.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(requireChromiumEnv) != "" {
		t.Fatalf("no chromium on PATH and %s is set: install it (apt-get install chromium)", requireChromiumEnv)
	}
	skipnote.Skip(t, "browser tests need Chromium: apt-get install chromium")
	return ""
}

// browser starts one headless Chromium for a test and its subtests.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("metrics-recording-only", true),
		// The TLS test's certificate is self-signed; the page must still
		// be served over HTTPS for the cookie to be Secure.
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil {
		cancelB()
		cancelA()
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() { cancelB(); cancelA() })
	return bctx
}

// tab opens a new tab with a deadline; it records what the page does that
// an inert page must not: dialogs, console messages, log entries,
// exceptions, and requests to another origin than allowed.
type tab struct {
	ctx    context.Context
	mu     sync.Mutex
	events []string // dialogs, console, log, exceptions
	reqs   []string // every request URL
}

func newTab(t *testing.T, bctx context.Context) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(bctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // opens the tab
		t.Fatalf("opening a tab: %v", err)
	}
	tb := &tab{ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			tb.events = append(tb.events, "dialog: "+ev.Message)
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		case *runtime.EventConsoleAPICalled:
			tb.events = append(tb.events, "console."+string(ev.Type))
		case *runtime.EventExceptionThrown:
			tb.events = append(tb.events, "exception: "+ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			// Network entries are the browser noting a 4xx page (an
			// error page the test asked for) and violation entries its
			// timing warnings on a loaded machine ("handler took 60ms"):
			// neither is the page's doing.
			if ev.Entry.Source != cdplog.EntrySourceNetwork && ev.Entry.Source != cdplog.EntrySourceViolation {
				tb.events = append(tb.events, "log ("+string(ev.Entry.Source)+"): "+ev.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			tb.reqs = append(tb.reqs, ev.Request.URL)
		}
	})
	if err != nil {
		t.Fatalf("listening to the tab: %v", err)
	}
	return tb
}

func click(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }
func waitVisible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}
func submit(sel string) chromedp.Action[chromedp.Void] { return chromedp.Submit(chromedp.CSS(sel)) }
func setValue(sel, v string) chromedp.Action[chromedp.Void] {
	return chromedp.SetValue(chromedp.CSS(sel), v)
}
func sendKeys(sel, v string) chromedp.Action[chromedp.Void] {
	return chromedp.SendKeys(chromedp.CSS(sel), v)
}

// run runs actions in the tab with a deadline; a failure says where the
// page was and what it showed.
func (tb *tab) run(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		dctx, dcancel := context.WithTimeout(tb.ctx, 5*time.Second)
		defer dcancel()
		loc, _ := chromedp.Run(dctx, chromedp.Location())
		body, _ := chromedp.Run(dctx, chromedp.TextContent(chromedp.CSS("main")))
		t.Fatalf("%s: %v\n(at %s, page says: %.600s)", what, err, loc, strings.Join(strings.Fields(body), " "))
	}
}

// text returns the textContent of the first element matching sel.
func (tb *tab) text(t *testing.T, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, tb *tab, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// cookie returns the console cookie of the tab's browser.
func (tb *tab) cookie(t *testing.T, url string) *network.Cookie {
	t.Helper()
	res, err := chromedp.Call(tb.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{url + "/console/"}})
	if err != nil {
		t.Fatalf("cookies: %v", err)
	}
	for _, c := range res.Cookies {
		if c.Name == "trove_console" {
			return c
		}
	}
	return nil
}

// quiet fails when the page opened a dialog, logged anything or threw.
func (tb *tab) quiet(t *testing.T) {
	t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.events) > 0 {
		t.Errorf("the page was not inert: %q", tb.events)
	}
}

// foreign returns the requests to another origin than base.
func (tb *tab) foreign(base string) []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var out []string
	for _, r := range tb.reqs {
		if !strings.HasPrefix(r, base+"/") {
			out = append(out, r)
		}
	}
	return out
}

// env is a trove server (core over SQLite, httpapi with the console) on a
// loopback port, with an API key and an API client.
type env struct {
	url   string
	svc   *core.Service
	key   string
	keyID string
	api   *httpapi.Client
}

func newEnv(t *testing.T, tlsConf *tls.Config) *env {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := core.New(db, core.Options{})
	k, secret, err := svc.CreateKey(context.Background(), "wrkspc_default", "browser test")
	if err != nil {
		t.Fatal(err)
	}
	con := console.New(console.Config{Services: svc, Sessions: svc, Dreams: svc, Auth: svc})
	h := httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Dreams: svc, Auth: svc, Console: con})
	srv := h.HTTPServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scheme := "http"
	if tlsConf != nil {
		srv.TLSConfig = tlsConf
		ln = tls.NewListener(ln, srv.TLSConfig)
		scheme = "https"
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	e := &env{url: scheme + "://" + ln.Addr().String(), svc: svc, key: secret, keyID: k.ID}
	e.api = httpapi.NewClient(e.url, secret)
	return e
}

// signIn signs the tab in with key and waits for the stores page.
func (e *env) signIn(t *testing.T, tb *tab, key string) {
	t.Helper()
	tb.run(t, "sign in",
		chromedp.Navigate(e.url+"/"),
		waitVisible("#api_key"),
		sendKeys("#api_key", key),
		submit("#api_key"),
		waitVisible("#create-store"),
	)
}

func TestBrowser(t *testing.T) {
	bctx := browser(t)
	t.Run("Flow", func(t *testing.T) { testFlow(t, bctx) })
	t.Run("RenameMove", func(t *testing.T) { testRename(t, bctx) })
	t.Run("Keyboard", func(t *testing.T) { testKeyboard(t, bctx) })
	t.Run("HostileContent", func(t *testing.T) { testHostile(t, bctx) })
	t.Run("CrossSiteAndNoCookie", func(t *testing.T) { testCSRF(t, bctx) })
	t.Run("RevokedKey", func(t *testing.T) { testRevoked(t, bctx) })
	t.Run("TLS", func(t *testing.T) { testTLS(t, bctx) })
	t.Run("Dreams", func(t *testing.T) { testDreams(t, bctx) })
	t.Run("TimeMachine", func(t *testing.T) { testTimeMachine(t, bctx) })
	t.Run("Directories", func(t *testing.T) { testDirectories(t, bctx) })
	t.Run("MarkdownPreview", func(t *testing.T) { testMarkdownPreview(t, bctx) })
	t.Run("Conversation", func(t *testing.T) { testConversation(t, bctx) })
	t.Run("Current", func(t *testing.T) { testCurrent(t, bctx) })
	if dir := os.Getenv("TROVE_CONSOLE_SCREENSHOTS"); dir != "" {
		t.Run("Screenshots", func(t *testing.T) { screenshots(t, bctx, dir) })
	}
}

func wantErrCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if trove.ErrorCode(err) != code {
		t.Fatalf("%s: error %v, want code %s", what, err, code)
	}
}

// storeByName finds a store (archived too) through the API.
func (e *env) storeByName(t *testing.T, name string) *trove.Store {
	t.Helper()
	pg, err := e.api.ListStores(context.Background(), trove.ListStoresParams{IncludeArchived: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pg.Data {
		if pg.Data[i].Name == name {
			return &pg.Data[i]
		}
	}
	return nil
}

func (e *env) memoryByPath(t *testing.T, storeID, p string) *trove.Memory {
	t.Helper()
	pg, err := e.api.ListMemories(context.Background(), storeID, trove.ListMemoriesParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range pg.Data {
		if it.Memory != nil && it.Memory.Path == p {
			m, err := e.api.GetMemory(context.Background(), storeID, it.Memory.ID, trove.ViewFull)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	return nil
}

// plainClient is an HTTP client that does not follow redirects.
// postForm POSTs form to u with the console session cookie token, as a
// script outside the page would (no CSRF token unless form holds one), and
// returns the answer's status.
func postForm(t *testing.T, u, token string, form url.Values) int {
	t.Helper()
	req, err := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: token})
	resp, err := plainClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func plainClient() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
