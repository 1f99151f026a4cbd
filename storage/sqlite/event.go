package sqlite

import (
	"context"
	"database/sql"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// EventStats returns a session's event count and bytes. SQLite has one
// writer at a time, so the read in a Write transaction already excludes
// every other append.
func (t *tx) EventStats(ctx context.Context, sessionID string) (int, int64, error) {
	var n int
	var b int64
	err := t.queryRow(ctx, "session", sessionID, func(r rowScanner) error { return r.Scan(&n, &b) },
		`SELECT event_count, event_bytes FROM sessions WHERE id = ?`, sessionID)
	return n, b, err
}

// EventInsert appends events and adds them to their sessions' counters.
func (t *tx) EventInsert(ctx context.Context, events []trove.SessionEvent) error {
	for i := range events {
		e := &events[i]
		id, err := actorID(e.CreatedBy)
		if err != nil {
			return err
		}
		if _, err := t.exec(ctx, `INSERT INTO session_events
			(session_id, seq, id, type, body, created_by_type, created_by_id, processed_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			e.SessionID, e.Seq, e.ID, e.Type, e.Body, string(e.CreatedBy.Type), id, micros(e.ProcessedAt)); err != nil {
			return err
		}
		if err := t.execOne(ctx, "session", e.SessionID,
			`UPDATE sessions SET event_count = event_count + 1, event_bytes = event_bytes + ? WHERE id = ?`,
			len(e.Body), e.SessionID); err != nil {
			return err
		}
	}
	return nil
}

// EventList lists a session's events by seq ascending after AfterSeq.
func (t *tx) EventList(ctx context.Context, p storage.EventListParams) ([]trove.SessionEvent, error) {
	rows, err := t.query(ctx, `SELECT session_id, seq, id, type, body, created_by_type, created_by_id, processed_at
		FROM session_events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
		p.SessionID, p.AfterSeq, limitArg(p.Limit))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.SessionEvent{}
	for rows.Next() {
		var e trove.SessionEvent
		var typ, id string
		var at int64
		if err := rows.Scan(&e.SessionID, &e.Seq, &e.ID, &e.Type, &e.Body, &typ, &id, &at); err != nil {
			return nil, translate(err)
		}
		e.CreatedBy = *actorOf(sql.NullString{String: typ, Valid: true}, sql.NullString{String: id, Valid: true})
		e.ProcessedAt = fromMicros(at)
		out = append(out, e)
	}
	return out, translate(rows.Err())
}
