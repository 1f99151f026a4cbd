package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trovehq/trove"
)

// pathConstraint is the unique constraint on memories (store_id, path).
const pathConstraint = "memories_store_path_key"

// translate is the driver's one error translator. It returns nil for nil and
// *trove.Error values unchanged; otherwise:
//
//   - pgx.ErrNoRows → ENOTFOUND;
//   - unique violation of (store_id, path) → EPATHCONFLICT;
//   - a NUL or otherwise unstorable character in text → EINVALID;
//   - every transient condition → EUNAVAILABLE (a retryable 503): a lost or
//     refused connection, connection exceptions (08…), the transaction
//     rollback class (40…: serialization failures and deadlocks left after
//     retries, 40003 statement completion unknown), insufficient resources
//     (53…: too many connections, out of memory, disk full), operator
//     intervention (57…: statement timeout or cancel 57014, admin or crash
//     shutdown, idle session timeout), system errors (58…: I/O), lock
//     timeout (55P03), idle-in-transaction and transaction timeouts (25P03,
//     25P04), a closed pool, a context deadline or cancellation;
//   - anything else is returned as is (it becomes EINTERNAL upstream).
//
// The original error is kept in Err for logs.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var te *trove.Error
	if errors.As(err, &te) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &trove.Error{Code: trove.ENOTFOUND, Message: "not found", Err: err}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505" && pe.ConstraintName == pathConstraint:
			return &trove.Error{Code: trove.EPATHCONFLICT, Message: "a memory already exists at this path", Err: err}
		case pe.Code == "22021" || pe.Code == "22P05":
			return &trove.Error{Code: trove.EINVALID, Message: "text contains a character the database cannot store (NUL)", Err: err}
		case transientCode(pe.Code):
			return unavailable(err)
		}
		return err
	}
	if isConnError(err) {
		return unavailable(err)
	}
	return err
}

// transientCode reports whether a SQLSTATE names a condition that passes:
// the same request may succeed when retried.
func transientCode(code string) bool {
	switch code {
	case "55P03", // lock_not_available (lock_timeout, NOWAIT)
		"25P03", // idle_in_transaction_session_timeout
		"25P04": // transaction_timeout
		return true
	}
	for _, class := range []string{"08", "40", "53", "57", "58"} {
		if strings.HasPrefix(code, class) {
			return true
		}
	}
	return false
}

func unavailable(err error) error {
	return &trove.Error{Code: trove.EUNAVAILABLE, Message: "the database is unavailable; retry", Err: err}
}

// isConnError reports whether err means the database could not be reached,
// the connection broke, or the caller's time ran out waiting for it.
func isConnError(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &ce), errors.As(err, &oe), errors.As(err, &ne):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	case pgconn.Timeout(err):
		return true
	}
	msg := err.Error()
	// pgx reports a connection it already closed, and a closed pool, with
	// plain errors.
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool")
}

// pgCode returns the SQLSTATE of err, or "" when it is not a server error.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
