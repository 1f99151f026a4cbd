package trove

import (
	"context"
	"time"
)

// Session event types a transcript accepts: the Managed Agents session
// event shapes for messages, tool uses and tool results, so a transcript can
// be served by a later /v1/sessions without conversion.
const (
	EventUserMessage          = "user.message"
	EventAgentMessage         = "agent.message"
	EventAgentThinking        = "agent.thinking"
	EventAgentToolUse         = "agent.tool_use"
	EventAgentToolResult      = "agent.tool_result"
	EventAgentCustomToolUse   = "agent.custom_tool_use"
	EventUserCustomToolResult = "user.custom_tool_result"
)

// EventTypes lists the accepted session event types.
var EventTypes = []string{
	EventUserMessage, EventAgentMessage, EventAgentThinking, EventAgentToolUse,
	EventAgentToolResult, EventAgentCustomToolUse, EventUserCustomToolResult,
}

// SessionEvent is one entry of a session's transcript (its event log).
// Events are immutable once appended.
type SessionEvent struct {
	ID        string // sevt_…
	SessionID string
	Seq       int64  // 1, 2, 3… in append order within the session
	Type      string // one of EventTypes
	// Body is the event as a JSON object, in the Managed Agents event
	// shape, without its "id", "type" and "processed_at" members (the
	// server sets those).
	Body        string
	CreatedBy   Actor
	ProcessedAt time.Time
	// RefID is the event ID of the tool use a result or confirmation
	// answers (tool_use_id, custom_tool_use_id), set by core; "" for other
	// events.
	RefID string
}

// NewSessionEvent is one event to append: its type and its other members
// as a JSON object ("{}" or "" for none). "id" and "processed_at" members
// are ignored; the server assigns them.
type NewSessionEvent struct {
	Type string
	Body string
}

// MaxEventPageBytes bounds one page of a transcript (EventService.ListEvents):
// a page ends before the event that would take its events' bodies past it,
// with a next page, so that a page of large events is a few of them, not
// Limit of them; a page holds at least one event (one event is at most
// Limits.MaxEventBytes).
const MaxEventPageBytes = 1 << 20

// ListEventsParams pages a transcript in append order (oldest first).
type ListEventsParams struct {
	Limit  int // 0 means the default (20); a page also ends at MaxEventPageBytes
	Cursor string

	// AfterSeq, with no Cursor, starts an oldest-first listing after this
	// Seq (a live reader's own cursor).
	AfterSeq      int64
	Order         string    // "" or "asc": oldest first; "desc": newest first
	Types         []string  // only these event types; empty: any
	CreatedAt     TimeRange // inclusive bounds on processed_at
	CreatedAfter  *time.Time
	CreatedBefore *time.Time // exclusive bounds on processed_at
}

// EventService keeps session transcripts.
type EventService interface {
	// AppendEvents appends events to a session's transcript, all or none,
	// and returns them as stored. A session credential may append to its
	// own session only (EFORBIDDEN otherwise); a workspace API key to any
	// session of its workspace that has not ended. EINVALID for an unknown
	// type, a body that is not a JSON object, an event over
	// Limits.MaxEventBytes, more than Limits.MaxEventsPerAppend events, an
	// ended session, or a transcript that would exceed
	// Limits.MaxSessionEvents or Limits.MaxSessionEventBytes; ENOTFOUND
	// for an unknown session.
	AppendEvents(ctx context.Context, sessionID string, events []NewSessionEvent) ([]SessionEvent, error)
	// ListEvents pages a session's transcript oldest first. A session
	// credential may read its own session only.
	ListEvents(ctx context.Context, sessionID string, p ListEventsParams) (*Page[SessionEvent], error)
}

// Managed Agents event types beyond EventTypes: what a client sends to a
// managed session and what the agent loop appends.
const (
	EventUserInterrupt        = "user.interrupt"
	EventUserToolConfirmation = "user.tool_confirmation"
	EventUserToolResult       = "user.tool_result"
	EventUserDefineOutcome    = "user.define_outcome"
	EventSystemMessage        = "system.message"

	EventSessionStatusRunning     = "session.status_running"
	EventSessionStatusIdle        = "session.status_idle"
	EventSessionStatusRescheduled = "session.status_rescheduled"
	EventSessionStatusTerminated  = "session.status_terminated"
	EventSessionError             = "session.error"
	EventSessionDeleted           = "session.deleted"
	EventSessionUpdated           = "session.updated"
	EventSessionUsage             = "session.usage"
	EventSpanModelRequestStart    = "span.model_request_start"
	EventSpanModelRequestEnd      = "span.model_request_end"
)

// SendEventTypes are the events a client may send to a managed session
// (POST /v1/sessions/{id}/events): the SDK's send union minus what the
// agent loop cannot honour (user.define_outcome, system.message are
// refused by name).
var SendEventTypes = []string{
	EventUserMessage, EventUserInterrupt, EventUserToolConfirmation,
	EventUserCustomToolResult, EventUserToolResult,
}

// AgentEventTypes are the events only the agent loop appends to a managed
// session (core's AppendAgentEvents), never a client.
var AgentEventTypes = []string{
	EventAgentMessage, EventAgentThinking, EventAgentToolUse, EventAgentToolResult,
	EventAgentCustomToolUse,
	EventSessionStatusRunning, EventSessionStatusIdle, EventSessionStatusRescheduled,
	EventSessionStatusTerminated, EventSessionError, EventSessionUpdated, EventSessionUsage,
	EventSpanModelRequestStart, EventSpanModelRequestEnd,
}
