package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/trovehq/trove"
)

// TestEnvironmentKeys (issue 21 item 2): the console lists environments;
// an environment's page mints a key whose secret is shown on that response
// only, lists it by name and hint, and revokes it after confirmation, and
// the revoked key stops authenticating. A form without the session's CSRF
// token, or without the confirmation, changes nothing.
func TestEnvironmentKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := trove.WithPrincipal(context.Background(), mustPrincipal(t, e))
	env, err := e.svc.CreateEnvironment(ctx, trove.CreateEnvironmentParams{Name: `<script>alert("env")</script>`, Description: ptr(`<b>desc</b>`)})
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := e.svc.StartConsoleSession(context.Background(), e.key)
	if err != nil {
		t.Fatal(err)
	}

	code, body := consoleGet(t, e, token, "/console/environments")
	if code != 200 || !strings.Contains(body, `&lt;script&gt;alert(&#34;env&#34;)&lt;/script&gt;`) || !strings.Contains(body, "/console/environments/"+env.ID) || strings.Contains(body, `<script>alert`) {
		t.Fatalf("environments list: %d\n%s", code, body)
	}
	if !strings.Contains(body, `href="/console/environments">Environments</a>`) {
		t.Error("no Environments link in the navigation")
	}
	page := "/console/environments/" + env.ID
	code, body = consoleGet(t, e, token, page)
	if code != 200 || !strings.Contains(body, "No keys.") || !strings.Contains(body, "&lt;b&gt;desc&lt;/b&gt;") {
		t.Fatalf("environment page: %d\n%s", code, body)
	}
	csrf := csrfOf(t, body)

	t.Run("mint refused without CSRF", func(t *testing.T) {
		for _, bad := range []string{"", "0123456789abcdef0123456789abcdef"} {
			code, _, body := consolePost(t, e, token, page+"/keys", url.Values{"csrf": {bad}, "name": {"w"}})
			if code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
				t.Errorf("csrf %q: %d\n%s", bad, code, body)
			}
		}
		if ks, _ := e.svc.ListEnvironmentKeys(ctx, env.ID); len(ks) != 0 {
			t.Errorf("a refused form minted %d keys", len(ks))
		}
	})

	code, _, body = consolePost(t, e, token, page+"/keys", url.Values{"csrf": {csrf}, "name": {`<i>worker-1</i>`}})
	if code != 200 {
		t.Fatalf("mint: %d\n%s", code, body)
	}
	ks, err := e.svc.ListEnvironmentKeys(ctx, env.ID)
	if err != nil || len(ks) != 1 {
		t.Fatalf("keys after mint: %v %v", ks, err)
	}
	k := ks[0]
	i := strings.Index(body, `id="minted-secret">`)
	if i < 0 {
		t.Fatalf("the mint's page shows no secret:\n%s", body)
	}
	rest := body[i+len(`id="minted-secret">`):]
	secret := rest[:strings.Index(rest, "</pre>")]
	if len(secret) < 20 || !strings.HasSuffix(secret, k.Hint) {
		t.Fatalf("secret %q does not end with the hint %q", secret, k.Hint)
	}
	if !strings.Contains(body, "&lt;i&gt;worker-1&lt;/i&gt;") || strings.Contains(body, "<i>worker-1") {
		t.Error("the key's name is not shown as text")
	}
	if _, err := e.svc.Authenticate(context.Background(), secret); err != nil {
		t.Fatalf("the minted secret does not authenticate: %v", err)
	}
	// Shown once: the page never shows it again.
	_, body = consoleGet(t, e, token, page)
	if strings.Contains(body, secret) || !strings.Contains(body, k.ID) || !strings.Contains(body, "…"+k.Hint) || !strings.Contains(body, ">live<") {
		t.Errorf("environment page after mint:\n%s", body)
	}

	revoke := page + "/keys/" + k.ID + "/revoke"
	t.Run("revoke refused without CSRF or confirmation", func(t *testing.T) {
		if code, _, body := consolePost(t, e, token, revoke, url.Values{"csrf": {"nope"}, "confirm": {"yes"}}); code != http.StatusForbidden {
			t.Errorf("wrong CSRF: %d\n%s", code, body)
		}
		if code, _, body := consolePost(t, e, token, revoke, url.Values{"csrf": {csrf}}); code != http.StatusBadRequest || !strings.Contains(body, "tick the confirmation box") {
			t.Errorf("no confirmation: %d\n%s", code, body)
		}
		if _, err := e.svc.Authenticate(context.Background(), secret); err != nil {
			t.Errorf("a refused revoke revoked the key: %v", err)
		}
	})
	code, loc, body := consolePost(t, e, token, revoke, url.Values{"csrf": {csrf}, "confirm": {"yes"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, page+"?done=keyrevoked") {
		t.Fatalf("revoke: %d %q\n%s", code, loc, body)
	}
	if _, err := e.svc.Authenticate(context.Background(), secret); trove.ErrorCode(err) != trove.EUNAUTHENTICATED {
		t.Errorf("the revoked key still authenticates: %v", err)
	}
	_, body = consoleGet(t, e, token, loc)
	if !strings.Contains(body, "Key revoked.") || strings.Contains(body, ">live<") || strings.Contains(body, `class="row revoke-key"`) {
		t.Errorf("page after revoke:\n%s", body)
	}
	// An unknown environment or key is a 404 page, not a 500.
	if code, _ := consoleGet(t, e, token, "/console/environments/env_nope"); code != http.StatusNotFound {
		t.Errorf("unknown environment: %d", code)
	}
	if code, _, _ := consolePost(t, e, token, page+"/keys/envkey_nope/revoke", url.Values{"csrf": {csrf}, "confirm": {"yes"}}); code != http.StatusNotFound {
		t.Errorf("unknown key: %d", code)
	}
}
