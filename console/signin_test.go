package console_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/console"
)

// TestSigninShowsOnlyFixedReasons (issue 22 item 10): the sign-in page
// never renders text from ?why=; a session ended by a revoked key or a
// sign-out redirects with a code whose fixed message the page shows.
func TestSigninShowsOnlyFixedReasons(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	get := func(t *testing.T, path string, cookie string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest("GET", e.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: console.CookieName, Value: cookie})
		}
		res, err := plainClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	for _, why := range []string{"Your account was suspended, call +1 555 0100", "console_key_revoked extra", "<b>x</b>"} {
		res, body := get(t, "/console/signin?why="+url.QueryEscape(why), "")
		if res.StatusCode != 200 || strings.Contains(body, "suspended") || strings.Contains(body, "555") || strings.Contains(body, "extra") || strings.Contains(body, "session ended") {
			t.Errorf("?why=%q: %d, the page renders it:\n%s", why, res.StatusCode, body)
		}
	}
	// A revoked key: the redirect carries the code, the page its message.
	k, secret, err := e.svc.CreateKey(context.Background(), "wrkspc_default", "to revoke")
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := e.svc.StartConsoleSession(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.RevokeKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	res, _ := get(t, "/console/stores", token)
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil || res.StatusCode != http.StatusSeeOther || loc.Query().Get("why") != trove.ConsoleKeyRevoked {
		t.Fatalf("after revoke: %d Location %q, want why=%s", res.StatusCode, res.Header.Get("Location"), trove.ConsoleKeyRevoked)
	}
	if strings.Contains(res.Header.Get("Location"), k.ID) {
		t.Errorf("the redirect quotes the key ID: %s", res.Header.Get("Location"))
	}
	_, body := get(t, loc.String(), "")
	if !strings.Contains(body, "the API key you signed in with was revoked") {
		t.Errorf("sign-in page after revoke:\n%s", body)
	}
	// Signed out: the session is gone.
	token2, _, err := e.svc.StartConsoleSession(context.Background(), e.key)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.EndConsoleSession(context.Background(), token2); err != nil {
		t.Fatal(err)
	}
	res, _ = get(t, "/console/stores", token2)
	if loc, _ := url.Parse(res.Header.Get("Location")); loc == nil || loc.Query().Get("why") != trove.ConsoleSignedOut {
		t.Fatalf("after sign-out: Location %q", res.Header.Get("Location"))
	}
}
