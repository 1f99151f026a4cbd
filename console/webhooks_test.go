package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
)

// TestWebhookPages: the console lists the workspace's webhook endpoints
// and shows one endpoint's delivery log, with each delivery's status,
// attempts and last error, everything escaped.
func TestWebhookPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := trove.WithPrincipal(context.Background(), mustPrincipal(t, e))
	hook, _, err := e.svc.CreateWebhook(ctx, trove.CreateWebhookParams{URL: "https://hooks.example.com/in", Name: `<script>alert("h")</script>`,
		EnabledEvents: []string{trove.HookMemoryStoreCreated}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := e.svc.CreateStore(ctx, trove.CreateStoreParams{Name: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	// One failed attempt at the oldest delivery, as a sender records it.
	c, err := e.svc.ClaimWebhook(context.Background(), "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	send, err := e.svc.NextWebhookSend(context.Background(), c, time.Minute)
	if err != nil || send == nil {
		t.Fatalf("NextWebhookSend = %v, %v", send, err)
	}
	if err := e.svc.RecordWebhookAttempt(context.Background(), &send.Delivery, core.WebhookAttempt{Status: 502, Err: "HTTP 502 <b>bad gateway</b>"}); err != nil {
		t.Fatal(err)
	}
	token, _, err := e.svc.StartConsoleSession(context.Background(), e.key)
	if err != nil {
		t.Fatal(err)
	}
	code, body := consoleGet(t, e, token, "/console/webhooks")
	if code != 200 || !strings.Contains(body, "https://hooks.example.com/in") || !strings.Contains(body, "/console/webhooks/"+hook.ID) ||
		strings.Contains(body, `<script>alert`) || !strings.Contains(body, `href="/console/webhooks">Webhooks</a>`) {
		t.Fatalf("webhooks list: %d\n%s", code, body)
	}
	code, body = consoleGet(t, e, token, "/console/webhooks/"+hook.ID)
	if code != 200 || strings.Count(body, `class="delivery"`) != 2 || !strings.Contains(body, "HTTP 502 &lt;b&gt;bad gateway&lt;/b&gt;") ||
		!strings.Contains(body, "(HTTP 502)") || !strings.Contains(body, send.Delivery.EventID) {
		t.Fatalf("webhook page: %d\n%s", code, body)
	}
	if code, _ := consoleGet(t, e, token, "/console/webhooks/whep_nope"); code != 404 {
		t.Errorf("unknown endpoint: %d", code)
	}
}
