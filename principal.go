package trove

import "context"

// Principal is the authenticated caller of a service method: the workspace it
// acts in, the actor its writes are attributed to, and, for a session
// credential, the stores the session may touch.
type Principal struct {
	WorkspaceID string
	Actor       Actor
	// Session is non-nil for a session-scoped credential. It can read only the
	// attached stores, write only the read_write ones, and cannot create,
	// update, archive or delete stores, redact versions or create sessions.
	Session *SessionScope
	// Environment is non-nil for an environment key. Such a principal also
	// carries an empty Session scope (no session, no stores), so every rule
	// written for session credentials denies it too; it reaches only its
	// environment's work queue (see WorkService).
	Environment *EnvironmentScope
}

// EnvironmentScope is what an environment key may reach.
type EnvironmentScope struct {
	EnvironmentID string
	KeyID         string // envkey_…
}

// SessionScope is what a session credential may reach.
type SessionScope struct {
	SessionID string
	Stores    map[string]Access // store ID → access
}

// CanRead reports whether the principal may read storeID.
func (p *Principal) CanRead(storeID string) bool {
	if p.Session == nil {
		return true
	}
	_, ok := p.Session.Stores[storeID]
	return ok
}

// CanWrite reports whether the principal may write memories of storeID.
func (p *Principal) CanWrite(storeID string) bool {
	if p.Session == nil {
		return true
	}
	return p.Session.Stores[storeID] == AccessReadWrite
}

type principalKey struct{}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal carried by ctx, or nil.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
