package trove

import (
	"context"
	"time"
)

// Session is an agent session with memory stores attached at creation.
// Writes made with its credential are versions with a session actor.
type Session struct {
	ID          string // sesn_…
	WorkspaceID string
	Stores      []SessionStore // at most Limits.MaxStoresPerSession
	CreatedBy   Actor
	CreatedAt   time.Time
	EndedAt     *time.Time // nil while active; an ended session's credential is dead
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

// CreateSessionParams creates a session.
type CreateSessionParams struct {
	Stores []AttachStoreParams
}

// ListSessionsParams filters and pages sessions, newest first.
type ListSessionsParams struct {
	StoreID string // only sessions with this store attached
	Limit   int
	Cursor  string
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
