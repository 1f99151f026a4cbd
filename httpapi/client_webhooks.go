package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/trovehq/trove"
)

var _ trove.WebhookService = (*Client)(nil)

// Webhooks over the wire, for the CLI's remote targets.

// WireWebhook is the JSON shape of an endpoint; secret is included when
// not "" (at creation only).
func WireWebhook(w *trove.Webhook, secret string) any {
	out := webhookToWire(w)
	if secret != "" {
		out.SigningSecret = &secret
	}
	return out
}

func webhookFromWire(w *wireWebhook) *trove.Webhook {
	return &trove.Webhook{ID: w.ID, Name: w.Name, Description: w.Description, URL: w.URL, EnabledEvents: w.EnabledEvents,
		State: trove.WebhookState(w.State), DisabledReason: w.DisabledReason, CreatedAt: parseTime(w.CreatedAt), UpdatedAt: parseTime(w.UpdatedAt)}
}

const webhooksPath = "/v1/organizations/webhooks"

func (c *Client) webhookCall(ctx context.Context, method, path string, in any) (*trove.Webhook, string, error) {
	var out wireWebhook
	if _, err := c.do(ctx, method, path, nil, in, &out); err != nil {
		return nil, "", err
	}
	secret := ""
	if out.SigningSecret != nil {
		secret = *out.SigningSecret
	}
	return webhookFromWire(&out), secret, nil
}

// CreateWebhook creates an endpoint and returns its signing secret.
func (c *Client) CreateWebhook(ctx context.Context, p trove.CreateWebhookParams) (*trove.Webhook, string, error) {
	ev := p.EnabledEvents
	if ev == nil {
		ev = []string{}
	}
	body := map[string]any{"url": p.URL, "enabled_events": ev}
	if p.Name != "" {
		body["name"] = p.Name
	}
	if p.Description != "" {
		body["description"] = p.Description
	}
	return c.webhookCall(ctx, http.MethodPost, webhooksPath, body)
}

// GetWebhook returns an endpoint.
func (c *Client) GetWebhook(ctx context.Context, id string) (*trove.Webhook, error) {
	w, _, err := c.webhookCall(ctx, http.MethodGet, webhooksPath+"/"+url.PathEscape(id), nil)
	return w, err
}

// UpdateWebhook changes an endpoint.
func (c *Client) UpdateWebhook(ctx context.Context, id string, p trove.UpdateWebhookParams) (*trove.Webhook, error) {
	body := map[string]any{}
	if p.URL != nil {
		body["url"] = *p.URL
	}
	if p.Name != nil {
		body["name"] = *p.Name
	}
	if p.Description != nil {
		body["description"] = *p.Description
	}
	if len(p.EnabledEvents) > 0 {
		body["enabled_events"] = p.EnabledEvents
	}
	if p.State != "" {
		body["state"] = string(p.State)
	}
	w, _, err := c.webhookCall(ctx, http.MethodPost, webhooksPath+"/"+url.PathEscape(id), body)
	return w, err
}

// ListWebhooks pages endpoints.
func (c *Client) ListWebhooks(ctx context.Context, p trove.ListWebhooksParams) (*trove.WebhookPage, error) {
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.AfterID != "" {
		q.Set("after_id", p.AfterID)
	}
	if p.BeforeID != "" {
		q.Set("before_id", p.BeforeID)
	}
	if p.Asc {
		q.Set("order", "asc")
	}
	var out wireWebhookList
	if _, err := c.do(ctx, http.MethodGet, webhooksPath, q, nil, &out); err != nil {
		return nil, err
	}
	page := &trove.WebhookPage{Data: make([]trove.Webhook, len(out.Data)), HasMore: out.HasMore}
	for i := range out.Data {
		page.Data[i] = *webhookFromWire(&out.Data[i])
	}
	return page, nil
}

// DeleteWebhook deletes an endpoint.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	var out struct{ ID string }
	_, err := c.do(ctx, http.MethodDelete, webhooksPath+"/"+url.PathEscape(id), nil, nil, &out)
	return err
}

// RegenerateWebhookSecret replaces an endpoint's signing secret.
func (c *Client) RegenerateWebhookSecret(ctx context.Context, id string) (string, error) {
	var out struct {
		SigningSecret string `json:"signing_secret"`
	}
	if _, err := c.do(ctx, http.MethodPost, webhooksPath+"/"+url.PathEscape(id)+"/regenerate_signing_secret", nil, map[string]any{}, &out); err != nil {
		return "", err
	}
	return out.SigningSecret, nil
}

// ListWebhookDeliveries pages an endpoint's delivery log.
func (c *Client) ListWebhookDeliveries(ctx context.Context, id string, p trove.ListDeliveriesParams) (*trove.Page[trove.WebhookDelivery], error) {
	var out wirePage[WireDelivery]
	if _, err := c.do(ctx, http.MethodGet, "/trove/v1/webhooks/"+url.PathEscape(id)+"/deliveries", pageQuery(p.Limit, p.Cursor), nil, &out); err != nil {
		return nil, err
	}
	page := &trove.Page[trove.WebhookDelivery]{Data: make([]trove.WebhookDelivery, len(out.Data))}
	for i, w := range out.Data {
		d := trove.WebhookDelivery{Seq: w.Seq, WebhookID: id, EventID: w.EventID, EventType: w.EventType, Status: trove.DeliveryStatus(w.Status),
			Attempts: w.Attempts, CreatedAt: parseTime(w.CreatedAt), LastAttemptAt: parseTimePtr(w.LastAttemptAt), DeliveredAt: parseTimePtr(w.DeliveredAt)}
		if w.NextAttemptAt != nil {
			d.NextAttemptAt = parseTime(*w.NextAttemptAt)
		}
		if w.LastStatus != nil {
			d.LastStatus = *w.LastStatus
		}
		if w.LastError != nil {
			d.LastError = *w.LastError
		}
		page.Data[i] = d
	}
	if out.NextPage != nil {
		page.NextPage = *out.NextPage
	}
	return page, nil
}
