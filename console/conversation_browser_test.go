package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
)

// testConversation reads a managed session whose transcript carries markup
// and script in every agent-written field in a real browser: the page
// shows them as text and nothing runs. Then it mints an environment key in
// the console, reads its secret once, and revokes it.
func testConversation(t *testing.T, bctx context.Context) {
	e := newEnv(t, nil)
	ctx := trove.WithPrincipal(context.Background(), mustPrincipal(t, e))
	se, env := managedSession(t, e, ctx, "chat")
	hostile := `<script>alert("x")</script><img src=x onerror=alert(1)><iframe src="http://example.invalid/"></iframe>`
	if _, err := e.svc.AppendEvents(ctx, se.ID, []trove.NewSessionEvent{
		{Type: trove.EventUserMessage, Body: fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, "u "+hostile)},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.AppendAgentEvents(ctx, se.ID, []trove.NewSessionEvent{
		{Type: trove.EventSessionStatusRunning, Body: `{}`},
		{Type: trove.EventAgentToolUse, Body: fmt.Sprintf(`{"name":%q,"input":{"path":%q}}`, hostile, hostile)},
		{Type: trove.EventAgentToolResult, Body: fmt.Sprintf(`{"tool_use_id":"sevt_x","content":[{"type":"text","text":%q}]}`, "r "+hostile)},
		{Type: trove.EventAgentMessage, Body: fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, "a "+hostile)},
		{Type: trove.EventSessionStatusIdle, Body: `{"stop_reason":{"type":"end_turn"}}`},
	}, core.AgentEventsOptions{}); err != nil {
		t.Fatal(err)
	}
	tb := newTab(t, bctx)
	e.signIn(t, tb, e.key)
	tb.run(t, "session page", chromedp.Navigate(e.url+"/console/sessions/"+se.ID), waitVisible("#conversation li.ev-agent"))
	if got := tb.text(t, "#conversation li.ev-user pre"); got != "u "+hostile {
		t.Errorf("user message shown as %q", got)
	}
	if got := tb.text(t, "#conversation li.ev-agent pre"); got != "a "+hostile {
		t.Errorf("agent message shown as %q", got)
	}
	if got := tb.text(t, "#conversation li.ev-tool-use .ev-name"); got != hostile {
		t.Errorf("tool name shown as %q", got)
	}
	if got := tb.text(t, "#conversation li.ev-tool-result pre"); got != "r "+hostile {
		t.Errorf("tool result shown as %q", got)
	}
	if got := tb.text(t, "#session-status"); got != "idle" {
		t.Errorf("status %q", got)
	}
	if n := eval[int](t, tb, `document.querySelectorAll("main img, main iframe, main script, main svg, main style").length`); n != 0 {
		t.Errorf("%d elements from the transcript in the page", n)
	}
	tb.run(t, "environment link", click("#session-environment a"), waitVisible("#mint-key"))
	tb.run(t, "mint a key", sendKeys("#key-name", "worker one"), submit("#key-name"), waitVisible("#minted-secret"))
	secret := strings.TrimSpace(tb.text(t, "#minted-secret"))
	if _, err := e.svc.Authenticate(context.Background(), secret); err != nil {
		t.Fatalf("the secret the page showed does not authenticate: %v", err)
	}
	tb.run(t, "reload", chromedp.Navigate(e.url+"/console/environments/"+env.ID), waitVisible("#env-keys"))
	if n := eval[int](t, tb, `document.querySelectorAll("#minted-secret").length`); n != 0 {
		t.Error("the secret is shown again")
	}
	if got := tb.text(t, "#env-keys .key-name"); got != "worker one" {
		t.Errorf("key listed as %q", got)
	}
	tb.run(t, "revoke", click(".revoke-key input[name=confirm]"), click(".revoke-key button"), waitVisible("#notice"))
	if _, err := e.svc.Authenticate(context.Background(), secret); trove.ErrorCode(err) != trove.EUNAUTHENTICATED {
		t.Errorf("the revoked key still authenticates: %v", err)
	}
	if n := eval[int](t, tb, `document.querySelectorAll(".revoke-key").length`); n != 0 {
		t.Error("a revoked key still offers revoke")
	}
	tb.quiet(t)
	if f := tb.foreign(e.url); len(f) > 0 {
		t.Errorf("requests to other origins: %q", f)
	}
}
