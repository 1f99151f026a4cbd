package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const jobCols = `kind, key, pending, wake_seq, lease_owner, lease_expires_at, attempts, woken_at`

func scanJob(r rowScanner, j *storage.Job) error {
	var pending int64
	var lease sql.NullInt64
	var woken int64
	if err := r.Scan(&j.Kind, &j.Key, &pending, &j.WakeSeq, &j.LeaseOwner, &lease, &j.Attempts, &woken); err != nil {
		return err
	}
	j.Pending = pending != 0
	if lease.Valid {
		t := fromMicros(lease.Int64)
		j.LeaseExpiresAt = &t
	}
	j.WokenAt = fromMicros(woken)
	return nil
}

// JobWake makes the job pending and bumps its wake sequence, creating it.
func (t *tx) JobWake(ctx context.Context, kind, key string, now time.Time) error {
	_, err := t.exec(ctx, `INSERT INTO jobs (kind, key, pending, wake_seq, woken_at) VALUES (?, ?, 1, 1, ?)
		ON CONFLICT (kind, key) DO UPDATE SET pending = 1, wake_seq = jobs.wake_seq + 1, woken_at = excluded.woken_at`,
		kind, key, micros(now))
	return err
}

// JobClaim takes the lease of the least recently woken claimable job with
// one conditional UPDATE (SQLite runs one writer at a time).
func (t *tx) JobClaim(ctx context.Context, kind, owner string, now, until time.Time) (*storage.Job, error) {
	var j storage.Job
	err := t.queryRow(ctx, "claimable job", kind, func(r rowScanner) error { return scanJob(r, &j) },
		`UPDATE jobs SET lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1
		WHERE rowid = (SELECT rowid FROM jobs
			WHERE kind = ? AND pending = 1 AND (lease_expires_at IS NULL OR lease_expires_at <= ?)
			ORDER BY woken_at LIMIT 1)
		RETURNING `+jobCols, owner, micros(until), kind, micros(now))
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// JobRenew extends owner's lease.
func (t *tx) JobRenew(ctx context.Context, kind, key, owner string, until time.Time) (*storage.Job, error) {
	var j storage.Job
	err := t.queryRow(ctx, "job", key, func(r rowScanner) error { return scanJob(r, &j) },
		`UPDATE jobs SET lease_expires_at = ? WHERE kind = ? AND key = ? AND lease_owner = ? RETURNING `+jobCols,
		micros(until), kind, key, owner)
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return nil, t.jobConflict(ctx, kind, key)
	}
	if err != nil {
		return nil, err
	}
	return &j, nil
}

// JobRelease releases owner's lease, ending the pending state when done
// and no wake came since wakeSeq.
func (t *tx) JobRelease(ctx context.Context, kind, key, owner string, wakeSeq int64, done bool) error {
	res, err := t.exec(ctx, `UPDATE jobs SET lease_owner = '', lease_expires_at = NULL,
		pending = CASE WHEN ? AND wake_seq = ? THEN 0 ELSE pending END
		WHERE kind = ? AND key = ? AND lease_owner = ?`, done, wakeSeq, kind, key, owner)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return t.jobConflict(ctx, kind, key)
	}
	return nil
}

// JobDefer frees owner's lease but keeps the job unclaimable until until.
func (t *tx) JobDefer(ctx context.Context, kind, key, owner string, until time.Time) error {
	res, err := t.exec(ctx, `UPDATE jobs SET lease_owner = '', lease_expires_at = ? WHERE kind = ? AND key = ? AND lease_owner = ?`,
		micros(until), kind, key, owner)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return t.jobConflict(ctx, kind, key)
	}
	return nil
}

// JobDelete removes a job.
func (t *tx) JobDelete(ctx context.Context, kind, key string) error {
	_, err := t.exec(ctx, `DELETE FROM jobs WHERE kind = ? AND key = ?`, kind, key)
	return err
}

// JobDone removes the job while owner holds its lease.
func (t *tx) JobDone(ctx context.Context, kind, key, owner string) error {
	res, err := t.exec(ctx, `DELETE FROM jobs WHERE kind = ? AND key = ? AND lease_owner = ?`, kind, key, owner)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return t.jobConflict(ctx, kind, key)
	}
	return nil
}

// jobConflict tells an unknown job (ENOTFOUND) from a lease held by
// someone else (ECONFLICT).
func (t *tx) jobConflict(ctx context.Context, kind, key string) error {
	var n int64
	err := t.queryRow(ctx, "job", key, func(r rowScanner) error { return r.Scan(&n) },
		`SELECT 1 FROM jobs WHERE kind = ? AND key = ?`, kind, key)
	if err != nil {
		return err
	}
	return trove.Errorf(trove.ECONFLICT, "the lease of job %s %s is not held by this runner", kind, key)
}
