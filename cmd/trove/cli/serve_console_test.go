package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

func noRedirect() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// TestServeConsole: the console is on by default (/ redirects to it, its
// pages carry the CSP), --console=false leaves both 404, and a non-loopback
// address without TLS is warned about.
func TestServeConsole(t *testing.T) {
	t.Parallel()
	s := startServe(t, "--data", t.TempDir())
	resp, err := noRedirect().Get(s.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/console/" {
		t.Errorf("GET / = %d %q, want 302 to /console/", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = http.Get(s.url + "/console/signin")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `name="api_key"`) || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("sign-in page = %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}

	off := startServe(t, "--data", t.TempDir(), "--console=false")
	for _, p := range []string{"/", "/console/signin"} {
		resp, err := noRedirect().Get(off.url + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("--console=false: GET %s = %d, want 404", p, resp.StatusCode)
		}
	}

	// All interfaces, plain HTTP: a warning on stderr.
	ctx, cancel := context.WithCancel(context.Background())
	var errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data", t.TempDir(), "--addr", "0.0.0.0:0"}, strings.NewReader(""), io.Discard, &errb)
	}()
	ok := errb.waitFor("warning: serving plain HTTP", 20*time.Second)
	cancel()
	<-done
	if !ok {
		t.Errorf("no warning for plain HTTP on 0.0.0.0; stderr:\n%s", errb.String())
	}
	if strings.Contains(s.stderr.String(), "warning") {
		t.Errorf("warning on loopback:\n%s", s.stderr)
	}
}

// TestServeConsoleSecureCookie: behind a TLS-terminating proxy the server
// speaks plain HTTP; --console-secure-cookie still marks the session
// cookie Secure, and without it a plain-HTTP sign-in's cookie is not.
func TestServeConsoleSecureCookie(t *testing.T) {
	t.Parallel()
	for _, secure := range []bool{true, false} {
		data := t.TempDir()
		args := []string{"--data", data}
		if secure {
			args = append(args, "--console-secure-cookie")
		}
		s := startServe(t, args...)
		key, err := os.ReadFile(filepath.Join(data, "api_key"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := noRedirect().PostForm(s.url+"/console/signin", url.Values{"api_key": {strings.TrimSpace(string(key))}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var c *http.Cookie
		for _, k := range resp.Cookies() {
			if k.Name == "trove_console" {
				c = k
			}
		}
		if resp.StatusCode != http.StatusSeeOther || c == nil || c.Value == "" {
			t.Fatalf("secure=%v: sign-in = %d, cookie %+v", secure, resp.StatusCode, c)
		}
		if c.Secure != secure || !c.HttpOnly {
			t.Errorf("--console-secure-cookie=%v: cookie Secure=%v HttpOnly=%v", secure, c.Secure, c.HttpOnly)
		}
	}
}

// writeTestCert writes a self-signed certificate for 127.0.0.1 named cn,
// with the files' modification time mod.
func writeTestCert(t *testing.T, dir, cn string, mod time.Time) (string, string, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cp, kp := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cp, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kp, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{cp, kp} {
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return cp, kp, pool
}

// TestServeTLS: serve --tls-cert/--tls-key speaks HTTPS with HTTP/2 to the
// API and the console, and serves a replaced certificate at the next
// handshake without a restart; one flag without the other is refused.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	t0 := time.Now().Add(-time.Hour)
	cp, kp, pool := writeTestCert(t, dir, "first.test", t0)
	s := startServe(t, "--data", data, "--tls-cert", cp, "--tls-key", kp)
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("serve with TLS listens on %s", s.url)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	resp, err := hc.Get(s.url + "/console/signin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Proto != "HTTP/2.0" {
		t.Errorf("console over TLS: %d %s, want 200 over HTTP/2.0", resp.StatusCode, resp.Proto)
	}
	key, _ := os.ReadFile(filepath.Join(data, "api_key"))
	api := httpapi.NewClient(s.url, strings.TrimSpace(string(key)), httpapi.WithHTTPClient(hc))
	if _, err := api.CreateStore(context.Background(), trove.CreateStoreParams{Name: "tls"}); err != nil {
		t.Fatalf("API over TLS: %v", err)
	}
	peer := func() string {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(s.url, "https://"), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := peer(); got != "first.test" {
		t.Fatalf("certificate %q, want first.test", got)
	}
	writeTestCert(t, dir, "second.test", t0.Add(time.Minute))
	if got := peer(); got != "second.test" {
		t.Fatalf("after rotation %q, want second.test (no restart)", got)
	}

	if code, _, errOut := runTrove(t, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--tls-cert", cp); code == 0 || !strings.Contains(errOut, "--tls-cert and --tls-key go together") {
		t.Errorf("--tls-cert alone = %d %q", code, errOut)
	}
	if code, _, errOut := runTrove(t, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--tls-cert", filepath.Join(dir, "missing.pem"), "--tls-key", kp); code == 0 || !strings.Contains(errOut, "TLS certificate") {
		t.Errorf("missing certificate = %d %q", code, errOut)
	}
}
