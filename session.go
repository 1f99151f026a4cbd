package trove

import (
	"context"
	"time"
)

// Session is an agent session with memory stores attached at creation.
// Writes made with its credential are versions with a session actor.
//
// One table, one ID space and one token scheme serve both kinds of session:
// an agent-less session (AgentID "", created through /trove/v1/sessions for
// an agent Trove does not run) and a managed session (AgentID and
// EnvironmentID set, created through /v1/sessions, whose agent loop Trove
// runs). See managedsession.go for the managed fields' rules.
type Session struct {
	ID          string // sesn_…
	WorkspaceID string
	Stores      []SessionStore // at most Limits.MaxStoresPerSession
	CreatedBy   Actor
	CreatedAt   time.Time
	EndedAt     *time.Time // nil while active; an ended session's credential is dead

	// Managed is the Managed Agents part of the session: nil for an
	// agent-less session.
	Managed *ManagedSession
	// Title is the session's title, "" for none.
	Title string
	// Metadata is the session's key-value metadata, never nil in results.
	Metadata map[string]string
	// Status is the session's status: SessionIdle or SessionTerminated for
	// an agent-less session (terminated once ended), any SessionStatus for
	// a managed one.
	Status    SessionStatus
	UpdatedAt time.Time
	// ArchivedAt is set once archived; an archived session has ended.
	ArchivedAt *time.Time
}

// SessionStore is a store as attached to a session. Name and Description are
// snapshotted at attach time; MountPath is derived from the name's slug and is
// unique within the session.
type SessionStore struct {
	StoreID      string
	Access       Access
	Name         string
	Description  string
	Instructions string
	MountPath    string // e.g. /mnt/memory/user-preferences
}

// AttachStoreParams attaches one store at session creation.
type AttachStoreParams struct {
	StoreID      string
	Access       Access // "" means AccessReadWrite
	Instructions string
}

// CreateSessionParams creates a session: agent-less when Agent is nil, a
// managed session of Agent in EnvironmentID otherwise.
type CreateSessionParams struct {
	Stores []AttachStoreParams

	// Agent is the agent the managed session runs; nil for an agent-less
	// session (EnvironmentID, InitialEvents and Budget must then be empty).
	Agent *AgentRef
	// EnvironmentID is the managed session's environment (required with
	// Agent).
	EnvironmentID string
	Title         string
	Metadata      map[string]string
	// InitialEvents are appended to the transcript at creation, in the same
	// transaction (user.message only).
	InitialEvents []NewSessionEvent
	Budget        *SessionBudget
}

// ListSessionsParams filters and pages sessions, newest first (Order
// "asc": oldest first).
type ListSessionsParams struct {
	StoreID string // only sessions with this store attached
	Limit   int
	Cursor  string

	AgentID         string          // only sessions of this agent
	AgentVersion    int64           // with AgentID: only this version
	Statuses        []SessionStatus // only these statuses; empty: any
	CreatedAt       TimeRange
	CreatedAfter    *time.Time // exclusive lower bound on created_at
	CreatedBefore   *time.Time // exclusive upper bound on created_at
	IncludeArchived bool       // archived sessions are left out unless set
	Order           string     // "" or "desc": newest first; "asc": oldest first
}

// SessionService manages sessions. Session credentials cannot call it.
type SessionService interface {
	// CreateSession attaches the stores and returns the session with a new
	// session-scoped credential (shown once). EINVALID for more than the
	// allowed stores, a duplicate or archived store, bad access or too long
	// instructions; ENOTFOUND for an unknown store.
	CreateSession(ctx context.Context, p CreateSessionParams) (*Session, string, error)
	GetSession(ctx context.Context, sessionID string) (*Session, error)
	ListSessions(ctx context.Context, p ListSessionsParams) (*Page[Session], error)
	// EndSession is idempotent; the session's credential stops working.
	EndSession(ctx context.Context, sessionID string) (*Session, error)
}

// APIKey is a workspace credential. The secret is shown once at creation and
// stored only as a hash.
type APIKey struct {
	ID          string // apikey_…
	WorkspaceID string
	Name        string
	Hint        string // the last characters of the secret, to tell keys apart
	CreatedAt   time.Time
	RevokedAt   *time.Time
}

// Authenticator turns a bearer secret (API key or session token) into a
// Principal. It returns EUNAUTHENTICATED for an unknown, revoked or ended
// credential.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (*Principal, error)
}
