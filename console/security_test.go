package console_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/chromedp/chromedp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/certfile"
)

// testHostile shows memories whose store name, paths and contents carry
// markup, script and javascript: links, on every page that shows them, and
// checks that they are shown as text and that nothing ran: no dialog, no
// console or log message, no exception, no request to another origin, no
// element the content could have made. A control first proves the
// recorder hears a console message.
func testHostile(t *testing.T, bctx context.Context) {
	e := newEnv(t, nil)
	ctx := context.Background()

	ctl := newTab(t, bctx)
	ctl.run(t, "control page", chromedp.Navigate(e.url+"/console/signin"))
	eval[int](t, ctl, `(console.log("control"), 1)`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctl.mu.Lock()
		n := len(ctl.events)
		ctl.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("control: the recorder did not hear console.log, so its silence would prove nothing")
		}
		time.Sleep(20 * time.Millisecond)
	}

	st, err := e.api.CreateStore(ctx, trove.CreateStoreParams{Name: `<script>alert("store")</script>`, Description: `"><img src=x onerror=alert('desc')>`})
	if err != nil {
		t.Fatal(err)
	}
	hostile := []struct{ path, content string }{
		{`/"><img src=x onerror=alert('p1')>.md`, `<script>alert("c1")</script>`},
		{`/<svg onload=alert('p2')>/<script>alert('p3')<\script>.md`, "[click me](javascript:alert('c2'))\n<img src=http://example.invalid/x.png onerror=alert('c3')>\n<iframe src=\"http://example.invalid/\"></iframe>\n"},
		{`/javascript:alert('p4')`, "<a href=\"javascript:alert('c4')\">x</a><style>body{background:url(http://example.invalid/bg)}</style>"},
	}
	var ids []string
	for _, h := range hostile {
		m, err := e.api.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: h.path, Content: h.content})
		if err != nil {
			t.Fatalf("CreateMemory(%q): %v", h.path, err)
		}
		ids = append(ids, m.ID)
	}
	// A second version, for the history and diff pages.
	if _, err := e.api.UpdateMemory(ctx, st.ID, ids[0], trove.UpdateMemoryParams{Content: ptr(`<img src=x onerror=alert("v2")>`)}); err != nil {
		t.Fatal(err)
	}

	tb := newTab(t, bctx)
	e.signIn(t, tb, e.key)
	if got := tb.text(t, "#stores .store-link"); got != st.Name {
		t.Errorf("stores list shows %q, want the name as text", got)
	}
	tb.run(t, "store page (expand the hostile directory)",
		chromedp.Navigate(e.url+"/console/stores/"+st.ID),
		waitVisible("li.dir summary"),
		click("li.dir summary"),
		waitVisible("li.dir li.file a"),
	)
	if got := tb.text(t, "h1"); !strings.Contains(got, st.Name) {
		t.Errorf("store heading %q", got)
	}
	if got := tb.text(t, "li.dir li.file a"); got != `<script>alert('p3')<\script>.md` {
		t.Errorf("lazily loaded file name %q", got)
	}
	for i, h := range hostile {
		tb.run(t, "memory page", chromedp.Navigate(e.url+"/console/stores/"+st.ID+"/memories/"+ids[i]), waitVisible("#memory-content"))
		want := h.content
		if i == 0 {
			want = `<img src=x onerror=alert("v2")>`
		}
		if got := tb.text(t, "#memory-content"); got != want {
			t.Errorf("memory %d content shown as %q, want %q", i, got, want)
		}
		if got := tb.text(t, "#memory-path"); got != h.path {
			t.Errorf("memory %d path shown as %q", i, got)
		}
		if v := eval[string](t, tb, `document.querySelector("#content").value`); v != want {
			t.Errorf("memory %d edit box holds %q", i, v)
		}
	}
	vs, err := e.api.ListVersions(ctx, st.ID, trove.ListVersionsParams{MemoryID: ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{
		"/console/stores/" + st.ID + "/memories/" + ids[0] + "/history",
		"/console/stores/" + st.ID + "/versions/" + vs.Data[1].ID,
		"/console/stores/" + st.ID + "/memories/" + ids[0] + "/diff?a=" + vs.Data[1].ID + "&b=current",
	} {
		tb.run(t, "page "+u, chromedp.Navigate(e.url+u), waitVisible("main h1"))
	}
	if d := tb.text(t, "pre.diff"); !strings.Contains(d, `-<script>alert("c1")</script>`) {
		t.Errorf("diff %q", d)
	}
	// Nothing the content made exists as an element.
	if n := eval[int](t, tb, `document.querySelectorAll("main img, main iframe, main script, main svg, main style, main a[href^=javascript]").length`); n != 0 {
		t.Errorf("%d elements from content in the page", n)
	}
	tb.quiet(t)
	if f := tb.foreign(e.url); len(f) > 0 {
		t.Errorf("requests to other origins: %q", f)
	}
	// Every console response carries the policy.
	resp, err := http.Get(e.url + "/console/signin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

// testCSRF: a form posted from another origin in the same browser (the
// cookie goes along: both are 127.0.0.1) is refused; a POST without the
// session's CSRF token is refused; a request without the cookie is sent to
// sign in (GET) or refused (POST). The API shows no change.
func testCSRF(t *testing.T, bctx context.Context) {
	e := newEnv(t, nil)
	tb := newTab(t, bctx)
	e.signIn(t, tb, e.key)

	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form id=f method=post action="%s/console/stores"><input name=name value=evil><input name=csrf value=guess><button id=go>go</button></form>`, e.url)
	}))
	defer evil.Close()
	tb.run(t, "cross-site post", chromedp.Navigate(evil.URL), click("#go"), waitVisible("#error"))
	if got := tb.text(t, "#error"); !strings.Contains(got, "Refused") {
		t.Errorf("cross-site post answered %q", got)
	}
	if s := e.storeByName(t, "evil"); s != nil {
		t.Fatalf("a cross-site post created a store: %+v", s)
	}

	c := tb.cookie(t, e.url)
	if c == nil {
		t.Fatal("no cookie")
	}
	post := func(cookie bool, form url.Values, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest("POST", e.url+"/console/stores", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if cookie {
			req.AddCookie(&http.Cookie{Name: "trove_console", Value: c.Value})
		}
		resp, err := plainClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	csrf := eval[string](t, tb, `document.querySelector("input[name=csrf]").value`)
	for _, c := range []struct {
		name   string
		cookie bool
		form   url.Values
		hdr    map[string]string
		want   int
	}{
		{"no cookie", false, url.Values{"name": {"evil"}, "csrf": {csrf}}, nil, http.StatusUnauthorized},
		{"no CSRF token", true, url.Values{"name": {"evil"}}, nil, http.StatusForbidden},
		{"wrong CSRF token", true, url.Values{"name": {"evil"}, "csrf": {strings.Repeat("0", len(csrf))}}, nil, http.StatusForbidden},
		{"other origin", true, url.Values{"name": {"evil"}, "csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"cross-site fetch", true, url.Values{"name": {"evil"}, "csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site fetch", true, url.Values{"name": {"evil"}, "csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
	} {
		code, body := post(c.cookie, c.form, c.hdr)
		if code != c.want {
			t.Errorf("%s: %d, want %d (%.200s)", c.name, code, c.want, body)
		}
	}
	if s := e.storeByName(t, "evil"); s != nil {
		t.Fatalf("a refused post created a store: %+v", s)
	}
	// The control: the same post with cookie, token and origin goes through.
	if code, body := post(true, url.Values{"name": {"allowed"}, "csrf": {csrf}}, map[string]string{"Origin": e.url}); code != http.StatusSeeOther {
		t.Fatalf("a proper post: %d %.300s", code, body)
	}
	if e.storeByName(t, "allowed") == nil {
		t.Fatal("a proper post created nothing")
	}
	// GET without the cookie: to the sign-in page.
	resp, err := plainClient().Get(e.url + "/console/stores")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/signin") {
		t.Errorf("GET without cookie: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	tb.quiet(t)
}

// testRevoked: revoking the signed-in key ends its console session at the
// next request, with a message; the key no longer signs in.
func testRevoked(t *testing.T, bctx context.Context) {
	e := newEnv(t, nil)
	k, secret, err := e.svc.CreateKey(context.Background(), "wrkspc_default", "to revoke")
	if err != nil {
		t.Fatal(err)
	}
	tb := newTab(t, bctx)
	e.signIn(t, tb, secret)
	if err := e.svc.RevokeKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	tb.run(t, "after revoke", chromedp.Navigate(e.url+"/console/stores"), waitVisible("#api_key"))
	if got := tb.text(t, "#error"); !strings.Contains(got, "revoked") {
		t.Errorf("after revoke the sign-in page says %q", got)
	}
	if c := tb.cookie(t, e.url); c != nil {
		t.Errorf("cookie kept after the session ended: %+v", c)
	}
	tb.run(t, "sign in with the revoked key",
		chromedp.Navigate(e.url+"/console/signin"),
		waitVisible("#api_key"),
		sendKeys("#api_key", secret),
		submit("#api_key"),
		waitVisible("#error"),
	)
	if got := tb.text(t, "#error"); !strings.Contains(got, "not accepted") {
		t.Errorf("revoked key sign-in says %q", got)
	}
	_, err = httpapi.NewClient(e.url, secret).ListStores(context.Background(), trove.ListStoresParams{})
	wantErrCode(t, "API with the revoked key", err, trove.EUNAUTHENTICATED)
}

// writeCert writes a self-signed certificate for 127.0.0.1 named cn.
func writeCert(t *testing.T, dir, cn string, mod time.Time) (certPath, keyPath string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	for _, p := range []string{certPath, keyPath} {
		os.Chtimes(p, mod, mod)
	}
	c, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return certPath, keyPath, pool
}

// testTLS serves the console and the API over HTTPS as trove serve does
// (certfile.Reloader as GetCertificate): the official SDK talks HTTP/2 to
// the API trusting the test certificate, the console's cookie is Secure,
// and a rotated certificate is served at the next handshake, no restart.
func testTLS(t *testing.T, bctx context.Context) {
	dir := t.TempDir()
	t0 := time.Now().Add(-time.Hour)
	cp, kp, pool1 := writeCert(t, dir, "first.test", t0)
	certs, err := certfile.New(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, &tls.Config{GetCertificate: certs.GetCertificate, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})

	// The official SDK over TLS.
	var proto string
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool1}, ForceAttemptHTTP2: true}}
	sdk := anthropic.NewClient(option.WithBaseURL(e.url+"/"), option.WithAPIKey(e.key), option.WithHTTPClient(hc),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			resp, err := next(r)
			if resp != nil {
				proto = resp.Proto
			}
			return resp, err
		}))
	st, err := sdk.Beta.MemoryStores.New(context.Background(), anthropic.BetaMemoryStoreNewParams{Name: "over TLS"})
	if err != nil {
		t.Fatalf("SDK over TLS: %v", err)
	}
	if proto != "HTTP/2.0" {
		t.Errorf("SDK spoke %s, want HTTP/2.0 over TLS", proto)
	}

	tb := newTab(t, bctx)
	e.signIn(t, tb, e.key)
	if got := tb.text(t, "#stores .store-link"); got != st.Name {
		t.Errorf("console over TLS lists %q", got)
	}
	c := tb.cookie(t, e.url)
	if c == nil || !c.Secure || !c.HTTPOnly || c.SameSite != "Strict" {
		t.Fatalf("cookie over TLS = %+v, want Secure, HttpOnly, Strict", c)
	}

	peer := func() string {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(e.url, "https://"), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := peer(); got != "first.test" {
		t.Fatalf("serving %q, want first.test", got)
	}
	_, _, pool2 := writeCert(t, dir, "second.test", t0.Add(time.Minute))
	if got := peer(); got != "second.test" {
		t.Fatalf("after rotation serving %q, want second.test", got)
	}
	hc2 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool2}, ForceAttemptHTTP2: true}}
	sdk2 := anthropic.NewClient(option.WithBaseURL(e.url+"/"), option.WithAPIKey(e.key), option.WithHTTPClient(hc2))
	if _, err := sdk2.Beta.MemoryStores.Get(context.Background(), st.ID, anthropic.BetaMemoryStoreGetParams{}); err != nil {
		t.Fatalf("SDK trusting only the new certificate: %v", err)
	}
}

// mustPrincipal is the principal of the env's API key.
func mustPrincipal(t *testing.T, e *env) *trove.Principal {
	t.Helper()
	p, err := e.svc.Authenticate(context.Background(), e.key)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newAPI is an API client with secret on e's server.
func newAPI(e *env, secret string) *httpapi.Client { return httpapi.NewClient(e.url, secret) }
