package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/follow"
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
// and reconnecting with Last-Event-ID when it drops, after a pause that
// grows from 100 ms to 5 s while reconnecting fails. A stream the server
// closes normally ends the follow only when the session has ended: the
// server also closes its streams when it shuts down (a restart), and
// FollowEvents then reconnects as after a drop. It returns nil once the
// session has ended and every event was delivered, fn's error (as is),
// ctx's error, ENOTFOUND when the session is not there or gets deleted,
// or another error that reconnecting cannot change (EUNAUTHENTICATED,
// EFORBIDDEN, EINVALID), be it the answer or the error event the stream
// ends with (a revoked key's). The loop is internal/follow's; eventsOnce
// is one connection.
func (c *Client) FollowEvents(ctx context.Context, sessionID string, after int64, fn func(trove.SessionEvent) error) error {
	hc := *c.http
	hc.Timeout = 0 // a stream lasts as long as the session; ctx bounds it
	return follow.Run(ctx, after, func(ctx context.Context, f *follow.Feed[trove.SessionEvent]) error {
		return c.eventsOnce(ctx, &hc, sessionID, f)
	}, fn, nil)
}

// eventsOnce reads one stream of the session's events after f.After()
// (below 0: from where the stream starts, which its first, id-only
// message tells) until it ends, handing each event to f.Deliver. A stream
// the server closed normally (see streamEvents) is follow.ErrEnded when it
// carried session.status_terminated (nothing comes after it, and a stream
// closes only once it sent everything it read); else ended decides: the
// session may have ended with no such event on this stream, or the server
// closed it at its shutdown (EUNAVAILABLE, and the loop reconnects).
func (c *Client) eventsOnce(ctx context.Context, hc *http.Client, sessionID string, f *follow.Feed[trove.SessionEvent]) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	path := "/v1/sessions/" + url.PathEscape(sessionID) + "/events/stream"
	lastID := ""
	if f.After() >= 0 {
		lastID = strconv.FormatInt(f.After(), 10)
	}
	req, err := c.streamRequest(ctx, path, lastID, BetaManagedAgents)
	if err != nil {
		return err
	}
	res, err := hc.Do(req)
	if err != nil {
		return &trove.Error{Code: trove.EUNAVAILABLE, Message: "the Trove server could not be reached", Err: err}
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return fromEnvelope(res.StatusCode, data, &httpStatusError{method: http.MethodGet, path: path, status: res.StatusCode, statusText: res.Status})
	}
	f.Live()
	terminated := false // the stream carried session.status_terminated
	err = readSSE(res.Body, 4<<20, func(e *sseEvent) error {
		switch {
		case e.event == "" && e.id != "" && f.After() < 0:
			// The stream's starting position.
			if seq, err := strconv.ParseInt(e.id, 10, 64); err == nil {
				f.Advance(seq)
			}
		case e.event == "error":
			return fromEnvelope(http.StatusOK, e.data, errors.New("error event in the event stream"))
		case e.event == trove.EventSessionDeleted:
			return trove.Errorf(trove.ENOTFOUND, "session %s was deleted", sessionID)
		case e.event != "" && e.id != "":
			seq, perr := strconv.ParseInt(e.id, 10, 64)
			if perr != nil {
				return trove.Errorf(trove.EINTERNAL, "the server sent an event id that is not a sequence number: %q", e.id)
			}
			if e.event == trove.EventSessionStatusTerminated {
				terminated = true // even one delivered before, not delivered again
			}
			if seq > f.After() { // what was delivered is not even decoded
				var m map[string]json.RawMessage
				if err := json.Unmarshal(e.data, &m); err != nil {
					return &trove.Error{Code: trove.EINTERNAL, Message: "the server sent an event that is not valid JSON", Err: err}
				}
				ev := eventsFromWire(sessionID, []map[string]json.RawMessage{m})[0]
				ev.Seq = seq
				return f.Deliver(seq, ev)
			}
		}
		return nil
	})
	if errors.Is(err, errStreamRead) {
		return &trove.Error{Code: trove.EUNAVAILABLE, Message: "the event stream broke", Err: err}
	} else if err != nil {
		return err
	}
	if terminated {
		return follow.ErrEnded
	}
	return c.ended(ctx, sessionID, f.After())
}

// ended tells why the server closed a session's event stream normally
// without session.status_terminated on it: follow.ErrEnded when the
// session has ended (an agent-less session's end appends no event, and a
// stream opened after a managed session's end may start past it) and
// holds no event after Seq after (below 0: none is owed); else a
// retryable EUNAVAILABLE, so that the loop reconnects after after: the
// server closed the stream at its shutdown, or the session ended after
// that with events the stream did not carry. GetSession's own error
// passes through (ENOTFOUND: the session is gone).
func (c *Client) ended(ctx context.Context, sessionID string, after int64) error {
	se, err := c.GetSession(ctx, sessionID)
	if err != nil {
		return err
	}
	if se.Status != trove.SessionTerminated && se.EndedAt == nil {
		return trove.Errorf(trove.EUNAVAILABLE, "the server closed the event stream while the session is %s", se.Status)
	}
	if after < 0 {
		return follow.ErrEnded
	}
	// The session has ended, so its transcript is closed: an event after
	// after now is one the stream did not carry.
	more, err := c.ListEvents(ctx, sessionID, trove.ListEventsParams{AfterSeq: after, Limit: 1})
	if err != nil {
		return err
	}
	if len(more.Data) > 0 {
		return trove.Errorf(trove.EUNAVAILABLE, "the server closed the event stream before the ended session's last events")
	}
	return follow.ErrEnded
}

// Sessions, over plain net/http.

// CreateSession attaches stores to a new session and returns it with its
// token.
func (c *Client) CreateSession(ctx context.Context, p trove.CreateSessionParams) (*trove.Session, string, error) {
	if p.Agent != nil {
		return c.createManagedSession(ctx, p)
	}
	body := wireCreateSession{Resources: make([]wireSessionResourceParam, len(p.Stores))}
	for i, a := range p.Stores {
		typ, id := "memory_store", a.StoreID
		r := wireSessionResourceParam{Type: &typ, MemoryStoreID: &id}
		if a.Access != "" {
			acc := string(a.Access)
			r.Access = &acc
		}
		if a.Instructions != "" {
			in := a.Instructions
			r.Instructions = &in
		}
		body.Resources[i] = r
	}
	var out wireSessionIn
	ws, err := c.do(ctx, http.MethodPost, "/trove/v1/sessions", nil, &body, &out)
	if err != nil {
		return nil, "", err
	}
	return out.toSession(ws), out.Token, nil
}

// GetSession returns a session of the credential's workspace.
func (c *Client) GetSession(ctx context.Context, sessionID string) (*trove.Session, error) {
	if sessionID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "session \"\" not found")
	}
	var out wireSessionIn
	ws, err := c.do(ctx, http.MethodGet, "/trove/v1/sessions/"+url.PathEscape(sessionID), nil, nil, &out)
	if err != nil {
		return nil, err
	}
	return out.toSession(ws), nil
}

// ListSessions lists sessions newest first.
func (c *Client) ListSessions(ctx context.Context, p trove.ListSessionsParams) (*trove.Page[trove.Session], error) {
	q := url.Values{}
	if p.StoreID != "" {
		q.Set("memory_store_id", p.StoreID)
	}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("page", p.Cursor)
	}
	var out struct {
		Data     []wireSessionIn `json:"data"`
		NextPage *string         `json:"next_page"`
	}
	ws, err := c.do(ctx, http.MethodGet, "/trove/v1/sessions", q, nil, &out)
	if err != nil {
		return nil, err
	}
	page := &trove.Page[trove.Session]{Data: make([]trove.Session, len(out.Data))}
	if out.NextPage != nil {
		page.NextPage = *out.NextPage
	}
	for i := range out.Data {
		page.Data[i] = *out.Data[i].toSession(ws)
	}
	return page, nil
}

// EndSession ends a session (idempotent).
func (c *Client) EndSession(ctx context.Context, sessionID string) (*trove.Session, error) {
	if sessionID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "session \"\" not found")
	}
	var out wireSessionIn
	ws, err := c.do(ctx, http.MethodPost, "/trove/v1/sessions/"+url.PathEscape(sessionID)+"/end", nil, nil, &out)
	if err != nil {
		return nil, err
	}
	return out.toSession(ws), nil
}

// wireSessionIn is a session as the client reads it.
type wireSessionIn struct {
	ID        string `json:"id"`
	Resources []struct {
		MemoryStoreID string  `json:"memory_store_id"`
		Access        string  `json:"access"`
		Name          string  `json:"name"`
		Description   string  `json:"description"`
		Instructions  *string `json:"instructions"`
		MountPath     string  `json:"mount_path"`
	} `json:"resources"`
	CreatedAt string  `json:"created_at"`
	EndedAt   *string `json:"ended_at"`
	Token     string  `json:"token"`

	Status        string            `json:"status"`
	Title         *string           `json:"title"`
	Metadata      map[string]string `json:"metadata"`
	UpdatedAt     string            `json:"updated_at"`
	ArchivedAt    *string           `json:"archived_at"`
	AgentID       string            `json:"agent_id"`
	AgentVersion  int64             `json:"agent_version"`
	EnvironmentID string            `json:"environment_id"`
}

func (w *wireSessionIn) toSession(workspaceID string) *trove.Session {
	s := &trove.Session{ID: w.ID, WorkspaceID: workspaceID, CreatedAt: parseTime(w.CreatedAt), Stores: make([]trove.SessionStore, len(w.Resources)),
		Status: trove.SessionStatus(w.Status), Metadata: w.Metadata}
	if w.EndedAt != nil {
		t := parseTime(*w.EndedAt)
		s.EndedAt = &t
	}
	if w.Title != nil {
		s.Title = *w.Title
	}
	if s.Metadata == nil {
		s.Metadata = map[string]string{}
	}
	if w.UpdatedAt != "" {
		s.UpdatedAt = parseTime(w.UpdatedAt)
	}
	if w.ArchivedAt != nil {
		t := parseTime(*w.ArchivedAt)
		s.ArchivedAt = &t
	}
	if w.AgentID != "" {
		s.Managed = &trove.ManagedSession{AgentID: w.AgentID, AgentVersion: w.AgentVersion, EnvironmentID: w.EnvironmentID}
	}
	for i, r := range w.Resources {
		s.Stores[i] = trove.SessionStore{
			StoreID: r.MemoryStoreID, Access: trove.Access(r.Access), Name: r.Name,
			Description: r.Description, MountPath: r.MountPath,
		}
		if r.Instructions != nil {
			s.Stores[i].Instructions = *r.Instructions
		}
	}
	return s
}
