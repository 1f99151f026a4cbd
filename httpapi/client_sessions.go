package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/trovehq/trove"
)

var _ trove.ManagedSessionService = (*Client)(nil)

// createManagedSession creates a managed session through POST
// /v1/sessions and reads it back through /trove/v1 (whose shape the client
// reads). The API shows no credential for a managed session: its workers
// get one with their work.
func (c *Client) createManagedSession(ctx context.Context, p trove.CreateSessionParams) (*trove.Session, string, error) {
	body := map[string]any{"environment_id": p.EnvironmentID}
	if p.Agent.Version != 0 {
		body["agent"] = map[string]any{"type": "agent", "id": p.Agent.ID, "version": p.Agent.Version}
	} else {
		body["agent"] = p.Agent.ID
	}
	if p.Title != "" {
		body["title"] = p.Title
	}
	if len(p.Metadata) > 0 {
		body["metadata"] = p.Metadata
	}
	res := make([]map[string]any, len(p.Stores))
	for i, a := range p.Stores {
		r := map[string]any{"type": "memory_store", "memory_store_id": a.StoreID}
		if a.Access != "" {
			r["access"] = string(a.Access)
		}
		if a.Instructions != "" {
			r["instructions"] = a.Instructions
		}
		res[i] = r
	}
	if len(res) > 0 {
		body["resources"] = res
	}
	if b := p.Budget; b != nil {
		body["budget"] = map[string]any{"type": "limit", "max_list_cost": map[string]string{"currency": b.Currency, "amount": b.Amount}}
	}
	if len(p.InitialEvents) > 0 {
		evs := make([]json.RawMessage, len(p.InitialEvents))
		for i, e := range p.InitialEvents {
			b, err := eventJSON(e)
			if err != nil {
				return nil, "", trove.Errorf(trove.EINVALID, "initial_events[%d]: %v", i, err)
			}
			evs[i] = b
		}
		body["initial_events"] = evs
	}
	var out struct {
		ID string `json:"id"`
	}
	if _, err := c.do(ctx, http.MethodPost, "/v1/sessions", nil, body, &out); err != nil {
		return nil, "", err
	}
	se, err := c.GetSession(ctx, out.ID)
	return se, "", err
}

// eventJSON is an event as the API takes it: its body with its type.
func eventJSON(e trove.NewSessionEvent) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if e.Body != "" {
		if err := json.Unmarshal([]byte(e.Body), &m); err != nil || m == nil {
			return nil, errors.New("the event must be a JSON object")
		}
	}
	t, _ := json.Marshal(e.Type)
	m["type"] = t
	return json.Marshal(m)
}

// UpdateSession changes a session's title and metadata (POST
// /v1/sessions/{id}).
func (c *Client) UpdateSession(ctx context.Context, sessionID string, p trove.UpdateSessionParams) (*trove.Session, error) {
	body := map[string]any{}
	if p.Title != nil {
		if *p.Title == "" {
			body["title"] = nil
		} else {
			body["title"] = *p.Title
		}
	}
	if len(p.Metadata) > 0 {
		body["metadata"] = p.Metadata
	}
	if _, err := c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(sessionID), nil, body, &struct{}{}); err != nil {
		return nil, err
	}
	return c.GetSession(ctx, sessionID)
}

// ArchiveSession archives (and terminates) a session (POST
// /v1/sessions/{id}/archive).
func (c *Client) ArchiveSession(ctx context.Context, sessionID string) (*trove.Session, error) {
	if _, err := c.do(ctx, http.MethodPost, "/v1/sessions/"+url.PathEscape(sessionID)+"/archive", nil, nil, &struct{}{}); err != nil {
		return nil, err
	}
	return c.GetSession(ctx, sessionID)
}

// DeleteSession deletes a session and its transcript (DELETE
// /v1/sessions/{id}).
func (c *Client) DeleteSession(ctx context.Context, sessionID string) error {
	if sessionID == "" {
		return trove.Errorf(trove.ENOTFOUND, "session \"\" not found")
	}
	_, err := c.do(ctx, http.MethodDelete, "/v1/sessions/"+url.PathEscape(sessionID), nil, nil, &struct{}{})
	return err
}

// FollowEvents calls fn with each event of the session's transcript after
// Seq after (after < 0: after the events stored when it starts), in Seq
// order, each exactly once (Seq set), reading the server-sent event stream
// and reconnecting with Last-Event-ID when it drops. It returns nil when
// the stream ends because the session ended (every event delivered), fn's
// error, ctx's error, or an error that reconnecting cannot change.
func (c *Client) FollowEvents(ctx context.Context, sessionID string, after int64, fn func(trove.SessionEvent) error) error {
	hc := *c.http
	hc.Timeout = 0
	backoff := 100 * time.Millisecond
	for {
		ended, err := c.followEventsOnce(ctx, &hc, sessionID, &after, fn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var fe *fnError
		if errors.As(err, &fe) {
			return fe.err
		}
		if ended && err == nil {
			return nil
		}
		switch trove.ErrorCode(err) {
		case trove.ENOTFOUND, trove.EUNAUTHENTICATED, trove.EFORBIDDEN, trove.EINVALID:
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// followEventsOnce reads one stream; ended reports a stream the server
// closed normally (the session ended).
func (c *Client) followEventsOnce(ctx context.Context, hc *http.Client, sessionID string, after *int64, fn func(trove.SessionEvent) error) (ended bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	path := "/v1/sessions/" + url.PathEscape(sessionID) + "/events/stream"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return false, trove.Errorf(trove.EINVALID, "building the request: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("anthropic-beta", BetaManagedAgents)
	if *after >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(*after, 10))
	}
	if c.workspace != "" {
		req.Header.Set("anthropic-workspace-id", c.workspace)
	}
	res, err := hc.Do(req)
	if err != nil {
		return false, &trove.Error{Code: trove.EUNAVAILABLE, Message: "the Trove server could not be reached", Err: err}
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return false, fromEnvelope(res.StatusCode, data, &httpStatusError{method: http.MethodGet, path: path, status: res.StatusCode, statusText: res.Status})
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var id, event string
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		if line != "" {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				id = value
			case "event":
				event = value
			case "data":
				data = append(data, value...)
			}
			continue
		}
		switch {
		case event == "" && id != "" && *after < 0:
			// The stream's starting position.
			if seq, err := strconv.ParseInt(id, 10, 64); err == nil {
				*after = seq
			}
		case event == "error":
			return false, fromEnvelope(http.StatusOK, data, errors.New("error event in the event stream"))
		case event == trove.EventSessionDeleted:
			return false, trove.Errorf(trove.ENOTFOUND, "session %s was deleted", sessionID)
		case event != "" && id != "":
			seq, perr := strconv.ParseInt(id, 10, 64)
			if perr != nil {
				return true, trove.Errorf(trove.EINTERNAL, "the server sent an event id that is not a sequence number: %q", id)
			}
			if seq > *after {
				var m map[string]json.RawMessage
				if err := json.Unmarshal(data, &m); err != nil {
					return true, &trove.Error{Code: trove.EINTERNAL, Message: "the server sent an event that is not valid JSON", Err: err}
				}
				e := eventsFromWire(sessionID, []map[string]json.RawMessage{m})[0]
				e.Seq = seq
				if err := fn(e); err != nil {
					return true, &fnError{err}
				}
				*after = seq
			}
		}
		id, event, data = "", "", data[:0]
	}
	if err := sc.Err(); err != nil {
		return false, &trove.Error{Code: trove.EUNAVAILABLE, Message: "the event stream broke", Err: err}
	}
	if *after < 0 {
		*after = 0
	}
	return true, nil
}
