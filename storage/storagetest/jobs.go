package storagetest

import (
	"context"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- jobs ----

// testJobs: a woken job is claimable by one owner at a time, least
// recently woken first; a live lease hides it, an expired one frees it;
// renew and release need the lease; a release after a wake that came
// during the claim leaves the job pending, one without does not.
func testJobs(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	do := func(fn func(tx storage.Tx) error) error { return d.Write(ctx, fn) }
	claim := func(owner string, now int) (*storage.Job, error) {
		var j *storage.Job
		err := do(func(tx storage.Tx) error {
			var err error
			j, err = tx.JobClaim(ctx, "test_run", owner, secs(now), secs(now+30))
			return err
		})
		return j, err
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.JobWake(ctx, "test_run", "b", secs(2)); err != nil {
			return err
		}
		if err := tx.JobWake(ctx, "other_kind", "z", secs(0)); err != nil {
			return err
		}
		return tx.JobWake(ctx, "test_run", "a", secs(1))
	})
	j, err := claim("n1", 3)
	if err != nil || j.Key != "a" || j.LeaseOwner != "n1" || j.WakeSeq != 1 || j.Attempts != 1 || !j.LeaseExpiresAt.Equal(secs(33)) {
		t.Fatalf("first claim = %+v, %v; want job a held by n1 until 33 s", j, err)
	}
	j2, err := claim("n2", 4)
	if err != nil || j2.Key != "b" {
		t.Fatalf("second claim = %+v, %v; want job b", j2, err)
	}
	if _, err := claim("n3", 5); trove.ErrorCode(err) != trove.ENOTFOUND {
		t.Fatalf("claim with every job leased: %v, want ENOTFOUND", err)
	}
	if err := do(func(tx storage.Tx) error { _, err := tx.JobRenew(ctx, "test_run", "a", "n2", secs(60)); return err }); trove.ErrorCode(err) != trove.ECONFLICT {
		t.Errorf("renew by a non-owner: %v, want ECONFLICT", err)
	}
	if err := do(func(tx storage.Tx) error { _, err := tx.JobRenew(ctx, "test_run", "nope", "n2", secs(60)); return err }); trove.ErrorCode(err) != trove.ENOTFOUND {
		t.Errorf("renew of an unknown job: %v, want ENOTFOUND", err)
	}
	// A wake during n1's claim: its release with done keeps the job pending.
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.JobWake(ctx, "test_run", "a", secs(6)) })
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		return tx.JobRelease(ctx, "test_run", "a", "n1", 1, true)
	})
	j, err = claim("n3", 7)
	if err != nil || j.Key != "a" || j.WakeSeq != 2 || j.Attempts != 2 {
		t.Fatalf("claim after a wake during the previous claim = %+v, %v; want job a at wake 2", j, err)
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		return tx.JobRelease(ctx, "test_run", "a", "n3", 2, true)
	})
	if err := do(func(tx storage.Tx) error { return tx.JobRelease(ctx, "test_run", "a", "n3", 2, true) }); trove.ErrorCode(err) != trove.ECONFLICT {
		t.Errorf("second release: %v, want ECONFLICT", err)
	}
	// b's lease (until 34 s) expires: another owner takes it over.
	if _, err := claim("n4", 20); trove.ErrorCode(err) != trove.ENOTFOUND {
		t.Fatalf("claim while b is leased and a done: %v, want ENOTFOUND", err)
	}
	j, err = claim("n4", 40)
	if err != nil || j.Key != "b" || j.LeaseOwner != "n4" || j.Attempts != 2 {
		t.Fatalf("claim after b's lease expired = %+v, %v; want b taken over by n4", j, err)
	}
	if err := do(func(tx storage.Tx) error { return tx.JobRelease(ctx, "test_run", "b", "n2", 1, true) }); trove.ErrorCode(err) != trove.ECONFLICT {
		t.Errorf("release by the lease's previous owner: %v, want ECONFLICT", err)
	}
	// Released without done: still pending.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		return tx.JobRelease(ctx, "test_run", "b", "n4", 1, false)
	})
	if j, err := claim("n5", 41); err != nil || j.Key != "b" {
		t.Fatalf("claim after a release without done = %+v, %v; want b", j, err)
	}
	// Done: only by the lease's owner, whatever woke the job meanwhile;
	// the job is gone.
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.JobWake(ctx, "test_run", "b", secs(42)) })
	if err := do(func(tx storage.Tx) error { return tx.JobDone(ctx, "test_run", "b", "n4") }); trove.ErrorCode(err) != trove.ECONFLICT {
		t.Errorf("done by the lease's previous owner: %v, want ECONFLICT", err)
	}
	if err := do(func(tx storage.Tx) error { return tx.JobDone(ctx, "test_run", "nope", "n5") }); trove.ErrorCode(err) != trove.ENOTFOUND {
		t.Errorf("done of an unknown job: %v, want ENOTFOUND", err)
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.JobDone(ctx, "test_run", "b", "n5") })
	if err := do(func(tx storage.Tx) error { return tx.JobDone(ctx, "test_run", "b", "n5") }); trove.ErrorCode(err) != trove.ENOTFOUND {
		t.Errorf("done twice: %v, want ENOTFOUND (the job is gone)", err)
	}
	if j, err := claim("n6", 100); trove.ErrorCode(err) != trove.ENOTFOUND {
		t.Errorf("claim after done = %+v, %v; want ENOTFOUND", j, err)
	}
}
