package console

import (
	"net/http"
	"net/url"

	"github.com/trovehq/trove"
)

// webhookURL is an endpoint's console page.
func webhookURL(id string) string { return Prefix + "webhooks/" + url.PathEscape(id) }

type webhooksData struct {
	Webhooks []trove.Webhook
}

// webhooksPage lists the workspace's webhook endpoints (at most 32),
// newest first; managing them is the API's (docs/webhooks.md).
func (h *Handler) webhooksPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.hooks == nil {
		return trove.Errorf(trove.ENOTFOUND, "webhooks are not served here")
	}
	pg, err := h.hooks.ListWebhooks(r.Context(), trove.ListWebhooksParams{Limit: trove.MaxWebhooksPerWorkspace})
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "webhooks", s, &view{Title: "Webhooks", Data: webhooksData{Webhooks: pg.Data}})
	return nil
}

type webhookData struct {
	Hook       *trove.Webhook
	Deliveries []trove.WebhookDelivery
	Next       string // cursor of the next (older) page
	Base       string
}

// webhookPage shows an endpoint and its delivery log, newest first, with
// each delivery's status, attempts and last error.
func (h *Handler) webhookPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.hooks == nil {
		return trove.Errorf(trove.ENOTFOUND, "webhooks are not served here")
	}
	hook, err := h.hooks.GetWebhook(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	pg, err := h.hooks.ListWebhookDeliveries(r.Context(), hook.ID, trove.ListDeliveriesParams{Limit: 50, Cursor: query(r).Get("cursor")})
	if err != nil {
		return err
	}
	d := webhookData{Hook: hook, Deliveries: pg.Data, Next: pg.NextPage, Base: webhookURL(hook.ID)}
	h.render(w, r, http.StatusOK, "webhook", s, &view{Title: "Webhook " + hook.URL, Data: d})
	return nil
}
