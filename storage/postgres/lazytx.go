package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trovehq/trove"
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

// queryPlannedEach is query for a statement whose best plan depends on its
// arguments' values, such as a search, where a word in most memories wants
// a sequential scan and a rare one the GIN index: it is sent unnamed, so
// PostgreSQL plans it for these values every time, instead of through
// pgx's statement cache, whose prepared statements PostgreSQL switches to a
// generic plan after five runs (that plan made a frequent word's search at
// 1 M memories 1.4× slower). A batch cannot carry that mode, so BEGIN, if
// still due, goes first on its own.
func (t *tx) queryPlannedEach(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.ensureBegun(ctx); err != nil {
		return nil, err
	}
	return t.conn.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
}

// finish commits (err == nil) or rolls back the transaction if it began,
// and returns the outcome of fn and the commit.
//
// A rollback runs within ctx when ctx has time left (bounded by
// rollbackTimeout); when ctx is done the connection is closed instead (the
// pool discards a connection left in a transaction), so that nothing waits
// past ctx on a silent connection. Either way no COMMIT was sent: the
// server ends the transaction when it sees the connection end, at the
// latest after its idle-in-transaction timeout.
//
// A write's COMMIT is sent with settle time left before ctx's deadline (see
// DB.Write); when it is sent but not acknowledged the outcome is in doubt,
// and finish waits until settle has passed since it was sent, so that the
// server has either committed or ended the transaction before the caller
// hears of it.
func (t *tx) finish(ctx context.Context, err error) error {
	if !t.sent || t.beginFailed {
		return err
	}
	if err != nil {
		t.rollback(ctx)
		return err
	}
	cctx := ctx
	if dl, ok := ctx.Deadline(); ok && t.settle > 0 {
		last := dl.Add(-t.settle)
		if time.Until(last) <= 0 {
			t.rollback(ctx)
			return &trove.Error{Code: trove.EUNAVAILABLE, Message: "the database is too slow: the write ran out of time before it could commit and was not applied; retry",
				Err: fmt.Errorf("less than %v left before the deadline to commit", t.settle)}
		}
		var cancel context.CancelFunc
		cctx, cancel = context.WithDeadline(ctx, last)
		defer cancel()
	}
	sent := time.Now()
	tag, err := t.conn.Exec(cctx, "COMMIT")
	if err != nil {
		if pgconn.SafeToRetry(err) || pgCode(err) != "" {
			// Not sent, or refused by the server: not committed.
			return err
		}
		// Sent, not acknowledged: committed or not, the server settles it
		// within settle.
		t.closeConn()
		if t.settle > 0 {
			time.Sleep(time.Until(sent.Add(t.settle)))
		}
		return &trove.Error{Code: trove.EUNAVAILABLE, Message: "the database did not confirm the commit: the write may or may not have been applied; read it back before retrying", Err: err}
	}
	if tag.String() == "ROLLBACK" {
		return errTxAborted
	}
	return nil
}

// rollback ends the transaction after fn failed: ROLLBACK within ctx (and
// rollbackTimeout) when ctx has time left, else the connection is closed.
func (t *tx) rollback(ctx context.Context) {
	if ctx.Err() != nil || t.conn.IsClosed() {
		t.closeConn()
		return
	}
	rctx, cancel := context.WithTimeout(ctx, t.rollbackTimeout)
	defer cancel()
	if _, err := t.conn.Exec(rctx, "ROLLBACK"); err != nil {
		// On a broken connection: make sure the pool drops it.
		t.closeConn()
	}
}

// closeConn closes the connection without waiting on the network: the
// Terminate message is sent, if at all, under a short deadline.
func (t *tx) closeConn() {
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_ = t.conn.Close(cctx)
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
