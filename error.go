package trove

import (
	"errors"
	"fmt"
)

// Error codes: a small closed set, mapped once per edge (HTTP status and
// envelope type in httpapi, errno in fusefs, tool strings in memtool).
const (
	EINVALID         = "invalid"         // bad input, archived store, limit reached: HTTP 400
	EUNAUTHENTICATED = "unauthenticated" // missing or bad credential: 401
	EFORBIDDEN       = "forbidden"       // credential may not do this: 403
	ENOTFOUND        = "not_found"       // absent, deleted, or in another workspace: 404
	EPATHCONFLICT    = "path_conflict"   // path used or overlapping: 409 memory_path_conflict_error
	EPRECONDITION    = "precondition"    // content_sha256 mismatch: 409 memory_precondition_failed_error
	ECONFLICT        = "conflict"        // other conflicting state: 409 conflict_error
	ELEASELOST       = "lease_lost"      // work heartbeat precondition failed: 412, Error.Lease set
	ETOOLARGE        = "too_large"       // request body too large: 413
	EUNAVAILABLE     = "unavailable"     // database unreachable, shutting down: 503, retryable
	EINTERNAL        = "internal"        // a bug: 500; detail is logged, never sent
)

// Error is a domain error: a code from the closed set and a message safe to
// show to a client. Internal detail goes in Err, which is logged, never sent.
type Error struct {
	Code    string
	Message string
	// ConflictingPath and ConflictingMemoryID are set with EPATHCONFLICT.
	ConflictingPath     string
	ConflictingMemoryID string
	// Details carries an optional machine-readable error code (for example
	// "invalid_metadata"), sent as error.details.error_code.
	DetailCode string
	// Lease is the server's lease, set with ELEASELOST (sent as
	// error.details.current_state).
	Lease *WorkLease
	// Err is the underlying cause, for logs only.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("trove %s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("trove %s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code and a formatted client-safe message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, EINTERNAL for a non-nil error that is
// not an *Error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err; for errors that are
// not *Error it returns a generic text, never internal detail.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
