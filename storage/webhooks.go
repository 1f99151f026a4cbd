package storage

import (
	"context"
	"time"

	"github.com/trovehq/trove"
)

// WebhookTx is the part of Tx that stores webhook endpoints and their
// delivery queue, the durable outbox (docs/webhooks.md): core inserts an
// event's deliveries in the same transaction as the change that causes
// it, and the sender works through each endpoint's queue by Seq.
type WebhookTx interface {
	// WebhookInsert inserts an endpoint with its signing secret.
	WebhookInsert(ctx context.Context, w *trove.Webhook, secret string) error
	// WebhookGet returns an endpoint of workspaceID ("" for any workspace)
	// and its signing secret, or ENOTFOUND.
	WebhookGet(ctx context.Context, workspaceID, id string) (*trove.Webhook, string, error)
	// WebhookUpdate replaces url, name, description, enabled events, state,
	// disabled reason and updated_at of w.ID; ENOTFOUND when it is gone.
	WebhookUpdate(ctx context.Context, w *trove.Webhook) error
	// WebhookSetSecret replaces the signing secret; ENOTFOUND when the
	// endpoint is gone.
	WebhookSetSecret(ctx context.Context, id, secret string, at time.Time) error
	// WebhookList lists every endpoint of a workspace by (created_at, id)
	// ascending (a workspace has at most trove.MaxWebhooksPerWorkspace).
	WebhookList(ctx context.Context, workspaceID string) ([]trove.Webhook, error)
	// WebhookDelete deletes an endpoint and its whole queue; ENOTFOUND for
	// an unknown endpoint.
	WebhookDelete(ctx context.Context, id string) error

	// DeliveryInsert queues d (pending, no attempt yet) and sets d.Seq: a
	// number greater than that of every delivery inserted before it by a
	// transaction that committed first, so an endpoint's queue in Seq order
	// is its events' commit order when every writer of the endpoint's
	// queue also takes its job's row (JobWake) before inserting.
	DeliveryInsert(ctx context.Context, d *trove.WebhookDelivery) error
	// DeliveryNext returns the endpoint's pending delivery with the lowest
	// Seq, with its payload, or ENOTFOUND when none is pending.
	DeliveryNext(ctx context.Context, webhookID string) (*trove.WebhookDelivery, error)
	// DeliveryUpdate records an attempt: status, attempts, next attempt,
	// last attempt, last status, last error and delivered_at of the
	// delivery (d.WebhookID, d.Seq), only while it is still pending with
	// d.Attempts-1 attempts (so two senders cannot both count one attempt).
	// ECONFLICT when it is not; ENOTFOUND when it is gone.
	DeliveryUpdate(ctx context.Context, d *trove.WebhookDelivery) error
	// DeliveryList lists an endpoint's deliveries by Seq descending, Seq <
	// BeforeSeq when it is not 0, without payloads.
	DeliveryList(ctx context.Context, p DeliveryListParams) ([]trove.WebhookDelivery, error)
	// DeliveryPrune deletes at most limit deliveries, of any endpoint,
	// that are delivered or failed and whose last attempt was before
	// before, the oldest attempts first, and returns how many it deleted.
	// A pending delivery is never deleted.
	DeliveryPrune(ctx context.Context, before time.Time, limit int) (int, error)
}

// DeliveryListParams filters DeliveryList.
type DeliveryListParams struct {
	WebhookID string
	BeforeSeq int64
	Limit     int
}
