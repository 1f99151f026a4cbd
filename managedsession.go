package trove

import (
	"context"
	"time"
)

// SessionStatus is a session's status, as the Managed Agents API defines
// it.
type SessionStatus string

const (
	// SessionIdle: waiting for input (a new session, a turn that ended, a
	// turn waiting for tool results or confirmations).
	SessionIdle SessionStatus = "idle"
	// SessionRunning: the agent loop is working on a turn.
	SessionRunning SessionStatus = "running"
	// SessionRescheduling: the turn's runner was lost and the turn is being
	// taken over by another (the loop's lease expired).
	SessionRescheduling SessionStatus = "rescheduling"
	// SessionTerminated: the session has ended (EndSession, archive); it
	// takes no more input and its credential is dead.
	SessionTerminated SessionStatus = "terminated"
)

// SessionStatuses lists every SessionStatus.
var SessionStatuses = []SessionStatus{SessionIdle, SessionRunning, SessionRescheduling, SessionTerminated}

// ManagedSession is what a managed session (one Trove's agent loop runs)
// adds to a Session.
type ManagedSession struct {
	// AgentID and AgentVersion pin the agent version the session runs:
	// an agent reference is resolved to its version at creation, and a
	// later version of the agent does not change the session.
	AgentID      string
	AgentVersion int64
	// Agent is that agent version, filled by core's reads when it still
	// exists; nil otherwise.
	Agent         *Agent
	EnvironmentID string
	Usage         SessionUsage
	// ActiveSeconds is the time spent running, summed over every turn
	// that ended (the running turn is added by readers through
	// RunningSince).
	ActiveSeconds float64
	// RunningSince is when the current turn started running; nil unless
	// Status is SessionRunning.
	RunningSince *time.Time
	Budget       *SessionBudget
}

// SessionUsage is a managed session's cumulative token usage, summed from
// the model_usage of its span.model_request_end events.
type SessionUsage struct {
	InputTokens              int64
	OutputTokens             int64
	CacheReadInputTokens     int64
	CacheCreationInputTokens int64 // reported as cache_creation.ephemeral_5m_input_tokens
}

// SessionBudget is a managed session's spending limit: max_list_cost in
// Currency ("USD"); Amount is a decimal string of a non-negative integer,
// as the API's BetaMonetaryAmount. Trove stores and returns it; the agent
// loop enforces it.
type SessionBudget struct {
	Currency string
	Amount   string
}

// AgentRef names the agent a managed session runs: by ID (Version 0: the
// agent's latest version at creation) or by ID and version.
type AgentRef struct {
	ID      string
	Version int64
}

// UpdateSessionParams updates a session. Nil fields are unchanged; a
// non-nil Title of "" clears it. Metadata is a merge patch: a key mapped to
// nil is removed, a key mapped to a value is set.
type UpdateSessionParams struct {
	Title    *string
	Metadata map[string]*string
}

// ManagedSessionService holds the session operations of the Managed
// Agents API beyond SessionService. Session credentials cannot call them.
type ManagedSessionService interface {
	// UpdateSession changes a session's title and metadata. EINVALID for
	// bad metadata or an archived session; ENOTFOUND for an unknown one.
	UpdateSession(ctx context.Context, sessionID string, p UpdateSessionParams) (*Session, error)
	// ArchiveSession ends the session (as EndSession; a managed session
	// appends session.status_terminated) and sets ArchivedAt. Idempotent.
	// ECONFLICT while a managed session is running.
	ArchiveSession(ctx context.Context, sessionID string) (*Session, error)
	// DeleteSession deletes the session and its transcript (the versions
	// it wrote stay, attributed to its ID). ECONFLICT while a managed
	// session is running.
	DeleteSession(ctx context.Context, sessionID string) error
}

// EventWaiter lets a reader follow a transcript live.
type EventWaiter interface {
	// WaitEvents blocks until the session's transcript holds an event with
	// Seq > after, and returns the newest Seq. It also returns (with the
	// newest Seq, possibly <= after) when the session ends. ctx's own error
	// when ctx ends first; ENOTFOUND when the session is unknown or
	// deleted; EFORBIDDEN for another session's credential.
	WaitEvents(ctx context.Context, sessionID string, after int64) (int64, error)
}
