package core_test

import (
	"context"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

func (t *memTx) JobWake(ctx context.Context, kind, key string, now time.Time) error {
	j, ok := t.st.jobs[kind+"/"+key]
	if !ok {
		j = storage.Job{Kind: kind, Key: key}
	}
	j.Pending, j.WakeSeq, j.WokenAt = true, j.WakeSeq+1, now
	t.st.jobs[kind+"/"+key] = j
	return nil
}

func (t *memTx) JobClaim(ctx context.Context, kind, owner string, now, until time.Time) (*storage.Job, error) {
	var best *storage.Job
	for _, j := range t.st.jobs {
		if j.Kind != kind || !j.Pending || (j.LeaseExpiresAt != nil && j.LeaseExpiresAt.After(now)) {
			continue
		}
		if best == nil || j.WokenAt.Before(best.WokenAt) {
			c := j
			best = &c
		}
	}
	if best == nil {
		return nil, notFound("claimable job", kind)
	}
	u := until
	best.LeaseOwner, best.LeaseExpiresAt, best.Attempts = owner, &u, best.Attempts+1
	t.st.jobs[kind+"/"+best.Key] = *best
	return best, nil
}

func (t *memTx) JobRenew(ctx context.Context, kind, key, owner string, until time.Time) (*storage.Job, error) {
	j, ok := t.st.jobs[kind+"/"+key]
	if !ok {
		return nil, notFound("job", key)
	}
	if j.LeaseOwner != owner {
		return nil, trove.Errorf(trove.ECONFLICT, "lease not held")
	}
	u := until
	j.LeaseExpiresAt = &u
	t.st.jobs[kind+"/"+key] = j
	return &j, nil
}

func (t *memTx) JobRelease(ctx context.Context, kind, key, owner string, wakeSeq int64, done bool) error {
	j, ok := t.st.jobs[kind+"/"+key]
	if !ok {
		return notFound("job", key)
	}
	if j.LeaseOwner != owner {
		return trove.Errorf(trove.ECONFLICT, "lease not held")
	}
	j.LeaseOwner, j.LeaseExpiresAt = "", nil
	if done && j.WakeSeq == wakeSeq {
		j.Pending = false
	}
	t.st.jobs[kind+"/"+key] = j
	return nil
}

func (t *memTx) JobDefer(ctx context.Context, kind, key, owner string, until time.Time) error {
	j, ok := t.st.jobs[kind+"/"+key]
	if !ok {
		return trove.Errorf(trove.ENOTFOUND, "job not found")
	}
	if j.LeaseOwner != owner {
		return trove.Errorf(trove.ECONFLICT, "lease not held")
	}
	j.LeaseOwner, j.LeaseExpiresAt = "", &until
	t.st.jobs[kind+"/"+key] = j
	return nil
}

func (t *memTx) JobDelete(ctx context.Context, kind, key string) error {
	delete(t.st.jobs, kind+"/"+key)
	return nil
}

func (t *memTx) JobDone(ctx context.Context, kind, key, owner string) error {
	j, ok := t.st.jobs[kind+"/"+key]
	if !ok {
		return notFound("job", key)
	}
	if j.LeaseOwner != owner {
		return trove.Errorf(trove.ECONFLICT, "lease not held")
	}
	delete(t.st.jobs, kind+"/"+key)
	return nil
}

// The in-memory driver has no webhook endpoints (core's webhook rules run
// over the real drivers: coretest's RunWebhooks); events find none.
func (t *memTx) WebhookList(ctx context.Context, workspaceID string) ([]trove.Webhook, error) {
	return nil, nil
}
