package core

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

var _ trove.ManagedSessionService = (*Service)(nil)

// MaxSessionTitleChars bounds a session's title.
const MaxSessionTitleChars = 512

// EventHook is run inside the write transaction of every append to a
// managed session's transcript (AppendEvents, AppendAgentEvents, the
// initial events of CreateSession, the session.status_terminated of
// EndSession and ArchiveSession), after the events were inserted, with the
// session as it is after them. An error rolls the whole append back and is
// returned to the caller. The agent loop sets one (SetEventHook) to queue
// its work in the same transaction as the input that calls for it. It must
// have no side effects outside tx (the transaction may be retried).
type EventHook func(ctx context.Context, tx storage.Tx, se *trove.Session, events []trove.SessionEvent) error

// SetEventHook sets the hook run by every append to a managed session (nil
// for none). Call it before serving requests.
func (s *Service) SetEventHook(h EventHook) { s.hook = h }

func (s *Service) runHook(ctx context.Context, tx storage.Tx, se *trove.Session, evs []trove.SessionEvent) error {
	if s.hook == nil || se.Managed == nil || len(evs) == 0 {
		return nil
	}
	return s.hook(ctx, tx, se, evs)
}

// checkNewSession checks the Managed Agents part of CreateSessionParams and
// returns the metadata to store and the initial events' normalized bodies.
func (s *Service) checkNewSession(p *trove.CreateSessionParams) (map[string]string, []trove.NewSessionEvent, error) {
	if !utf8.ValidString(p.Title) {
		return nil, nil, trove.Errorf(trove.EINVALID, "title must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(p.Title); n > MaxSessionTitleChars {
		return nil, nil, trove.Errorf(trove.EINVALID, "title must be at most %d characters, got %d", MaxSessionTitleChars, n)
	}
	md := maps.Clone(p.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	if err := s.validateMetadata(md); err != nil {
		return nil, nil, err
	}
	if p.Agent == nil {
		switch {
		case p.EnvironmentID != "":
			return nil, nil, trove.Errorf(trove.EINVALID, "environment_id needs an agent: a session without an agent runs in no environment")
		case len(p.InitialEvents) > 0:
			return nil, nil, trove.Errorf(trove.EINVALID, "initial_events needs an agent: nothing would answer them")
		case p.Budget != nil:
			return nil, nil, trove.Errorf(trove.EINVALID, "budget needs an agent")
		}
		return md, nil, nil
	}
	if p.Agent.ID == "" {
		return nil, nil, trove.Errorf(trove.EINVALID, "agent must name an agent ID")
	}
	if p.Agent.Version < 0 {
		return nil, nil, trove.Errorf(trove.EINVALID, "agent.version must be >= 1, got %d", p.Agent.Version)
	}
	if p.EnvironmentID == "" {
		return nil, nil, trove.Errorf(trove.EINVALID, "environment_id is required with an agent")
	}
	if b := p.Budget; b != nil {
		if b.Currency != "USD" {
			return nil, nil, trove.Errorf(trove.EINVALID, "budget.max_list_cost.currency must be \"USD\", got %q", b.Currency)
		}
		if !isDecimalInteger(b.Amount) {
			return nil, nil, trove.Errorf(trove.EINVALID, "budget.max_list_cost.amount must be a non-negative integer in decimal, got %q", b.Amount)
		}
	}
	if len(p.InitialEvents) > s.limits.MaxEventsPerAppend {
		return nil, nil, trove.Errorf(trove.EINVALID, "at most %d initial events are allowed, got %d", s.limits.MaxEventsPerAppend, len(p.InitialEvents))
	}
	initial := make([]trove.NewSessionEvent, len(p.InitialEvents))
	for i, e := range p.InitialEvents {
		if e.Type != trove.EventUserMessage {
			return nil, nil, trove.Errorf(trove.EINVALID, "initial_events[%d].type %q is not supported: a session starts with user.message events only", i, e.Type)
		}
		b, err := s.eventBody(e.Body)
		if err != nil {
			return nil, nil, trove.Errorf(trove.EINVALID, "initial_events[%d]: %s", i, trove.ErrorMessage(err))
		}
		if err := checkUserMessage(b); err != nil {
			return nil, nil, trove.Errorf(trove.EINVALID, "initial_events[%d]: %s", i, trove.ErrorMessage(err))
		}
		initial[i] = trove.NewSessionEvent{Type: e.Type, Body: b}
	}
	return md, initial, nil
}

func isDecimalInteger(v string) bool {
	if v == "" || len(v) > 30 || (len(v) > 1 && v[0] == '0') {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// newEvents numbers events after seq n, attributed to by at now.
func (s *Service) newEvents(sessionID string, n int, by trove.Actor, now time.Time, events []trove.NewSessionEvent) []trove.SessionEvent {
	out := make([]trove.SessionEvent, len(events))
	for i, e := range events {
		out[i] = trove.SessionEvent{
			ID:          trove.NewID(trove.PrefixEvent, now),
			SessionID:   sessionID,
			Seq:         int64(n + i + 1),
			Type:        e.Type,
			Body:        e.Body,
			CreatedBy:   by,
			ProcessedAt: now,
		}
	}
	return out
}

// UpdateSession changes a session's title and metadata (see
// trove.ManagedSessionService). Resources cannot be changed: a session's
// stores are attached at creation only.
func (s *Service) UpdateSession(ctx context.Context, sessionID string, p trove.UpdateSessionParams) (*trove.Session, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "update sessions"); err != nil {
		return nil, err
	}
	if p.Title != nil {
		if !utf8.ValidString(*p.Title) {
			return nil, trove.Errorf(trove.EINVALID, "title must be valid UTF-8")
		}
		if n := utf8.RuneCountInString(*p.Title); n > MaxSessionTitleChars {
			return nil, trove.Errorf(trove.EINVALID, "title must be at most %d characters, got %d", MaxSessionTitleChars, n)
		}
	}
	var out *trove.Session
	err = s.write(ctx, "UpdateSession", func(tx storage.Tx) error {
		se, err := tx.SessionLock(ctx, pr.WorkspaceID, sessionID)
		if err != nil {
			return err
		}
		if se.ArchivedAt != nil {
			return trove.Errorf(trove.EINVALID, "session %s is archived; archived sessions cannot be updated", sessionID)
		}
		changed := false
		if p.Title != nil && *p.Title != se.Title {
			se.Title, changed = *p.Title, true
		}
		if len(p.Metadata) > 0 {
			md := maps.Clone(se.Metadata)
			if md == nil {
				md = map[string]string{}
			}
			for k, v := range p.Metadata {
				if v == nil {
					delete(md, k)
				} else {
					md[k] = *v
				}
			}
			if err := s.validateMetadata(md); err != nil {
				return err
			}
			if !maps.Equal(md, se.Metadata) {
				se.Metadata, changed = md, true
			}
		}
		if changed {
			se.UpdatedAt = s.now()
			if err := tx.SessionUpdate(ctx, se); err != nil {
				return err
			}
			// A title or metadata change: not visible to emitTx in the row.
			if et, ok := tx.(*emitTx); ok {
				if err := et.emit(ctx, se.WorkspaceID, trove.HookSessionUpdated, se.ID, nil); err != nil {
					return err
				}
			}
		}
		out = se
		return s.fillAgents(ctx, tx, []trove.Session{*se})
	})
	if err != nil {
		return nil, err
	}
	return cloneSession(out), nil
}

// ArchiveSession ends the session (its credential dies; a managed session
// is terminated: status terminated and a session.status_terminated event)
// and marks it archived, in one transaction. Idempotent. ECONFLICT while a
// managed session is running (interrupt it first); EFORBIDDEN for a
// session credential; ENOTFOUND for an unknown session.
func (s *Service) ArchiveSession(ctx context.Context, sessionID string) (*trove.Session, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "archive sessions"); err != nil {
		return nil, err
	}
	defer s.authc.dropSession(sessionID)
	var out *trove.Session
	err = s.write(ctx, "ArchiveSession", func(tx storage.Tx) error {
		se, err := tx.SessionLock(ctx, pr.WorkspaceID, sessionID)
		if err != nil {
			return err
		}
		if se.ArchivedAt == nil {
			if se.Status == trove.SessionRunning || se.Status == trove.SessionRescheduling {
				return trove.Errorf(trove.ECONFLICT, "session %s is %s; send user.interrupt and archive it once it is idle", sessionID, se.Status)
			}
			if err := s.terminate(ctx, tx, se, pr.Actor, true); err != nil {
				return err
			}
		}
		out = se
		return s.fillAgents(ctx, tx, []trove.Session{*se})
	})
	s.events.notify(sessionID)
	if err != nil {
		return nil, err
	}
	return cloneSession(out), nil
}

// terminate ends se in tx (ended_at, status terminated, the running time
// added) and, for a managed session not terminated yet, appends
// session.status_terminated. archive also sets ArchivedAt. se is updated
// in place.
func (s *Service) terminate(ctx context.Context, tx storage.Tx, se *trove.Session, by trove.Actor, archive bool) error {
	now := s.now()
	changed := false
	if se.EndedAt == nil {
		se.EndedAt = &now
		changed = true
	}
	if se.Status != trove.SessionTerminated {
		if se.Managed != nil {
			n, _, err := tx.EventStats(ctx, se.ID)
			if err != nil {
				return err
			}
			evs := s.newEvents(se.ID, n, trove.Actor{Type: trove.ActorSession, SessionID: se.ID}, now,
				[]trove.NewSessionEvent{{Type: trove.EventSessionStatusTerminated, Body: "{}"}})
			if err := tx.EventInsert(ctx, evs); err != nil {
				return err
			}
			setStatus(se, trove.SessionTerminated, now)
			if err := s.runHook(ctx, tx, se, evs); err != nil {
				return err
			}
		}
		se.Status = trove.SessionTerminated
		changed = true
	}
	if archive && se.ArchivedAt == nil {
		se.ArchivedAt = &now
		changed = true
	}
	if !changed {
		return nil
	}
	se.UpdatedAt = now
	if err := tx.SessionUpdate(ctx, se); err != nil {
		return err
	}
	if se.Managed != nil {
		return s.StopSessionWorkTx(ctx, tx, se.ID)
	}
	return nil
}

// setStatus moves se to status at now, keeping the managed part's running
// time: entering running starts the clock, leaving running (but for
// rescheduling, the same turn) stops it and adds the turn's time.
func setStatus(se *trove.Session, status trove.SessionStatus, now time.Time) {
	if m := se.Managed; m != nil {
		switch status {
		case trove.SessionRunning:
			if m.RunningSince == nil {
				t := now
				m.RunningSince = &t
			}
		case trove.SessionRescheduling:
		default:
			if m.RunningSince != nil {
				m.ActiveSeconds += now.Sub(*m.RunningSince).Seconds()
				m.RunningSince = nil
			}
		}
	}
	se.Status = status
	se.UpdatedAt = now
}

// DeleteSession deletes a session and its transcript (see
// trove.ManagedSessionService). Open event streams end with
// session.deleted. ECONFLICT while a managed session is running;
// EFORBIDDEN for a session credential; ENOTFOUND for an unknown session.
func (s *Service) DeleteSession(ctx context.Context, sessionID string) error {
	pr, err := principal(ctx)
	if err != nil {
		return err
	}
	if err := notSession(pr, "delete sessions"); err != nil {
		return err
	}
	defer s.authc.dropSession(sessionID)
	err = s.write(ctx, "DeleteSession", func(tx storage.Tx) error {
		se, err := tx.SessionLock(ctx, pr.WorkspaceID, sessionID)
		if err != nil {
			return err
		}
		if se.Status == trove.SessionRunning || se.Status == trove.SessionRescheduling {
			return trove.Errorf(trove.ECONFLICT, "session %s is %s; send user.interrupt and delete it once it is idle", sessionID, se.Status)
		}
		if se.Managed != nil {
			if err := s.StopSessionWorkTx(ctx, tx, sessionID); err != nil {
				return err
			}
		}
		return tx.SessionDelete(ctx, sessionID)
	})
	s.events.notify(sessionID)
	return err
}

// eventRefs is what core reads of a sent event's body: the tool use it
// answers and, for a confirmation, the verdict.
type eventRefs struct {
	ToolUseID       *string `json:"tool_use_id"`
	CustomToolUseID *string `json:"custom_tool_use_id"`
	Result          *string `json:"result"`
}

// checkUserMessage checks a user.message body: a non-empty content array
// of content blocks (objects with a type).
func checkUserMessage(body string) error {
	var m struct {
		Content []map[string]json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return trove.Errorf(trove.EINVALID, "content must be an array of content blocks")
	}
	if len(m.Content) == 0 {
		return trove.Errorf(trove.EINVALID, "content must hold at least one content block")
	}
	for i, b := range m.Content {
		var ty string
		if err := json.Unmarshal(b["type"], &ty); err != nil || ty == "" {
			return trove.Errorf(trove.EINVALID, "content[%d].type is required", i)
		}
	}
	return nil
}

// checkSend checks events a client sends to managed session se against its
// state and returns each event's RefID. seen holds the tool uses answered
// earlier in the same batch.
func (s *Service) checkSend(ctx context.Context, tx storage.Tx, se *trove.Session, events []trove.NewSessionEvent, bodies []string) ([]string, error) {
	if se.EndedAt != nil || se.Status == trove.SessionTerminated {
		return nil, trove.Errorf(trove.EINVALID, "session %s is terminated; it takes no more events", se.ID)
	}
	refs := make([]string, len(events))
	answered := map[string]bool{}
	for i, e := range events {
		var r eventRefs
		if e.Type != trove.EventUserMessage && e.Type != trove.EventUserInterrupt {
			if err := json.Unmarshal([]byte(bodies[i]), &r); err != nil {
				return nil, trove.Errorf(trove.EINVALID, "events[%d] must be a JSON object", i)
			}
		}
		var ref, field string
		var wantTypes []string
		switch e.Type {
		case trove.EventUserMessage:
			if err := checkUserMessage(bodies[i]); err != nil {
				return nil, trove.Errorf(trove.EINVALID, "events[%d]: %s", i, trove.ErrorMessage(err))
			}
			continue
		case trove.EventUserInterrupt:
			continue
		case trove.EventUserToolResult:
			field, wantTypes = "tool_use_id", []string{trove.EventAgentToolUse}
			if r.ToolUseID != nil {
				ref = *r.ToolUseID
			}
		case trove.EventUserCustomToolResult:
			field, wantTypes = "custom_tool_use_id", []string{trove.EventAgentCustomToolUse}
			if r.CustomToolUseID != nil {
				ref = *r.CustomToolUseID
			}
		case trove.EventUserToolConfirmation:
			field, wantTypes = "tool_use_id", []string{trove.EventAgentToolUse, trove.EventAgentCustomToolUse}
			if r.ToolUseID != nil {
				ref = *r.ToolUseID
			}
			if r.Result == nil || (*r.Result != "allow" && *r.Result != "deny") {
				return nil, trove.Errorf(trove.EINVALID, "events[%d].result must be \"allow\" or \"deny\"", i)
			}
		}
		if ref == "" {
			return nil, trove.Errorf(trove.EINVALID, "events[%d].%s is required", i, field)
		}
		use, err := tx.EventGet(ctx, se.ID, ref)
		if trove.ErrorCode(err) == trove.ENOTFOUND || (err == nil && !slices.Contains(wantTypes, use.Type)) {
			return nil, trove.Errorf(trove.EINVALID, "events[%d].%s %q names no %s event of session %s", i, field, ref, strings.Join(wantTypes, " or "), se.ID)
		}
		if err != nil {
			return nil, err
		}
		prior, err := tx.EventListByRef(ctx, se.ID, ref)
		if err != nil {
			return nil, err
		}
		confirming := e.Type == trove.EventUserToolConfirmation
		if confirming {
			var u struct {
				EvaluatedPermission string `json:"evaluated_permission"`
			}
			_ = json.Unmarshal([]byte(use.Body), &u)
			if u.EvaluatedPermission != "ask" {
				return nil, trove.Errorf(trove.EINVALID, "events[%d]: tool use %s does not wait for a confirmation (its evaluated_permission is %q, not \"ask\")", i, ref, u.EvaluatedPermission)
			}
		}
		for _, p := range prior {
			switch {
			case confirming && p.Type == trove.EventUserToolConfirmation:
				return nil, trove.Errorf(trove.ECONFLICT, "events[%d]: tool use %s was already confirmed or denied", i, ref)
			case !confirming && (p.Type == trove.EventUserToolResult || p.Type == trove.EventUserCustomToolResult):
				return nil, trove.Errorf(trove.ECONFLICT, "events[%d]: tool use %s already has a result", i, ref)
			}
		}
		key := "result " + ref
		if confirming {
			key = "confirm " + ref
		}
		if answered[key] {
			return nil, trove.Errorf(trove.EINVALID, "events[%d]: tool use %s is answered twice in this request", i, ref)
		}
		answered[key] = true
		refs[i] = ref
	}
	return refs, nil
}

// AgentEventsOptions are options of AppendAgentEvents.
type AgentEventsOptions struct {
	// Guard, when set, runs first in the append's transaction with the
	// session locked; an error aborts the append and is returned as is.
	// The agent loop checks its lease there, so a runner that lost its
	// session appends nothing.
	Guard func(ctx context.Context, tx storage.Tx, se *trove.Session) error
}

// AppendAgentEvents appends server-produced events (trove.AgentEventTypes)
// to a managed session's transcript in one transaction and returns them as
// stored: the agent loop's output. It needs no principal (an operator
// function, like ClaimDream): the events are attributed to the session's
// own actor. Bodies are checked like AppendEvents' (JSON objects within
// MaxEventBytes, the transcript limits); RefID is set from a result's
// tool_use_id.
//
// The session's status and usage follow the events, in the same
// transaction: session.status_running → running, session.status_idle →
// idle, session.status_rescheduled → rescheduling,
// session.status_terminated → terminated (the session ends and its
// credential dies); span.model_request_end's model_usage is added to the
// usage.
//
// EINVALID for a type that is not an agent event, an agent-less or
// terminated session, a bad body; ENOTFOUND for an unknown session.
func (s *Service) AppendAgentEvents(ctx context.Context, sessionID string, events []trove.NewSessionEvent, o AgentEventsOptions) ([]trove.SessionEvent, error) {
	if len(events) == 0 {
		return nil, trove.Errorf(trove.EINVALID, "events must hold at least one event")
	}
	bodies := make([]string, len(events))
	var total int64
	for i, e := range events {
		if !slices.Contains(trove.AgentEventTypes, e.Type) {
			return nil, trove.Errorf(trove.EINVALID, "events[%d].type %q is not an agent event type", i, e.Type)
		}
		b, err := s.eventBody(e.Body)
		if err != nil {
			return nil, trove.Errorf(trove.EINVALID, "events[%d]: %s", i, trove.ErrorMessage(err))
		}
		bodies[i] = b
		total += int64(len(b))
	}
	terminated := false
	var out []trove.SessionEvent
	err := s.write(ctx, "AppendAgentEvents", func(tx storage.Tx) error {
		se, err := s.sessionByID(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if se.Managed == nil {
			return trove.Errorf(trove.EINVALID, "session %s has no agent; agent events belong to managed sessions", sessionID)
		}
		if o.Guard != nil {
			if err := o.Guard(ctx, tx, se); err != nil {
				return err
			}
		}
		if se.EndedAt != nil || se.Status == trove.SessionTerminated {
			return trove.Errorf(trove.EINVALID, "session %s is terminated; it takes no more events", sessionID)
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
		out = s.newEvents(sessionID, n, trove.Actor{Type: trove.ActorSession, SessionID: sessionID}, now, nes)
		changed := false
		for i := range out {
			e := &out[i]
			switch e.Type {
			case trove.EventAgentToolResult:
				var r eventRefs
				if json.Unmarshal([]byte(e.Body), &r) == nil && r.ToolUseID != nil {
					e.RefID = *r.ToolUseID
				}
			case trove.EventSessionStatusRunning:
				setStatus(se, trove.SessionRunning, now)
				changed = true
			case trove.EventSessionStatusIdle:
				setStatus(se, trove.SessionIdle, now)
				changed = true
			case trove.EventSessionStatusRescheduled:
				setStatus(se, trove.SessionRescheduling, now)
				changed = true
			case trove.EventSessionStatusTerminated:
				setStatus(se, trove.SessionTerminated, now)
				t := now
				se.EndedAt = &t
				terminated, changed = true, true
			case trove.EventSpanModelRequestEnd:
				var u struct {
					ModelUsage struct {
						InputTokens              int64 `json:"input_tokens"`
						OutputTokens             int64 `json:"output_tokens"`
						CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
						CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
					} `json:"model_usage"`
				}
				if json.Unmarshal([]byte(e.Body), &u) == nil {
					mu := &se.Managed.Usage
					mu.InputTokens += max(0, u.ModelUsage.InputTokens)
					mu.OutputTokens += max(0, u.ModelUsage.OutputTokens)
					mu.CacheCreationInputTokens += max(0, u.ModelUsage.CacheCreationInputTokens)
					mu.CacheReadInputTokens += max(0, u.ModelUsage.CacheReadInputTokens)
					se.UpdatedAt = now
					changed = true
				}
			}
		}
		if err := tx.EventInsert(ctx, out); err != nil {
			return err
		}
		if changed {
			if err := tx.SessionUpdate(ctx, se); err != nil {
				return err
			}
		}
		if terminated {
			if err := s.StopSessionWorkTx(ctx, tx, sessionID); err != nil {
				return err
			}
		}
		return s.runHook(ctx, tx, se, out)
	})
	if terminated {
		s.authc.dropSession(sessionID)
	}
	if err != nil {
		return nil, err
	}
	s.events.notify(sessionID)
	return out, nil
}

// sessionByID locks a session by ID whatever its workspace (for operator
// functions without a principal).
func (s *Service) sessionByID(ctx context.Context, tx storage.Tx, sessionID string) (*trove.Session, error) {
	ws, err := s.sessionWorkspace(ctx, tx, sessionID)
	if err != nil {
		return nil, err
	}
	return tx.SessionLock(ctx, ws, sessionID)
}

// checkTranscript locks the transcript and checks that adding count events
// of total bytes stays within the limits; it returns the current count.
func (s *Service) checkTranscript(ctx context.Context, tx storage.Tx, sessionID string, count int, total int64) (int, error) {
	n, bytes, err := tx.EventStats(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	if n+count > s.limits.MaxSessionEvents {
		return 0, trove.Errorf(trove.EINVALID, "a session's transcript holds at most %d events; it has %d and %d more were sent", s.limits.MaxSessionEvents, n, count)
	}
	if bytes+total > s.limits.MaxSessionEventBytes {
		return 0, trove.Errorf(trove.EINVALID, "a session's transcript holds at most %d bytes; it has %d and %d more were sent", s.limits.MaxSessionEventBytes, bytes, total)
	}
	return n, nil
}
