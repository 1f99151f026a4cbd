package core

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

var _ trove.EventService = (*Service)(nil)

// acceptedEventTypes are the types AppendEvents takes for some session.
var acceptedEventTypes = slices.Concat(trove.EventTypes,
	[]string{trove.EventUserInterrupt, trove.EventUserToolConfirmation, trove.EventUserToolResult})

// kindEvent is the cursor kind of a transcript listing: the last Seq seen.
const kindEvent = "e"

// AppendEvents appends events to a session's transcript in one transaction
// (all or none) and returns them as stored, numbered after the session's
// last event. Each body must be a JSON object; its "id", "type" and
// "processed_at" members are dropped (the server sets them) and the rest is
// kept compacted. Events are attributed to the caller's actor.
//
// A session credential may append to its own session only (EFORBIDDEN); a
// workspace key to any session of its workspace. EINVALID for no events or
// more than MaxEventsPerAppend, an unknown type, a body that is not a JSON
// object or not UTF-8, a body over MaxEventBytes, an ended session, or a
// transcript that would pass MaxSessionEvents events or
// MaxSessionEventBytes bytes; ENOTFOUND for an unknown session.
func (s *Service) AppendEvents(ctx context.Context, sessionID string, events []trove.NewSessionEvent) ([]trove.SessionEvent, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if pr.Session != nil && pr.Session.SessionID != sessionID {
		return nil, trove.Errorf(trove.EFORBIDDEN, "a session credential can only append to its own session's events")
	}
	if len(events) == 0 {
		return nil, trove.Errorf(trove.EINVALID, "events must hold at least one event")
	}
	if len(events) > s.limits.MaxEventsPerAppend {
		return nil, trove.Errorf(trove.EINVALID, "at most %d events can be appended at once, got %d", s.limits.MaxEventsPerAppend, len(events))
	}
	bodies := make([]string, len(events))
	var total int64
	for i, e := range events {
		switch e.Type {
		case trove.EventUserDefineOutcome, trove.EventSystemMessage:
			return nil, trove.Errorf(trove.EINVALID, "events[%d].type %q is not supported: Trove's agent loop does not run outcomes or client system messages", i, e.Type)
		}
		if !slices.Contains(trove.EventTypes, e.Type) && !slices.Contains(trove.SendEventTypes, e.Type) {
			return nil, trove.Errorf(trove.EINVALID, "events[%d].type must be one of %v, got %q", i, acceptedEventTypes, e.Type)
		}
		b, err := s.eventBody(e.Body)
		if err != nil {
			return nil, trove.Errorf(trove.EINVALID, "events[%d]: %s", i, trove.ErrorMessage(err))
		}
		bodies[i] = b
		total += int64(len(b))
	}
	var out []trove.SessionEvent
	wake := false
	err = s.write(ctx, "AppendEvents", func(tx storage.Tx) error {
		wake = false
		se, err := tx.SessionLock(ctx, pr.WorkspaceID, sessionID)
		if err != nil {
			return err
		}
		var refs []string
		if se.Managed != nil {
			for i, e := range events {
				if !slices.Contains(trove.SendEventTypes, e.Type) {
					return trove.Errorf(trove.EINVALID, "events[%d].type %q cannot be sent to a managed session: its agent loop appends agent events; send one of %v", i, e.Type, trove.SendEventTypes)
				}
			}
			if refs, err = s.checkSend(ctx, tx, se, events, bodies); err != nil {
				return err
			}
			// A worker must be there for the tool uses the input leads to.
			if _, err := s.EnqueueSessionWorkTx(ctx, tx, se.WorkspaceID, se.Managed.EnvironmentID, se.ID); err != nil {
				return err
			}
			wake = true
		} else {
			for i, e := range events {
				if !slices.Contains(trove.EventTypes, e.Type) {
					return trove.Errorf(trove.EINVALID, "events[%d].type %q needs a managed session (one with an agent); this session's transcript takes %v", i, e.Type, trove.EventTypes)
				}
			}
			if se.EndedAt != nil {
				return trove.Errorf(trove.EINVALID, "session %s has ended; its transcript is closed", sessionID)
			}
		}
		n, err := s.checkTranscript(ctx, tx, sessionID, len(events), total)
		if err != nil {
			return err
		}
		now := s.now()
		nes := make([]trove.NewSessionEvent, len(events))
		for i, e := range events {
			nes[i] = trove.NewSessionEvent{Type: e.Type, Body: bodies[i]}
		}
		out = s.newEvents(sessionID, n, pr.Actor, now, nes)
		for i := range refs {
			out[i].RefID = refs[i]
		}
		if err := tx.EventInsert(ctx, out); err != nil {
			return err
		}
		return s.runHook(ctx, tx, se, out)
	})
	if err == nil {
		s.events.notify(sessionID)
		if wake {
			s.WakeWorkPollers()
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eventBody checks and normalizes one event body: a JSON object ("" means
// {}) without the members the server sets, compacted, within MaxEventBytes.
func (s *Service) eventBody(body string) (string, error) {
	if body == "" {
		return "{}", nil
	}
	if len(body) > 2*s.limits.MaxEventBytes || !utf8.ValidString(body) {
		return "", trove.Errorf(trove.EINVALID, "the event must be valid UTF-8 JSON of at most %d bytes", s.limits.MaxEventBytes)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil || m == nil {
		return "", trove.Errorf(trove.EINVALID, "the event must be a JSON object")
	}
	delete(m, "id")
	delete(m, "type")
	delete(m, "processed_at")
	b, err := json.Marshal(m)
	if err != nil {
		return "", trove.Errorf(trove.EINVALID, "the event must be a JSON object")
	}
	if len(b) > s.limits.MaxEventBytes {
		return "", trove.Errorf(trove.EINVALID, "the event is %d bytes; at most %d are allowed", len(b), s.limits.MaxEventBytes)
	}
	return string(b), nil
}

// ListEvents pages a session's transcript, oldest first (p.Order "desc":
// newest first), only p.Types when set, within p's processed_at bounds. A
// page holds at most p.Limit events and trove.MaxEventPageBytes of their
// bodies (at least one event), so what it holds in memory is bounded
// whatever the events' sizes; NextPage continues it. A session credential may read its own session only (EFORBIDDEN). EINVALID
// for a bad limit, order, type or cursor; ENOTFOUND for an unknown session.
func (s *Service) ListEvents(ctx context.Context, sessionID string, p trove.ListEventsParams) (*trove.Page[trove.SessionEvent], error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if pr.Session != nil && pr.Session.SessionID != sessionID {
		return nil, trove.Errorf(trove.EFORBIDDEN, "a session credential can only read its own session's events")
	}
	limit, err := s.checkLimit(p.Limit, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	if p.AfterSeq < 0 || (p.AfterSeq > 0 && p.Order == "desc") {
		return nil, trove.Errorf(trove.EINVALID, "after_seq must be >= 0 and lists oldest first")
	}
	pos := p.AfterSeq
	if p.Cursor != "" {
		c, err := decodeCursor(p.Cursor, kindEvent)
		if err != nil {
			return nil, err
		}
		pos, err = strconv.ParseInt(c.I, 10, 64)
		if err != nil || pos < 0 {
			return nil, errBadCursor()
		}
	}
	lp := storage.EventListParams{SessionID: sessionID, Limit: limit + 1, Types: p.Types, MaxBytes: trove.MaxEventPageBytes,
		CreatedAt: p.CreatedAt, CreatedAfter: p.CreatedAfter, CreatedBefore: p.CreatedBefore}
	switch p.Order {
	case "", "asc":
		lp.AfterSeq = pos
	case "desc":
		lp.Desc, lp.BeforeSeq = true, pos
	default:
		return nil, trove.Errorf(trove.EINVALID, "order must be \"asc\" or \"desc\", got %q", p.Order)
	}
	var rows []trove.SessionEvent
	err = s.read(ctx, "ListEvents", func(tx storage.Tx) error {
		if _, err := tx.SessionGet(ctx, pr.WorkspaceID, sessionID); err != nil {
			return err
		}
		rows, err = tx.EventList(ctx, lp)
		return err
	})
	if err != nil {
		return nil, err
	}
	// The page: at most limit events and trove.MaxEventPageBytes of bodies
	// (at least one event); the driver read at most one more, which tells
	// that more follow.
	n, size := 0, 0
	for n < len(rows) && n < limit && (n == 0 || size+len(rows[n].Body) <= trove.MaxEventPageBytes) {
		size += len(rows[n].Body)
		n++
	}
	page := &trove.Page[trove.SessionEvent]{Data: rows[:n]}
	if n < len(rows) {
		page.NextPage = encodeCursor(cursorJSON{K: kindEvent, I: strconv.FormatInt(rows[n-1].Seq, 10)})
	}
	return page, nil
}
