package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The transaction's BEGIN is not a round trip of its own: it is sent in one
// pipeline with the transaction's first statement. A Read of one statement
// then costs two round trips (BEGIN+statement, COMMIT) instead of three, and
// a Write saves one as well. A transaction whose fn runs no statement sends
// nothing at all.

// errTxAborted is returned when COMMIT answers ROLLBACK: a statement failed
// and fn did not return its error.
var errTxAborted = errors.New("postgres: transaction was aborted by an earlier error and rolled back")

// begin returns the batch results of BEGIN pipelined with sql, or nil when
// the transaction has begun already. When BEGIN itself fails the error is
// returned and beginFailed is set: nothing ran, so the caller may retry.
func (t *tx) begin(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	if t.sent {
		return nil, nil
	}
	t.sent = true
	b := &pgx.Batch{}
	b.Queue(t.beginSQL)
	b.Queue(sql, args...)
	br := t.conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.beginFailed = true
		_ = br.Close()
		return nil, err
	}
	return br, nil
}

// ensureBegun sends BEGIN alone, for statements that cannot be pipelined
// with it (a batch).
func (t *tx) ensureBegun(ctx context.Context) error {
	if t.sent {
		return nil
	}
	t.sent = true
	if _, err := t.conn.Exec(ctx, t.beginSQL); err != nil {
		t.beginFailed = true
		return err
	}
	return nil
}

func (t *tx) exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br, err := t.begin(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	if br == nil {
		return t.conn.Exec(ctx, sql, args...)
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (t *tx) queryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	br, err := t.begin(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	if br == nil {
		return t.conn.QueryRow(ctx, sql, args...)
	}
	return batchRow{row: br.QueryRow(), br: br}
}

func (t *tx) query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br, err := t.begin(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	if br == nil {
		return t.conn.Query(ctx, sql, args...)
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// finish commits (err == nil) or rolls back the transaction if it began,
// and returns the outcome of fn and the commit.
func (t *tx) finish(ctx context.Context, err error) error {
	if !t.sent || t.beginFailed {
		return err
	}
	if err != nil {
		// On a broken connection this fails too; the pool then drops the
		// connection, which is not idle.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.rollbackTimeout)
		defer cancel()
		_, _ = t.conn.Exec(rctx, "ROLLBACK")
		return err
	}
	tag, err := t.conn.Exec(ctx, "COMMIT")
	if err != nil {
		return err
	}
	if tag.String() == "ROLLBACK" {
		return errTxAborted
	}
	return nil
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// batchRow closes the pipeline once the row is scanned.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// batchRows closes the pipeline with the rows.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if !r.closed {
		r.closed = true
		_ = r.br.Close()
	}
}
