package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const jobCols = `kind, key, pending, wake_seq, lease_owner, lease_expires_at, attempts, woken_at`

func scanJob(r scanner) (*storage.Job, error) {
	var j storage.Job
	if err := r.Scan(&j.Kind, &j.Key, &j.Pending, &j.WakeSeq, &j.LeaseOwner, &j.LeaseExpiresAt, &j.Attempts, &j.WokenAt); err != nil {
		return nil, err
	}
	j.LeaseExpiresAt = utc(j.LeaseExpiresAt)
	j.WokenAt = j.WokenAt.UTC()
	return &j, nil
}

// JobWake makes the job pending and bumps its wake sequence, creating it.
func (t *tx) JobWake(ctx context.Context, kind, key string, now time.Time) error {
	_, err := t.exec(ctx, `INSERT INTO jobs (kind, key, pending, wake_seq, woken_at) VALUES ($1, $2, true, 1, $3)
		ON CONFLICT (kind, key) DO UPDATE SET pending = true, wake_seq = jobs.wake_seq + 1, woken_at = excluded.woken_at`,
		kind, key, now)
	return translate(err)
}

// JobClaim takes the lease of the least recently woken claimable job; a job
// another transaction is claiming is skipped (FOR UPDATE SKIP LOCKED), so
// two nodes never take the same one.
func (t *tx) JobClaim(ctx context.Context, kind, owner string, now, until time.Time) (*storage.Job, error) {
	j, err := scanJob(t.queryRow(ctx, `UPDATE jobs SET lease_owner = $1, lease_expires_at = $2, attempts = attempts + 1
		WHERE (kind, key) = (SELECT kind, key FROM jobs
			WHERE kind = $3 AND pending AND (lease_expires_at IS NULL OR lease_expires_at <= $4)
			ORDER BY woken_at LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+jobCols, owner, until, kind, now))
	if err == pgx.ErrNoRows {
		return nil, notFound("claimable job")
	}
	return j, translate(err)
}

// JobRenew extends owner's lease.
func (t *tx) JobRenew(ctx context.Context, kind, key, owner string, until time.Time) (*storage.Job, error) {
	j, err := scanJob(t.queryRow(ctx, `UPDATE jobs SET lease_expires_at = $1 WHERE kind = $2 AND key = $3 AND lease_owner = $4 RETURNING `+jobCols,
		until, kind, key, owner))
	if err == pgx.ErrNoRows {
		return nil, t.jobConflict(ctx, kind, key)
	}
	return j, translate(err)
}

// JobRelease releases owner's lease, ending the pending state when done
// and no wake came since wakeSeq.
func (t *tx) JobRelease(ctx context.Context, kind, key, owner string, wakeSeq int64, done bool) error {
	tag, err := t.exec(ctx, `UPDATE jobs SET lease_owner = '', lease_expires_at = NULL,
		pending = CASE WHEN $1 AND wake_seq = $2 THEN false ELSE pending END
		WHERE kind = $3 AND key = $4 AND lease_owner = $5`, done, wakeSeq, kind, key, owner)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return t.jobConflict(ctx, kind, key)
	}
	return nil
}

// JobDefer frees owner's lease but keeps the job unclaimable until until.
func (t *tx) JobDefer(ctx context.Context, kind, key, owner string, until time.Time) error {
	tag, err := t.exec(ctx, `UPDATE jobs SET lease_owner = '', lease_expires_at = $1 WHERE kind = $2 AND key = $3 AND lease_owner = $4`,
		until, kind, key, owner)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return t.jobConflict(ctx, kind, key)
	}
	return nil
}

// JobDelete removes a job.
func (t *tx) JobDelete(ctx context.Context, kind, key string) error {
	_, err := t.exec(ctx, `DELETE FROM jobs WHERE kind = $1 AND key = $2`, kind, key)
	return translate(err)
}

// JobDone removes the job while owner holds its lease.
func (t *tx) JobDone(ctx context.Context, kind, key, owner string) error {
	tag, err := t.exec(ctx, `DELETE FROM jobs WHERE kind = $1 AND key = $2 AND lease_owner = $3`, kind, key, owner)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return t.jobConflict(ctx, kind, key)
	}
	return nil
}

// jobConflict tells an unknown job (ENOTFOUND) from a lease held by
// someone else (ECONFLICT).
func (t *tx) jobConflict(ctx context.Context, kind, key string) error {
	var n int
	err := t.queryRow(ctx, `SELECT 1 FROM jobs WHERE kind = $1 AND key = $2`, kind, key).Scan(&n)
	if err == pgx.ErrNoRows {
		return notFound("job")
	}
	if err != nil {
		return translate(err)
	}
	return trove.Errorf(trove.ECONFLICT, "the lease of job %s %s is not held by this runner", kind, key)
}
