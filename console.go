package trove

import "context"

// ConsoleAuthenticator signs browsers in to the web console. A console
// session is made from an API key and is not the key: its token (the
// cookie's value) is random, stored only as a hash, and shared by every
// server over the same database. Writes made through a console session are
// attributed to a user actor naming the key (ConsoleUserID).
type ConsoleAuthenticator interface {
	// StartConsoleSession checks apiKey (an API key; a session token is
	// EUNAUTHENTICATED) and returns a new console session token, shown
	// once, and the principal it acts as. EUNAUTHENTICATED for an unknown,
	// malformed or revoked key.
	StartConsoleSession(ctx context.Context, apiKey string) (token string, p *Principal, err error)
	// ConsoleAuthenticate returns the principal of a console session token.
	// It reads the database on every call, so a sign-out on another server
	// and a revoked key take effect at once. EUNAUTHENTICATED for an
	// unknown, signed-out or expired session and for one whose key has been
	// revoked (that session is deleted).
	ConsoleAuthenticate(ctx context.Context, token string) (*Principal, error)
	// EndConsoleSession signs the session out; an unknown token is not an
	// error.
	EndConsoleSession(ctx context.Context, token string) error
}

// ConsoleUserID is the user_id of the user actor that console edits made
// with API key keyID are attributed to: "user_" followed by the key ID, so
// that a version names the key it was made with.
func ConsoleUserID(keyID string) string { return "user_" + keyID }

// Why a console session stopped authenticating: the DetailCode of
// ConsoleAuthenticate's EUNAUTHENTICATED errors, which the console turns
// into a fixed message (never text taken from a request).
const (
	ConsoleSignedOut  = "console_signed_out"  // no such session: signed out, or never signed in
	ConsoleKeyRevoked = "console_key_revoked" // the key it signed in with was revoked
	ConsoleExpired    = "console_expired"     // past its lifetime
)
