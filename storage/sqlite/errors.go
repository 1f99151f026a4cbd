package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"

	"github.com/trovehq/trove"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// translate is the driver's one error translator: it maps database errors to
// the storage port's conventions and returns anything else unchanged.
//
//   - sql.ErrNoRows → ENOTFOUND
//   - a UNIQUE violation on memories (store_id, path) → EPATHCONFLICT
//   - SQLITE_BUSY/LOCKED, I/O errors, a full disk, a closed database or
//     connection, a cancelled context → EUNAVAILABLE (retryable)
//
// *trove.Error values pass through untouched.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var te *trove.Error
	if errors.As(err, &te) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return &trove.Error{Code: trove.ENOTFOUND, Message: "not found", Err: err}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ctxError(err)
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) ||
		strings.Contains(err.Error(), "sql: database is closed") {
		return unavailable("database connection closed", err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code()
		switch code & 0xff {
		case sqlite3.SQLITE_CONSTRAINT:
			if isPathUnique(se) {
				return &trove.Error{Code: trove.EPATHCONFLICT, Message: "a memory already exists at this path", Err: err}
			}
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return unavailable("the database is busy", err)
		case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN,
			sqlite3.SQLITE_INTERRUPT, sqlite3.SQLITE_PROTOCOL,
			sqlite3.SQLITE_NOLFS:
			return unavailable("the database is unavailable", err)
		case sqlite3.SQLITE_MISUSE:
			if strings.Contains(se.Error(), "closed") {
				return unavailable("the database is closed", err)
			}
		}
	}
	return err
}

// isForeignKey reports whether err is a FOREIGN KEY constraint violation.
func isForeignKey(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// isPathUnique reports whether se is the UNIQUE violation of the memories
// (store_id, path) index.
func isPathUnique(se *sqlite.Error) bool {
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE &&
		strings.Contains(se.Error(), "memories.store_id, memories.path")
}

// unavailable wraps err as EUNAVAILABLE with a client-safe message.
func unavailable(msg string, err error) error {
	return &trove.Error{Code: trove.EUNAVAILABLE, Message: msg, Err: err}
}

// ctxError reports a cancelled or expired context as EUNAVAILABLE; errors.Is
// still finds context.Canceled / DeadlineExceeded through it.
func ctxError(err error) error {
	return &trove.Error{Code: trove.EUNAVAILABLE, Message: "request cancelled or timed out", Err: err}
}

// notFound returns ENOTFOUND with a message naming what is missing.
func notFound(what, id string) error {
	return trove.Errorf(trove.ENOTFOUND, "%s %q not found", what, id)
}

// isUnique reports whether err is a UNIQUE violation naming columns (as
// "table.column").
func isUnique(err error, columns string) bool {
	var se *sqlite.Error
	return err != nil && errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE &&
		strings.Contains(se.Error(), columns)
}
