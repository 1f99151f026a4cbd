package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const webhookCols = `id, workspace_id, name, description, url, enabled_events, state, disabled_reason, created_at, updated_at`

func scanWebhook(r scanner, secret *string) (*trove.Webhook, error) {
	var w trove.Webhook
	var events []byte
	var state string
	dest := []any{&w.ID, &w.WorkspaceID, &w.Name, &w.Description, &w.URL, &events, &state, &w.DisabledReason, &w.CreatedAt, &w.UpdatedAt}
	if secret != nil {
		dest = append(dest, secret)
	}
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	w.State = trove.WebhookState(state)
	w.CreatedAt, w.UpdatedAt = w.CreatedAt.UTC(), w.UpdatedAt.UTC()
	if err := json.Unmarshal(events, &w.EnabledEvents); err != nil {
		return nil, err
	}
	return &w, nil
}

func eventsJSON(events []string) (string, error) {
	if events == nil {
		events = []string{}
	}
	b, err := json.Marshal(events)
	return string(b), err
}

// WebhookInsert inserts an endpoint with its secret.
func (t *tx) WebhookInsert(ctx context.Context, w *trove.Webhook, secret string) error {
	ev, err := eventsJSON(w.EnabledEvents)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO webhooks (`+webhookCols+`, secret) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11)`,
		w.ID, w.WorkspaceID, w.Name, w.Description, w.URL, ev, string(w.State), w.DisabledReason, w.CreatedAt, w.UpdatedAt, secret)
	return translate(err)
}

// WebhookGet returns an endpoint and its secret.
func (t *tx) WebhookGet(ctx context.Context, workspaceID, id string) (*trove.Webhook, string, error) {
	var secret string
	w, err := scanWebhook(t.queryRow(ctx, `SELECT `+webhookCols+`, secret FROM webhooks WHERE id = $1 AND ($2 = '' OR workspace_id = $2)`,
		id, workspaceID), &secret)
	if err == pgx.ErrNoRows {
		return nil, "", notFound("webhook endpoint " + id)
	}
	if err != nil {
		return nil, "", translate(err)
	}
	return w, secret, nil
}

// WebhookUpdate replaces the endpoint's mutable columns.
func (t *tx) WebhookUpdate(ctx context.Context, w *trove.Webhook) error {
	ev, err := eventsJSON(w.EnabledEvents)
	if err != nil {
		return err
	}
	tag, err := t.exec(ctx, `UPDATE webhooks SET name = $1, description = $2, url = $3, enabled_events = $4::jsonb,
		state = $5, disabled_reason = $6, updated_at = $7 WHERE id = $8`,
		w.Name, w.Description, w.URL, ev, string(w.State), w.DisabledReason, w.UpdatedAt, w.ID)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("webhook endpoint " + w.ID)
	}
	return nil
}

// WebhookSetSecret replaces the signing secret.
func (t *tx) WebhookSetSecret(ctx context.Context, id, secret string, at time.Time) error {
	tag, err := t.exec(ctx, `UPDATE webhooks SET secret = $1, updated_at = $2 WHERE id = $3`, secret, at, id)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("webhook endpoint " + id)
	}
	return nil
}

// WebhookList lists a workspace's endpoints, oldest first.
func (t *tx) WebhookList(ctx context.Context, workspaceID string) ([]trove.Webhook, error) {
	rows, err := t.query(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE workspace_id = $1 ORDER BY created_at, id`, workspaceID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []trove.Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows, nil)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *w)
	}
	return out, translate(rows.Err())
}

// WebhookDelete deletes an endpoint; its deliveries go with it (ON DELETE
// CASCADE).
func (t *tx) WebhookDelete(ctx context.Context, id string) error {
	tag, err := t.exec(ctx, `DELETE FROM webhooks WHERE id = $1`, id)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("webhook endpoint " + id)
	}
	return nil
}

const deliveryCols = `seq, webhook_id, event_id, event_type, created_at, status, attempts, next_attempt_at, last_attempt_at, last_status, last_error, delivered_at`

func scanDelivery(r scanner, payload bool) (*trove.WebhookDelivery, error) {
	var d trove.WebhookDelivery
	var status string
	dest := []any{&d.Seq, &d.WebhookID, &d.EventID, &d.EventType, &d.CreatedAt, &status, &d.Attempts, &d.NextAttemptAt,
		&d.LastAttemptAt, &d.LastStatus, &d.LastError, &d.DeliveredAt}
	if payload {
		dest = append(dest, &d.Payload)
	}
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	d.Status = trove.DeliveryStatus(status)
	d.CreatedAt, d.NextAttemptAt = d.CreatedAt.UTC(), d.NextAttemptAt.UTC()
	d.LastAttemptAt, d.DeliveredAt = utc(d.LastAttemptAt), utc(d.DeliveredAt)
	return &d, nil
}

// DeliveryInsert queues a delivery; its seq comes from the identity
// column. Core takes the endpoint's job row (JobWake) first, so the
// deliveries of one endpoint take their seqs in commit order.
func (t *tx) DeliveryInsert(ctx context.Context, d *trove.WebhookDelivery) error {
	err := t.queryRow(ctx, `INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, payload, created_at, status, next_attempt_at)
		VALUES ($1, $2, $3, $4, $5, 'pending', $6) RETURNING seq`,
		d.WebhookID, d.EventID, d.EventType, d.Payload, d.CreatedAt, d.NextAttemptAt).Scan(&d.Seq)
	return translate(err)
}

// DeliveryNext returns the endpoint's oldest pending delivery.
func (t *tx) DeliveryNext(ctx context.Context, webhookID string) (*trove.WebhookDelivery, error) {
	d, err := scanDelivery(t.queryRow(ctx, `SELECT `+deliveryCols+`, payload FROM webhook_deliveries
		WHERE webhook_id = $1 AND status = 'pending' ORDER BY seq LIMIT 1`, webhookID), true)
	if err == pgx.ErrNoRows {
		return nil, notFound("pending delivery of " + webhookID)
	}
	return d, translate(err)
}

// DeliveryUpdate records an attempt on a pending delivery.
func (t *tx) DeliveryUpdate(ctx context.Context, d *trove.WebhookDelivery) error {
	tag, err := t.exec(ctx, `UPDATE webhook_deliveries SET status = $1, attempts = $2, next_attempt_at = $3, last_attempt_at = $4,
		last_status = $5, last_error = $6, delivered_at = $7
		WHERE webhook_id = $8 AND seq = $9 AND status = 'pending' AND attempts = $10`,
		string(d.Status), d.Attempts, d.NextAttemptAt, d.LastAttemptAt, d.LastStatus, d.LastError, d.DeliveredAt,
		d.WebhookID, d.Seq, d.Attempts-1)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var n int
	err = t.queryRow(ctx, `SELECT 1 FROM webhook_deliveries WHERE webhook_id = $1 AND seq = $2`, d.WebhookID, d.Seq).Scan(&n)
	if err == pgx.ErrNoRows {
		return notFound("webhook delivery " + d.EventID)
	}
	if err != nil {
		return translate(err)
	}
	return trove.Errorf(trove.ECONFLICT, "webhook delivery %s was already recorded", d.EventID)
}

// DeliveryList lists an endpoint's deliveries, newest first.
func (t *tx) DeliveryList(ctx context.Context, p storage.DeliveryListParams) ([]trove.WebhookDelivery, error) {
	before := p.BeforeSeq
	if before <= 0 {
		before = 1<<63 - 1
	}
	q := `SELECT ` + deliveryCols + ` FROM webhook_deliveries WHERE webhook_id = $1 AND seq < $2 ORDER BY seq DESC`
	args := []any{p.WebhookID, before}
	if p.Limit > 0 {
		q += ` LIMIT $3`
		args = append(args, p.Limit)
	}
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []trove.WebhookDelivery{}
	for rows.Next() {
		d, err := scanDelivery(rows, false)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *d)
	}
	return out, translate(rows.Err())
}

// DeliveryPrune deletes up to limit ended deliveries attempted before
// before (index webhook_deliveries_ended).
func (t *tx) DeliveryPrune(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := t.exec(ctx, `DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries
		WHERE status <> 'pending' AND last_attempt_at < $1 ORDER BY last_attempt_at LIMIT $2)`, before, limit)
	if err != nil {
		return 0, translate(err)
	}
	return int(tag.RowsAffected()), nil
}
