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
		var ref *string
		if e.RefID != "" {
			ref = &e.RefID
		}
		b.Queue(`INSERT INTO session_events (session_id, seq, id, type, body, created_by_type, created_by_id, processed_at, ref_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, e.SessionID, e.Seq, e.ID, e.Type, e.Body, typ, id, e.ProcessedAt, ref)
		b.Queue(`UPDATE sessions SET event_count = event_count + 1, event_bytes = event_bytes + $2 WHERE id = $1`,
			e.SessionID, len(e.Body))
	}
	if b.Len() == 0 {
		return nil
	}
	// WaitEvents' wake-up on every node, at commit (listen.go).
	notified := map[string]bool{}
	for i := range events {
		if sid := events[i].SessionID; !notified[sid] {
			notified[sid] = true
			b.Queue(`SELECT pg_notify('`+notifyChannel+`', current_schema() || ' ' || $1::text)`, sid)
		}
	}
	if err := t.ensureBegun(ctx); err != nil {
		return translate(err)
	}
	return translate(t.conn.SendBatch(ctx, b).Close())
}

const eventCols = "session_id, seq, id, type, body, created_by_type, created_by_id, processed_at, ref_id"

// EventList lists a session's events by seq with p's filters.
func (t *tx) EventList(ctx context.Context, p storage.EventListParams) ([]trove.SessionEvent, error) {
	w := where{}
	w.add("session_id = ?", p.SessionID)
	order := " ORDER BY seq"
	if p.Desc {
		if p.BeforeSeq > 0 {
			w.add("seq < ?", p.BeforeSeq)
		}
		order = " ORDER BY seq DESC"
	} else {
		w.add("seq > ?", p.AfterSeq)
	}
	if len(p.Types) > 0 {
		w.add("type = ANY(?::text[])", p.Types)
	}
	w.timeRange("processed_at", p.CreatedAt)
	if p.CreatedAfter != nil {
		w.add("processed_at > ?", floorMicro(*p.CreatedAfter))
	}
	if p.CreatedBefore != nil {
		w.add("processed_at < ?", ceilMicro(*p.CreatedBefore))
	}
	q := "SELECT " + eventCols + " FROM session_events WHERE " + w.sql() + order
	q += w.limit(p.Limit)
	return t.eventQueryMax(ctx, p.MaxBytes, q, w.args...)
}

// EventGet returns one event of a session, or ENOTFOUND.
func (t *tx) EventGet(ctx context.Context, sessionID, id string) (*trove.SessionEvent, error) {
	out, err := t.eventQuery(ctx, "SELECT "+eventCols+" FROM session_events WHERE id = $1 AND session_id = $2", id, sessionID)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, notFound("event")
	}
	return &out[0], nil
}

// EventListByRef lists the events answering refID, by seq.
func (t *tx) EventListByRef(ctx context.Context, sessionID, refID string) ([]trove.SessionEvent, error) {
	return t.eventQuery(ctx, "SELECT "+eventCols+" FROM session_events WHERE session_id = $1 AND ref_id = $2 ORDER BY seq", sessionID, refID)
}

func (t *tx) eventQuery(ctx context.Context, q string, args ...any) ([]trove.SessionEvent, error) {
	return t.eventQueryMax(ctx, 0, q, args...)
}

// eventQueryMax reads events; with maxBytes > 0 it stops after the event
// whose Body takes the read Bodies past maxBytes (EventListParams.MaxBytes).
func (t *tx) eventQueryMax(ctx context.Context, maxBytes int, q string, args ...any) ([]trove.SessionEvent, error) {
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []trove.SessionEvent{}
	budget := maxBytes
	for rows.Next() {
		var e trove.SessionEvent
		var typ, id string
		var ref *string
		if err := rows.Scan(&e.SessionID, &e.Seq, &e.ID, &e.Type, &e.Body, &typ, &id, &e.ProcessedAt, &ref); err != nil {
			return nil, translate(err)
		}
		e.CreatedBy = *actorFrom(&typ, &id)
		e.ProcessedAt = e.ProcessedAt.UTC()
		if ref != nil {
			e.RefID = *ref
		}
		out = append(out, e)
		if budget -= len(e.Body); maxBytes > 0 && budget < 0 {
			break
		}
	}
	return out, translate(rows.Err())
}
