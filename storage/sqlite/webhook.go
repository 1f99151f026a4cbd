package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const webhookCols = `id, workspace_id, name, description, url, enabled_events, state, disabled_reason, created_at, updated_at`

func scanWebhook(r rowScanner, w *trove.Webhook, secret *string) error {
	var events string
	var created, updated int64
	dest := []any{&w.ID, &w.WorkspaceID, &w.Name, &w.Description, &w.URL, &events, &w.State, &w.DisabledReason, &created, &updated}
	if secret != nil {
		dest = append(dest, secret)
	}
	if err := r.Scan(dest...); err != nil {
		return err
	}
	w.CreatedAt, w.UpdatedAt = fromMicros(created), fromMicros(updated)
	return json.Unmarshal([]byte(events), &w.EnabledEvents)
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
	_, err = t.exec(ctx, `INSERT INTO webhooks (`+webhookCols+`, secret) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		w.ID, w.WorkspaceID, w.Name, w.Description, w.URL, ev, string(w.State), w.DisabledReason, micros(w.CreatedAt), micros(w.UpdatedAt), secret)
	return err
}

// WebhookGet returns an endpoint and its secret.
func (t *tx) WebhookGet(ctx context.Context, workspaceID, id string) (*trove.Webhook, string, error) {
	var w trove.Webhook
	var secret string
	err := t.queryRow(ctx, "webhook endpoint", id, func(r rowScanner) error { return scanWebhook(r, &w, &secret) },
		`SELECT `+webhookCols+`, secret FROM webhooks WHERE id = ? AND (? = '' OR workspace_id = ?)`, id, workspaceID, workspaceID)
	if err != nil {
		return nil, "", err
	}
	return &w, secret, nil
}

// WebhookUpdate replaces the endpoint's mutable columns.
func (t *tx) WebhookUpdate(ctx context.Context, w *trove.Webhook) error {
	ev, err := eventsJSON(w.EnabledEvents)
	if err != nil {
		return err
	}
	return t.execOne(ctx, "webhook endpoint", w.ID, `UPDATE webhooks SET name = ?, description = ?, url = ?, enabled_events = ?,
		state = ?, disabled_reason = ?, updated_at = ? WHERE id = ?`,
		w.Name, w.Description, w.URL, ev, string(w.State), w.DisabledReason, micros(w.UpdatedAt), w.ID)
}

// WebhookSetSecret replaces the signing secret.
func (t *tx) WebhookSetSecret(ctx context.Context, id, secret string, at time.Time) error {
	return t.execOne(ctx, "webhook endpoint", id, `UPDATE webhooks SET secret = ?, updated_at = ? WHERE id = ?`, secret, micros(at), id)
}

// WebhookList lists a workspace's endpoints, oldest first.
func (t *tx) WebhookList(ctx context.Context, workspaceID string) ([]trove.Webhook, error) {
	rows, err := t.query(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE workspace_id = ? ORDER BY created_at, id`, workspaceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.Webhook{}
	for rows.Next() {
		var w trove.Webhook
		if err := scanWebhook(rows, &w, nil); err != nil {
			return nil, translate(err)
		}
		out = append(out, w)
	}
	return out, translate(rows.Err())
}

// WebhookDelete deletes an endpoint; its deliveries go with it (ON DELETE
// CASCADE).
func (t *tx) WebhookDelete(ctx context.Context, id string) error {
	return t.execOne(ctx, "webhook endpoint", id, `DELETE FROM webhooks WHERE id = ?`, id)
}

const deliveryCols = `seq, webhook_id, event_id, event_type, created_at, status, attempts, next_attempt_at, last_attempt_at, last_status, last_error, delivered_at`

func scanDelivery(r rowScanner, d *trove.WebhookDelivery, payload bool) error {
	var created, next int64
	var last, delivered sql.NullInt64
	dest := []any{&d.Seq, &d.WebhookID, &d.EventID, &d.EventType, &created, &d.Status, &d.Attempts, &next, &last, &d.LastStatus, &d.LastError, &delivered}
	if payload {
		dest = append(dest, &d.Payload)
	}
	if err := r.Scan(dest...); err != nil {
		return err
	}
	d.CreatedAt, d.NextAttemptAt = fromMicros(created), fromMicros(next)
	d.LastAttemptAt, d.DeliveredAt = timePtr(last), timePtr(delivered)
	return nil
}

// DeliveryInsert queues a delivery; its seq is the new rowid (SQLite has
// one writer, so rowids grow in commit order).
func (t *tx) DeliveryInsert(ctx context.Context, d *trove.WebhookDelivery) error {
	return t.queryRow(ctx, "webhook endpoint", d.WebhookID, func(r rowScanner) error { return r.Scan(&d.Seq) },
		`INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, payload, created_at, status, next_attempt_at)
		VALUES (?, ?, ?, ?, ?, 'pending', ?) RETURNING seq`,
		d.WebhookID, d.EventID, d.EventType, d.Payload, micros(d.CreatedAt), micros(d.NextAttemptAt))
}

// DeliveryNext returns the endpoint's oldest pending delivery.
func (t *tx) DeliveryNext(ctx context.Context, webhookID string) (*trove.WebhookDelivery, error) {
	var d trove.WebhookDelivery
	err := t.queryRow(ctx, "pending delivery of", webhookID, func(r rowScanner) error { return scanDelivery(r, &d, true) },
		`SELECT `+deliveryCols+`, payload FROM webhook_deliveries WHERE webhook_id = ? AND status = 'pending' ORDER BY seq LIMIT 1`, webhookID)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// DeliveryUpdate records an attempt on a pending delivery.
func (t *tx) DeliveryUpdate(ctx context.Context, d *trove.WebhookDelivery) error {
	res, err := t.exec(ctx, `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_attempt_at = ?,
		last_status = ?, last_error = ?, delivered_at = ?
		WHERE webhook_id = ? AND seq = ? AND status = 'pending' AND attempts = ?`,
		string(d.Status), d.Attempts, micros(d.NextAttemptAt), nullMicros(d.LastAttemptAt), d.LastStatus, d.LastError, nullMicros(d.DeliveredAt),
		d.WebhookID, d.Seq, d.Attempts-1)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var n int64
	if err := t.queryRow(ctx, "webhook delivery", d.EventID, func(r rowScanner) error { return r.Scan(&n) },
		`SELECT 1 FROM webhook_deliveries WHERE webhook_id = ? AND seq = ?`, d.WebhookID, d.Seq); err != nil {
		return err
	}
	return trove.Errorf(trove.ECONFLICT, "webhook delivery %s was already recorded", d.EventID)
}

// DeliveryList lists an endpoint's deliveries, newest first.
func (t *tx) DeliveryList(ctx context.Context, p storage.DeliveryListParams) ([]trove.WebhookDelivery, error) {
	before := p.BeforeSeq
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := t.query(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE webhook_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
		p.WebhookID, before, limitArg(p.Limit))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.WebhookDelivery{}
	for rows.Next() {
		var d trove.WebhookDelivery
		if err := scanDelivery(rows, &d, false); err != nil {
			return nil, translate(err)
		}
		out = append(out, d)
	}
	return out, translate(rows.Err())
}

// DeliveryPrune deletes up to limit ended deliveries attempted before
// before (index webhook_deliveries_ended).
func (t *tx) DeliveryPrune(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := t.exec(ctx, `DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries
		WHERE status <> 'pending' AND last_attempt_at < ? ORDER BY last_attempt_at LIMIT ?)`, micros(before), limit)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
