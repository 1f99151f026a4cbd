package httpapi

import (
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/trovehq/trove"
)

// StreamRecheck is how often an open event stream re-checks its
// credential: a revoked key or an ended session's token ends the stream
// within this time.
const StreamRecheck = 2 * time.Second

// streamPage bounds the events read per step of a stream (each at most
// Limits.MaxEventBytes), so a stream's memory is bounded whatever the
// transcript.
const streamPage = 16

// streamEvents serves GET /v1/sessions/{id}/events/stream: server-sent
// events, one per transcript event, in Seq order, each as "id: <seq>",
// "event: <type>", "data: <event object>". A new stream starts after the
// events already stored when it opened (what the SDK expects: it lists the
// history itself after opening the stream, and de-duplicates by event ID);
// a Last-Event-ID header, or after_seq, resumes after that Seq instead, so
// a client that reconnects with the last id it saw misses and repeats
// nothing. The stream ends after the session's last event once the session
// has ended (session.status_terminated is sent first), with a synthesized
// session.deleted when the session is deleted, with an error event when
// the credential stops being valid (re-checked every StreamRecheck), and
// at server shutdown. Idle, it sends a comment line every FeedHeartbeat.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	if err := checkQuery(q, "event_deltas[]", "event_deltas", "after_seq"); err != nil {
		return err
	}
	for _, v := range append(q["event_deltas[]"], q["event_deltas"]...) {
		if v != trove.EventAgentMessage && v != trove.EventAgentThinking {
			return trove.Errorf(trove.EINVALID, "event_deltas must be agent.message or agent.thinking, got %q", v)
		}
		// Deltas are best-effort by contract: Trove sends none, and every
		// event arrives whole.
	}
	id := r.PathValue("session_id")
	ctx := r.Context()
	cursor := int64(-1)
	if v := q.Get("after_seq"); v != "" {
		n, err := parseSeq("after_seq", v)
		if err != nil {
			return err
		}
		cursor = n
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := parseSeq("Last-Event-ID", v)
		if err != nil {
			return err
		}
		cursor = n
	}
	if cursor < 0 {
		// From now: after the newest stored event.
		last, err := s.events.ListEvents(ctx, id, trove.ListEventsParams{Order: "desc", Limit: 1})
		if err != nil {
			return err
		}
		cursor = 0
		if len(last.Data) > 0 {
			cursor = last.Data[0].Seq
		}
	} else if _, err := s.events.ListEvents(ctx, id, trove.ListEventsParams{Limit: 1}); err != nil {
		return err // the session must be there and readable before the stream starts
	}

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	send := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.limits.Write))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// The headers go out now: once the client has the response, the
	// stream's position is fixed, and nothing appended later is missed.
	// "id: <cursor>" alone tells a reader where the stream starts (an
	// EventSource's last event ID; the SDK skips a message with no data).
	if !send(fmt.Appendf(nil, ": stream open\nid: %d\n\n", cursor)) {
		return nil
	}
	checked, beat := time.Now(), time.Now()
	var buf []byte
	// idle is set when the last wait ended with nothing new (a heartbeat
	// was due): the next step only waits again, with no listing.
	idle := false
	for {
		if idle {
			idle = false
			if !s.waitEvents(&ctx, r, send, w, id, cursor, &checked, &beat, &idle) {
				return nil
			}
			continue
		}
		page, err := s.events.ListEvents(ctx, id, trove.ListEventsParams{AfterSeq: cursor, Limit: streamPage})
		if err != nil {
			s.endStream(send, w, r, id, err)
			return nil
		}
		buf = buf[:0]
		for i := range page.Data {
			e := &page.Data[i]
			data, err := stdjson.Marshal(eventToWire(e))
			if err != nil {
				return nil // cannot happen: a stored JSON object
			}
			buf = fmt.Appendf(buf, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, data)
			cursor = e.Seq
		}
		if len(buf) > 0 {
			if !send(buf) {
				return nil
			}
			beat = time.Now()
		}
		if cap(buf) > 1<<20 {
			buf = nil
		}
		// The credential, at least every StreamRecheck.
		if time.Since(checked) >= StreamRecheck {
			p, err := s.authenticate(r)
			if err != nil {
				s.sendStreamError(send, w, r, err)
				return nil
			}
			ctx = trove.WithPrincipal(r.Context(), p)
			checked = time.Now()
		}
		if page.NextPage != "" {
			continue
		}
		if !s.waitEvents(&ctx, r, send, w, id, cursor, &checked, &beat, &idle) {
			return nil
		}
	}
}

// waitEvents is one wait of streamEvents for an event after cursor, until
// one arrives or a heartbeat is due. The one wait spans credential
// re-checks (every StreamRecheck after *checked, by a timer, which ends
// the wait when the credential is no longer valid), so an idle stream
// costs no more than its waiter's own polls. It updates *ctx's principal
// and *checked, sends the heartbeat when due, sets *idle when the wait
// ended with nothing new, and returns false when the stream is over
// (ended session, error sent, client gone, server closing).
func (s *Server) waitEvents(ctx *context.Context, r *http.Request, send func([]byte) bool, w http.ResponseWriter,
	id string, cursor int64, checked, beat *time.Time, idle *bool) bool {
	wctx, cancel := context.WithTimeout(*ctx, max(s.heartbeat-time.Since(*beat), 0))
	defer cancel()
	stop := context.AfterFunc(s.closing, cancel)
	defer stop()
	var (
		mu      sync.Mutex
		done    bool
		authErr error
		latest  *trove.Principal
		timer   *time.Timer
	)
	mu.Lock()
	timer = time.AfterFunc(max(StreamRecheck-time.Since(*checked), 0), func() {
		p, err := s.authenticate(r)
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		*checked = time.Now()
		if err != nil {
			authErr = err
			cancel()
			return
		}
		latest = p
		timer.Reset(StreamRecheck)
	})
	mu.Unlock()
	head, err := s.waiter.WaitEvents(wctx, id, cursor)
	mu.Lock()
	done = true
	timer.Stop()
	aerr, p := authErr, latest
	mu.Unlock()
	if p != nil {
		*ctx = trove.WithPrincipal(r.Context(), p)
	}
	switch {
	case r.Context().Err() != nil || s.closing.Err() != nil:
		return false
	case aerr != nil:
		s.sendStreamError(send, w, r, aerr)
		return false
	case errors.Is(err, context.DeadlineExceeded):
		*idle = true
		if !send([]byte(": heartbeat\n\n")) {
			return false
		}
		*beat = time.Now()
	case err != nil:
		s.endStream(send, w, r, id, err)
		return false
	case head <= cursor:
		return false // the session has ended and everything was sent
	}
	return true
}

// endStream ends a stream on err: a deleted session gets a final
// session.deleted event, anything else an error event.
func (s *Server) endStream(send func([]byte) bool, w http.ResponseWriter, r *http.Request, id string, err error) {
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		data, _ := stdjson.Marshal(map[string]string{"type": trove.EventSessionDeleted, "id": "sevt_deleted_" + id,
			"processed_at": formatTime(time.Now())})
		send(fmt.Appendf(nil, "event: %s\ndata: %s\n\n", trove.EventSessionDeleted, data))
		return
	}
	s.sendStreamError(send, w, r, err)
}
