package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/trovehq/trove"
)

// BetaWebhooks is the beta flag of /v1/organizations/webhooks; without it
// those routes answer 404, as the hosted API does.
const BetaWebhooks = "webhooks-2026-10-07"

// addWebhookRoutes adds /v1/organizations/webhooks (the SDK's
// Beta.Organizations.Webhooks; in Trove an endpoint belongs to the
// credential's workspace) and Trove's delivery log.
func (s *Server) addWebhookRoutes(add func(method, path string, kind routeKind, h handlerFunc)) {
	if s.hooks == nil {
		return
	}
	const hook = "/v1/organizations/webhooks/{webhook_endpoint_id}"
	add("POST", "/v1/organizations/webhooks", kindWebhook, s.createWebhook)
	add("GET", "/v1/organizations/webhooks", kindWebhook, s.listWebhooks)
	add("GET", hook, kindWebhook, s.getWebhook)
	add("POST", hook, kindWebhook, s.updateWebhook)
	add("DELETE", hook, kindWebhook, s.deleteWebhook)
	add("POST", hook+"/regenerate_signing_secret", kindWebhook, s.regenerateWebhookSecret)
	add("GET", "/trove/v1/webhooks/{webhook_endpoint_id}/deliveries", kindTrove, s.listWebhookDeliveries)
}

func checkWebhookBeta(h http.Header) error {
	for _, line := range h.Values("Anthropic-Beta") {
		for v := range strings.SplitSeq(line, ",") {
			if strings.TrimSpace(v) == BetaWebhooks {
				return nil
			}
		}
	}
	return trove.Errorf(trove.ENOTFOUND, "webhook endpoint calls need the anthropic-beta header %s", BetaWebhooks)
}

// Wire shapes (the SDK's betaorganizationwebhook.go).

type wireWebhook struct {
	ID             string   `json:"id"`
	CreatedAt      string   `json:"created_at"`
	Description    string   `json:"description"`
	DisabledReason string   `json:"disabled_reason"`
	EnabledEvents  []string `json:"enabled_events"`
	Name           string   `json:"name"`
	SigningSecret  *string  `json:"signing_secret,omitempty"` // create only
	State          string   `json:"state"`
	UpdatedAt      string   `json:"updated_at"`
	URL            string   `json:"url"`
}

func webhookToWire(w *trove.Webhook) wireWebhook {
	ev := w.EnabledEvents
	if ev == nil {
		ev = []string{}
	}
	return wireWebhook{ID: w.ID, CreatedAt: formatTime(w.CreatedAt), Description: w.Description, DisabledReason: w.DisabledReason,
		EnabledEvents: ev, Name: w.Name, State: string(w.State), UpdatedAt: formatTime(w.UpdatedAt), URL: w.URL}
}

type wireWebhookCreate struct {
	URL           *string  `json:"url"`
	EnabledEvents []string `json:"enabled_events"`
	Name          *string  `json:"name"`
	Description   *string  `json:"description"`
}

type wireWebhookUpdate struct {
	URL           *string  `json:"url"`
	EnabledEvents []string `json:"enabled_events"`
	Name          *string  `json:"name"`
	Description   *string  `json:"description"`
	State         *string  `json:"state"`
}

type wireWebhookList struct {
	Data    []wireWebhook `json:"data"`
	FirstID *string       `json:"first_id"`
	LastID  *string       `json:"last_id"`
	HasMore bool          `json:"has_more"`
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var body wireWebhookCreate
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	if body.URL == nil {
		return trove.Errorf(trove.EINVALID, "url is required")
	}
	if body.EnabledEvents == nil {
		return trove.Errorf(trove.EINVALID, "enabled_events is required")
	}
	p := trove.CreateWebhookParams{URL: *body.URL, EnabledEvents: body.EnabledEvents}
	if body.Name != nil {
		p.Name = *body.Name
	}
	if body.Description != nil {
		p.Description = *body.Description
	}
	hook, secret, err := s.hooks.CreateWebhook(r.Context(), p)
	if err != nil {
		return err
	}
	out := webhookToWire(hook)
	out.SigningSecret = &secret
	return s.ok(w, &out)
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	hook, err := s.hooks.GetWebhook(r.Context(), r.PathValue("webhook_endpoint_id"))
	if err != nil {
		return err
	}
	out := webhookToWire(hook)
	return s.ok(w, &out)
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	var body wireWebhookUpdate
	if err := s.decodeBody(w, r, &body, true); err != nil {
		return err
	}
	p := trove.UpdateWebhookParams{URL: body.URL, Name: body.Name, Description: body.Description, EnabledEvents: body.EnabledEvents}
	if body.State != nil {
		p.State = trove.WebhookState(*body.State)
		if p.State == "" {
			return trove.Errorf(trove.EINVALID, "state must be \"enabled\" or \"disabled\", got \"\"")
		}
	}
	hook, err := s.hooks.UpdateWebhook(r.Context(), r.PathValue("webhook_endpoint_id"), p)
	if err != nil {
		return err
	}
	out := webhookToWire(hook)
	return s.ok(w, &out)
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	var p trove.ListWebhooksParams
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return trove.Errorf(trove.EINVALID, "limit must be an integer from 0 to 100, got %q", v)
		}
		p.Limit = n
	}
	p.AfterID, p.BeforeID = q.Get("after_id"), q.Get("before_id")
	switch o := q.Get("order"); o {
	case "", "desc":
	case "asc":
		p.Asc = true
	default:
		return trove.Errorf(trove.EINVALID, "order must be \"asc\" or \"desc\", got %q", o)
	}
	page, err := s.hooks.ListWebhooks(r.Context(), p)
	if err != nil {
		return err
	}
	out := wireWebhookList{Data: make([]wireWebhook, len(page.Data)), HasMore: page.HasMore}
	for i := range page.Data {
		out.Data[i] = webhookToWire(&page.Data[i])
	}
	if n := len(page.Data); n > 0 {
		out.FirstID, out.LastID = &page.Data[0].ID, &page.Data[n-1].ID
	}
	return s.ok(w, &out)
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("webhook_endpoint_id")
	if err := s.hooks.DeleteWebhook(r.Context(), id); err != nil {
		return err
	}
	return s.ok(w, &struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}{id, "webhook_endpoint_deleted"})
}

func (s *Server) regenerateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	if err := s.decodeBody(w, r, &struct{}{}, true); err != nil {
		return err
	}
	secret, err := s.hooks.RegenerateWebhookSecret(r.Context(), r.PathValue("webhook_endpoint_id"))
	if err != nil {
		return err
	}
	return s.ok(w, &struct {
		SigningSecret string `json:"signing_secret"`
	}{secret})
}

// WireDelivery is one entry of an endpoint's delivery log
// (/trove/v1/webhooks/{id}/deliveries), Trove's extension.
type WireDelivery struct {
	Type          string  `json:"type"` // "webhook_delivery"
	Seq           int64   `json:"seq"`
	EventID       string  `json:"event_id"`
	EventType     string  `json:"event_type"`
	Status        string  `json:"status"`
	Attempts      int     `json:"attempts"`
	CreatedAt     string  `json:"created_at"`
	LastAttemptAt *string `json:"last_attempt_at"`
	NextAttemptAt *string `json:"next_attempt_at"` // pending only
	LastStatus    *int    `json:"last_status_code"`
	LastError     *string `json:"last_error"`
	DeliveredAt   *string `json:"delivered_at"`
}

// WireDeliveryOf is the wire form of d.
func WireDeliveryOf(d *trove.WebhookDelivery) WireDelivery {
	out := WireDelivery{Type: "webhook_delivery", Seq: d.Seq, EventID: d.EventID, EventType: d.EventType, Status: string(d.Status),
		Attempts: d.Attempts, CreatedAt: formatTime(d.CreatedAt), LastAttemptAt: formatTimePtr(d.LastAttemptAt), DeliveredAt: formatTimePtr(d.DeliveredAt)}
	if d.Status == trove.DeliveryPending {
		out.NextAttemptAt = formatTimePtr(&d.NextAttemptAt)
	}
	if d.LastStatus != 0 {
		out.LastStatus = &d.LastStatus
	}
	if d.LastError != "" {
		out.LastError = &d.LastError
	}
	return out
}

func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	var p trove.ListDeliveriesParams
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return trove.Errorf(trove.EINVALID, "limit must be an integer from 1 to 100, got %q", v)
		}
		p.Limit = n
	}
	p.Cursor = q.Get("page")
	page, err := s.hooks.ListWebhookDeliveries(r.Context(), r.PathValue("webhook_endpoint_id"), p)
	if err != nil {
		return err
	}
	out := wirePage[WireDelivery]{Data: make([]WireDelivery, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i := range page.Data {
		out.Data[i] = WireDeliveryOf(&page.Data[i])
	}
	return s.ok(w, &out)
}
