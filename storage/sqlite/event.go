package sqlite

import (
	"context"
	"database/sql"
	"strings"

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
		var ref any
		if e.RefID != "" {
			ref = e.RefID
		}
		if _, err := t.exec(ctx, `INSERT INTO session_events
			(session_id, seq, id, type, body, created_by_type, created_by_id, processed_at, ref_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.SessionID, e.Seq, e.ID, e.Type, e.Body, string(e.CreatedBy.Type), id, micros(e.ProcessedAt), ref); err != nil {
			return err
		}
		if err := t.execOne(ctx, "session", e.SessionID,
			`UPDATE sessions SET event_count = event_count + 1, event_bytes = event_bytes + ? WHERE id = ?`,
			len(e.Body), e.SessionID); err != nil {
			return err
		}
		t.touchSession(e.SessionID)
	}
	return nil
}

const eventCols = `session_id, seq, id, type, body, created_by_type, created_by_id, processed_at, ref_id`

// EventList lists a session's events by seq with p's filters.
func (t *tx) EventList(ctx context.Context, p storage.EventListParams) ([]trove.SessionEvent, error) {
	var w whereBuilder
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
		args := make([]any, len(p.Types))
		for i, ty := range p.Types {
			args[i] = ty
		}
		w.add("type IN ("+strings.Repeat("?, ", len(args)-1)+"?)", args...)
	}
	w.timeRange("processed_at", p.CreatedAt)
	if p.CreatedAfter != nil {
		w.add("processed_at > ?", micros(*p.CreatedAfter))
	}
	if p.CreatedBefore != nil {
		w.add("processed_at < ?", ceilMicros(*p.CreatedBefore))
	}
	return t.eventQueryMax(ctx, p.MaxBytes, `SELECT `+eventCols+` FROM session_events`+w.String()+order+` LIMIT ?`,
		append(w.args, limitArg(p.Limit))...)
}

// EventGet returns one event of a session, or ENOTFOUND.
func (t *tx) EventGet(ctx context.Context, sessionID, id string) (*trove.SessionEvent, error) {
	out, err := t.eventQuery(ctx, `SELECT `+eventCols+` FROM session_events WHERE id = ? AND session_id = ?`, id, sessionID)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, trove.Errorf(trove.ENOTFOUND, "event %s not found", id)
	}
	return &out[0], nil
}

// EventListByRef lists the events answering refID, by seq.
func (t *tx) EventListByRef(ctx context.Context, sessionID, refID string) ([]trove.SessionEvent, error) {
	return t.eventQuery(ctx, `SELECT `+eventCols+` FROM session_events WHERE session_id = ? AND ref_id = ? ORDER BY seq`, sessionID, refID)
}

func (t *tx) eventQuery(ctx context.Context, q string, args ...any) ([]trove.SessionEvent, error) {
	return t.eventQueryMax(ctx, 0, q, args...)
}

// eventQueryMax reads events; with maxBytes > 0 it stops after the event
// whose Body takes the read Bodies past maxBytes (EventListParams.MaxBytes).
func (t *tx) eventQueryMax(ctx context.Context, maxBytes int, q string, args ...any) ([]trove.SessionEvent, error) {
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.SessionEvent{}
	budget := maxBytes
	for rows.Next() {
		var e trove.SessionEvent
		var typ, id string
		var at int64
		var ref sql.NullString
		if err := rows.Scan(&e.SessionID, &e.Seq, &e.ID, &e.Type, &e.Body, &typ, &id, &at, &ref); err != nil {
			return nil, translate(err)
		}
		e.CreatedBy = *actorOf(sql.NullString{String: typ, Valid: true}, sql.NullString{String: id, Valid: true})
		e.ProcessedAt = fromMicros(at)
		e.RefID = ref.String
		out = append(out, e)
		if budget -= len(e.Body); maxBytes > 0 && budget < 0 {
			break
		}
	}
	return out, translate(rows.Err())
}
