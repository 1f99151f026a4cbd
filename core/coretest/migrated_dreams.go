package coretest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// LegacyDream is a dream row as a database made before dreams were jobs
// (SQLite 0016, PostgreSQL 0017) held it, with its own lease columns.
// Times are Unix seconds (LeaseUntil 0: NULL).
type LegacyDream struct {
	ID, Status, SessionID, LeaseOwner string
	LeaseUntil, Attempts, Created     int64
}

// legacyFar is a lease end that has not come yet when the test runs.
var legacyFar = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// LegacyDreams are the dreams a driver's migration test writes, in its own
// SQL, into workspace "wrkspc_one" (input store "memstore_a", create_new,
// model "m", session_ids ["sesn_in"], created by API key "apikey_x") at the
// schema before the dreams' jobs, before migrating and calling
// LegacyDreamJobs.
var LegacyDreams = []LegacyDream{
	{ID: "drm_done", Status: "completed", SessionID: "sesn_d0", Attempts: 1, Created: 10},
	{ID: "drm_pending", Status: "pending", Created: 11},
	{ID: "drm_live", Status: "running", SessionID: "sesn_d2", LeaseOwner: "node-a", LeaseUntil: legacyFar, Attempts: 1, Created: 12},
	{ID: "drm_dead", Status: "running", SessionID: "sesn_d3", LeaseOwner: "node-b", LeaseUntil: 50, Attempts: 2, Created: 13},
	{ID: "drm_held", Status: "canceled", SessionID: "sesn_d4", LeaseOwner: "node-c", LeaseUntil: legacyFar, Attempts: 1, Created: 14},
	{ID: "drm_queued", Status: "canceled", Created: 15},
}

// LegacyDreamJobs checks a database migrated from LegacyDreams: each
// dream a runner may still take has its job with the lease it held (read
// back with the dream), the others none; claims take the free and expired
// ones oldest first, never the live leases nor the dreams with no job.
func LegacyDreamJobs(t *testing.T, d storage.Driver) {
	t.Helper()
	ctx := context.Background()
	type lease struct {
		Owner    string
		Until    int64
		Attempts int
	}
	got := map[string]lease{}
	if err := d.Read(ctx, func(tx storage.Tx) error {
		for _, l := range LegacyDreams {
			dr, err := tx.DreamGet(ctx, "wrkspc_one", l.ID)
			if err != nil {
				return err
			}
			if string(dr.Status) != l.Status || dr.SessionID != l.SessionID {
				t.Errorf("dream %s after the migration: status %s, session %q; want %s, %q", l.ID, dr.Status, dr.SessionID, l.Status, l.SessionID)
			}
			var until int64
			if dr.LeaseExpiresAt != nil {
				until = dr.LeaseExpiresAt.Unix()
			}
			got[l.ID] = lease{dr.LeaseOwner, until, dr.Attempts}
		}
		return nil
	}); err != nil {
		t.Fatalf("reading the migrated dreams: %v", err)
	}
	want := map[string]lease{
		"drm_done": {}, "drm_queued": {}, "drm_pending": {},
		"drm_live": {"node-a", legacyFar, 1}, "drm_dead": {"node-b", 50, 2}, "drm_held": {"node-c", legacyFar, 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the migrated dreams' leases (-want +got):\n%s", diff)
	}
	var claimed []string
	for range 3 {
		if err := d.Write(ctx, func(tx storage.Tx) error {
			now := time.Now()
			j, err := tx.JobClaim(ctx, storage.JobDream, "node-new", now, now.Add(time.Minute))
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				return nil
			}
			if err != nil {
				return err
			}
			claimed = append(claimed, j.Key)
			return nil
		}); err != nil {
			t.Fatalf("claiming a migrated dream: %v", err)
		}
	}
	if diff := cmp.Diff([]string{"drm_pending", "drm_dead"}, claimed); diff != "" {
		t.Errorf("claims after the migration (-want +got):\n%s", diff)
	}
}
