package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// EventStats returns a session's event count and bytes, locking the
// session's row until the transaction ends so appends on several nodes
// number their events one after the other.
func (t *tx) EventStats(ctx context.Context, sessionID string) (int, int64, error) {
	var n int
	var b int64
	err := t.queryRow(ctx, "SELECT event_count, event_bytes FROM sessions WHERE id = $1 FOR UPDATE", sessionID).Scan(&n, &b)
	if err == pgx.ErrNoRows {
		return 0, 0, notFound("session")
	}
	return n, b, translate(err)
}

// EventInsert appends events and adds them to their sessions' counters.
func (t *tx) EventInsert(ctx context.Context, events []trove.SessionEvent) error {
	b := &pgx.Batch{}
	for i := range events {
		e := &events[i]
		typ, id := actorCols(&e.CreatedBy)
		b.Queue(`INSERT INTO session_events (session_id, seq, id, type, body, created_by_type, created_by_id, processed_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, e.SessionID, e.Seq, e.ID, e.Type, e.Body, typ, id, e.ProcessedAt)
		b.Queue(`UPDATE sessions SET event_count = event_count + 1, event_bytes = event_bytes + $2 WHERE id = $1`,
			e.SessionID, len(e.Body))
	}
	if b.Len() == 0 {
		return nil
	}
	if err := t.ensureBegun(ctx); err != nil {
		return translate(err)
	}
	return translate(t.conn.SendBatch(ctx, b).Close())
}

// EventList lists a session's events by seq ascending after AfterSeq.
func (t *tx) EventList(ctx context.Context, p storage.EventListParams) ([]trove.SessionEvent, error) {
	w := where{}
	w.add("session_id = ?", p.SessionID)
	w.add("seq > ?", p.AfterSeq)
	q := "SELECT session_id, seq, id, type, body, created_by_type, created_by_id, processed_at FROM session_events WHERE " +
		w.sql() + " ORDER BY seq"
	q += w.limit(p.Limit)
	rows, err := t.query(ctx, q, w.args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []trove.SessionEvent{}
	for rows.Next() {
		var e trove.SessionEvent
		var typ, id string
		if err := rows.Scan(&e.SessionID, &e.Seq, &e.ID, &e.Type, &e.Body, &typ, &id, &e.ProcessedAt); err != nil {
			return nil, translate(err)
		}
		e.CreatedBy = *actorFrom(&typ, &id)
		e.ProcessedAt = e.ProcessedAt.UTC()
		out = append(out, e)
	}
	return out, translate(rows.Err())
}
