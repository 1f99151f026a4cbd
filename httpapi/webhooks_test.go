package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

func withWebhooks(c *httpapi.Config) { c.Webhooks = c.Services.(trove.WebhookService) }

// TestSDKWebhooks: the official SDK's Beta.Organization.Webhooks against
// Trove: create (the secret once), get, list with its cursors, update,
// regenerate the secret, delete; bad input is a 400 naming the field; a
// request without the beta flag is a 404; Trove's delivery log lists what
// a change queued.
func TestSDKWebhooks(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		e := newEnv(t, tr, withWebhooks)
		c := e.sdk()
		ctx := context.Background()
		hooks := c.Beta.Organization.Webhooks

		var ids []string
		for i, name := range []string{"first", "second", "third"} {
			h, err := hooks.New(ctx, anthropic.BetaOrganizationWebhookNewParams{
				URL:           "https://example.com/hooks/" + name,
				EnabledEvents: []string{"memory_store.created", "trove.memory.created", "memory_store.created"},
				Name:          anthropic.String(name),
				Description:   anthropic.String("notes " + name),
			})
			if err != nil {
				t.Fatalf("New %d: %v", i, err)
			}
			if !strings.HasPrefix(h.ID, "whep_") || !strings.HasPrefix(h.SigningSecret, "whsec_") || h.State != "enabled" ||
				h.Name != name || h.URL != "https://example.com/hooks/"+name || h.DisabledReason != "" || h.CreatedAt.IsZero() ||
				!cmp.Equal(h.EnabledEvents, []string{"memory_store.created", "trove.memory.created"}) {
				t.Errorf("created = %s", h.RawJSON())
			}
			ids = append(ids, h.ID)
		}
		got, err := hooks.Get(ctx, ids[0], anthropic.BetaOrganizationWebhookGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		raw := rawKeys(t, got.RawJSON())
		if _, ok := raw["signing_secret"]; ok || got.Description != "notes first" {
			t.Errorf("get = %s (the secret is returned once, at creation)", got.RawJSON())
		}
		for _, k := range []string{"id", "created_at", "description", "disabled_reason", "enabled_events", "name", "state", "updated_at", "url"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("endpoint JSON lacks %q", k)
			}
		}

		// Newest first by default, one per page through the SDK's pager.
		var listed []string
		pager := hooks.ListAutoPaging(ctx, anthropic.BetaOrganizationWebhookListParams{Limit: anthropic.Int(1)})
		for pager.Next() {
			listed = append(listed, pager.Current().ID)
		}
		if err := pager.Err(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{ids[2], ids[1], ids[0]}, listed); diff != "" {
			t.Errorf("auto-paged list (-want +got):\n%s", diff)
		}
		page, err := hooks.List(ctx, anthropic.BetaOrganizationWebhookListParams{Order: "asc", AfterID: anthropic.String(ids[0])})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != 2 || page.Data[0].ID != ids[1] || page.HasMore || page.FirstID != ids[1] || page.LastID != ids[2] {
			t.Errorf("asc after the first = %s", page.RawJSON())
		}

		up, err := hooks.Update(ctx, ids[0], anthropic.BetaOrganizationWebhookUpdateParams{
			Name: anthropic.String("renamed"), State: "disabled", EnabledEvents: []string{"memory_store.deleted"}})
		if err != nil {
			t.Fatal(err)
		}
		if up.Name != "renamed" || up.State != "disabled" || !cmp.Equal(up.EnabledEvents, []string{"memory_store.deleted"}) ||
			up.URL != "https://example.com/hooks/first" || !up.UpdatedAt.After(up.CreatedAt) && !up.UpdatedAt.Equal(up.CreatedAt) {
			t.Errorf("updated = %s", up.RawJSON())
		}
		up, err = hooks.Update(ctx, ids[0], anthropic.BetaOrganizationWebhookUpdateParams{State: "enabled", EnabledEvents: []string{}})
		if err != nil || up.State != "enabled" || !cmp.Equal(up.EnabledEvents, []string{"memory_store.deleted"}) {
			t.Errorf("re-enabled = %+v, %v (an empty list leaves the events unchanged)", up, err)
		}

		sec, err := hooks.RegenerateSigningSecret(ctx, ids[1], anthropic.BetaOrganizationWebhookRegenerateSigningSecretParams{})
		if err != nil || !strings.HasPrefix(sec.SigningSecret, "whsec_") {
			t.Errorf("regenerate = %+v, %v", sec, err)
		}

		del, err := hooks.Delete(ctx, ids[2], anthropic.BetaOrganizationWebhookDeleteParams{})
		if err != nil || del.ID != ids[2] || del.Type != "webhook_endpoint_deleted" {
			t.Errorf("delete = %+v, %v", del, err)
		}
		_, err = hooks.Get(ctx, ids[2], anthropic.BetaOrganizationWebhookGetParams{})
		wantAPIError(t, err, 404, "not_found_error")

		// Bad input.
		for _, p := range []anthropic.BetaOrganizationWebhookNewParams{
			{URL: "http://example.com/", EnabledEvents: []string{"memory_store.created"}},
			{URL: "https://127.0.0.1/", EnabledEvents: []string{"memory_store.created"}},
			{URL: "https://example.com/", EnabledEvents: []string{"memory_store.nope"}},
			{URL: "https://example.com/", EnabledEvents: []string{}},
		} {
			_, err := hooks.New(ctx, p)
			wantAPIError(t, err, 400, "invalid_request_error")
		}
		code, body := e.rawWebhook(t, "POST", "/v1/organizations/webhooks", `{"url":"https://example.com/","enabled_events":["memory_store.created"],"state":"enabled"}`, true)
		if code != 400 || !strings.Contains(body, "state") {
			t.Errorf("create with state: %d %s", code, body)
		}
		code, body = e.rawWebhook(t, "GET", "/v1/organizations/webhooks", "", false)
		if code != 404 || !strings.Contains(body, httpapi.BetaWebhooks) {
			t.Errorf("without the beta flag: %d %s", code, body)
		}

		// The delivery log (Trove's extension): a new store queued one
		// delivery to the enabled memory_store.created endpoint.
		if _, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "s"}); err != nil {
			t.Fatal(err)
		}
		code, body = e.rawWebhook(t, "GET", "/trove/v1/webhooks/"+ids[1]+"/deliveries", "", false)
		var log struct {
			Data []httpapi.WireDelivery `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &log); code != 200 || err != nil || len(log.Data) != 1 ||
			log.Data[0].EventType != "memory_store.created" || log.Data[0].Status != "pending" || log.Data[0].Attempts != 0 ||
			!strings.HasPrefix(log.Data[0].EventID, "whe_") || log.Data[0].NextAttemptAt == nil {
			t.Errorf("delivery log: %d %s", code, body)
		}
		code, _ = e.rawWebhook(t, "GET", "/trove/v1/webhooks/"+ids[2]+"/deliveries", "", false)
		if code != 404 {
			t.Errorf("delivery log of a deleted endpoint: %d", code)
		}
	})
}

// rawWebhook sends a request with the test key, with the webhooks beta
// flag when beta, and returns the status and body.
func (e *testEnv) rawWebhook(t *testing.T, method, path, body string, beta bool) (int, string) {
	t.Helper()
	h := http.Header{}
	if beta {
		h.Set("Anthropic-Beta", httpapi.BetaWebhooks)
	}
	if method == "GET" {
		res, b := e.rawGet(t, path, h)
		return res.StatusCode, b
	}
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := e.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var sb strings.Builder
	_, _ = io.Copy(&sb, res.Body)
	return res.StatusCode, sb.String()
}
