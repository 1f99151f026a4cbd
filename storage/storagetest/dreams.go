package storagetest

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- dreams ----

func newDream(ws, store string, at int) *trove.Dream {
	return &trove.Dream{
		ID: trove.NewID(trove.PrefixDream, secs(at)), WorkspaceID: ws, Status: trove.DreamPending,
		InputStoreID: store, SessionIDs: []string{"sesn_a", "sesn_b"}, Model: "claude-sonnet-4-6",
		ModelSpeed: "standard", OutputBehavior: trove.OutputCreateNew,
		CreatedBy: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_1"}, CreatedAt: secs(at),
	}
}

func testDreamRoundTrip(t *testing.T, d storage.Driver) {
	a := newDream("wrkspc_a", "memstore_1", 1)
	b := newDream("wrkspc_a", "memstore_1", 2)
	b.Instructions = "focus on préférences"
	b.OutputBehavior = trove.OutputUpdateExisting
	c := newDream("wrkspc_b", "memstore_2", 3)
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, x := range []*trove.Dream{a, b, c} {
			if err := tx.DreamInsert(ctx, x); err != nil {
				return err
			}
		}
		return nil
	})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.DreamGet(ctx, "wrkspc_a", b.ID)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(b, got); diff != "" {
			t.Errorf("DreamGet (-want +got):\n%s", diff)
		}
		if got, err := tx.DreamGet(ctx, "", c.ID); err != nil || got.ID != c.ID {
			t.Errorf("DreamGet(any workspace) = %v, %v", got, err)
		}
		_, err = tx.DreamGet(ctx, "wrkspc_b", a.ID)
		wantCode(t, "DreamGet(other workspace)", err, trove.ENOTFOUND)
		return nil
	})
	// Every mutable column round-trips.
	b.Status = trove.DreamFailed
	b.OutputStoreID, b.SessionID = "memstore_out", "sesn_dream"
	b.Usage = trove.DreamUsage{InputTokens: 1, OutputTokens: 2, CacheReadInputTokens: 3, CacheCreationInputTokens: 4}
	b.Error = &trove.DreamError{Type: trove.DreamErrTimeout, Message: "ran out of time"}
	b.EndedAt, b.ArchivedAt = timePtr(secs(10)), timePtr(secs(11))
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if _, err := tx.DreamLock(ctx, "wrkspc_a", b.ID); err != nil {
			return err
		}
		if err := tx.DreamUpdate(ctx, b); err != nil {
			return err
		}
		wantCode(t, "DreamUpdate(unknown)", tx.DreamUpdate(ctx, newDream("wrkspc_a", "x", 1)), trove.ENOTFOUND)
		return nil
	})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.DreamGet(ctx, "wrkspc_a", b.ID)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(b, got); diff != "" {
			t.Errorf("DreamGet after update (-want +got):\n%s", diff)
		}
		return nil
	})
}

func testDreamList(t *testing.T, d storage.Driver) {
	var all []*trove.Dream
	for i := range 5 {
		x := newDream("wrkspc_a", "memstore_1", i+1)
		if i == 1 {
			x.Status = trove.DreamCompleted
		}
		if i == 2 {
			x.Status, x.ArchivedAt = trove.DreamFailed, timePtr(secs(20))
		}
		all = append(all, x)
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, x := range append(all, newDream("wrkspc_b", "memstore_9", 9)) {
			if err := tx.DreamInsert(ctx, x); err != nil {
				return err
			}
		}
		return nil
	})
	ids := func(ds []trove.Dream) []string {
		out := []string{}
		for _, x := range ds {
			out = append(out, x.ID)
		}
		return out
	}
	cases := []struct {
		name string
		p    storage.DreamListParams
		want []*trove.Dream
	}{
		{"default", storage.DreamListParams{}, []*trove.Dream{all[4], all[3], all[1], all[0]}},
		{"archived", storage.DreamListParams{IncludeArchived: true}, []*trove.Dream{all[4], all[3], all[2], all[1], all[0]}},
		{"statuses", storage.DreamListParams{Statuses: []trove.DreamStatus{trove.DreamCompleted, trove.DreamFailed}, IncludeArchived: true}, []*trove.Dream{all[2], all[1]}},
		{"after", storage.DreamListParams{CreatedAfter: timePtr(secs(4))}, []*trove.Dream{all[4]}},
		{"before", storage.DreamListParams{CreatedBefore: timePtr(secs(2))}, []*trove.Dream{all[0]}},
		{"limit+position", storage.DreamListParams{Before: &storage.Position{CreatedAt: secs(5), ID: all[4].ID}, Limit: 1}, []*trove.Dream{all[3]}},
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, c := range cases {
			c.p.WorkspaceID = "wrkspc_a"
			got, err := tx.DreamList(ctx, c.p)
			if err != nil {
				return err
			}
			var want []trove.Dream
			for _, x := range c.want {
				want = append(want, *x)
			}
			if diff := cmp.Diff(ids(want), ids(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("DreamList %s (-want +got):\n%s", c.name, diff)
			}
		}
		return nil
	})
}

// testDreamJobs: a dream's lease is its job's (storage.JobDream), read
// with the dream; an in-place dream is busy while pending or running or
// while its job's lease runs; claims of expired leases race safely.
func testDreamJobs(t *testing.T, d storage.Driver) {
	first := newDream("wrkspc_a", "memstore_1", 1)
	second := newDream("wrkspc_a", "memstore_1", 2)
	done := newDream("wrkspc_a", "memstore_1", 0)
	done.Status = trove.DreamCompleted
	inPlace := newDream("wrkspc_a", "memstore_ip", 3)
	inPlace.OutputBehavior = trove.OutputUpdateExisting
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, x := range []*trove.Dream{first, second, done, inPlace} {
			if err := tx.DreamInsert(ctx, x); err != nil {
				return err
			}
			if x != done {
				if err := tx.JobWake(ctx, storage.JobDream, x.ID, x.CreatedAt); err != nil {
					return err
				}
			}
		}
		return nil
	})
	claim := func(owner string, now int) (*trove.Dream, error) {
		var got *trove.Dream
		err := d.Write(context.Background(), func(tx storage.Tx) error {
			j, err := tx.JobClaim(context.Background(), storage.JobDream, owner, secs(now), secs(now+30))
			if err != nil {
				return err
			}
			got, err = tx.DreamGet(context.Background(), "", j.Key)
			return err
		})
		return got, err
	}
	// Oldest first; the one without a job never.
	got, err := claim("n1", 10)
	if err != nil || got.ID != first.ID || got.LeaseOwner != "n1" || !got.LeaseExpiresAt.Equal(secs(40)) || got.Attempts != 1 {
		t.Fatalf("first claim = %+v, %v; want %s leased by n1 until +40s, attempt 1", got, err, first.ID)
	}
	if got, err := claim("n2", 10); err != nil || got.ID != second.ID {
		t.Fatalf("second claim = %v, %v; want %s", got, err, second.ID)
	}
	if got, err := claim("n2", 10); err != nil || got.ID != inPlace.ID {
		t.Fatalf("third claim = %v, %v; want %s", got, err, inPlace.ID)
	}
	_, err = claim("n3", 11)
	wantCode(t, "claim with nothing claimable", err, trove.ENOTFOUND)
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		list, err := tx.DreamList(ctx, storage.DreamListParams{WorkspaceID: "wrkspc_a"})
		if err != nil {
			return err
		}
		leases := map[string]string{}
		for _, x := range list {
			leases[x.ID] = x.LeaseOwner
		}
		want := map[string]string{first.ID: "n1", second.ID: "n2", inPlace.ID: "n2", done.ID: ""}
		if diff := cmp.Diff(want, leases); diff != "" {
			t.Errorf("DreamList's leases (-want +got):\n%s", diff)
		}
		busy, err := tx.DreamInPlaceBusy(ctx, "memstore_ip", secs(11))
		if err != nil || !busy {
			t.Errorf("DreamInPlaceBusy(pending in-place) = %v, %v; want true", busy, err)
		}
		busy, err = tx.DreamInPlaceBusy(ctx, "memstore_1", secs(11))
		if err != nil || busy {
			t.Errorf("DreamInPlaceBusy(create_new dreams only) = %v, %v; want false", busy, err)
		}
		return nil
	})
	// A canceled in-place dream whose runner still holds the lease is busy
	// until the lease expires (or the job is done).
	inPlace.Status = trove.DreamCanceled
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if _, err := tx.DreamLock(ctx, "", inPlace.ID); err != nil {
			return err
		}
		return tx.DreamUpdate(ctx, inPlace)
	})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, c := range []struct {
			at   int
			want bool
		}{{39, true}, {40, false}} {
			busy, err := tx.DreamInPlaceBusy(ctx, "memstore_ip", secs(c.at))
			if err != nil || busy != c.want {
				t.Errorf("DreamInPlaceBusy(canceled, lease to 40, at %d) = %v, %v; want %v", c.at, busy, err, c.want)
			}
		}
		return nil
	})
	// An expired lease is claimable again, by one claimer only.
	var wg sync.WaitGroup
	results := make([]*trove.Dream, 8)
	for i := range results {
		wg.Go(func() {
			results[i], _ = claim("racer", 41)
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for _, r := range results {
		if r != nil {
			seen[r.ID]++
		}
	}
	want := map[string]int{first.ID: 1, second.ID: 1, inPlace.ID: 1}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("concurrent claims of expired leases (-want +got):\n%s", diff)
	}
	// Done: the dream has no lease and no job left to claim.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		return tx.JobDone(ctx, storage.JobDream, first.ID, "racer")
	})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.DreamGet(ctx, "wrkspc_a", first.ID)
		if err != nil || got.LeaseOwner != "" || got.LeaseExpiresAt != nil || got.Attempts != 0 {
			t.Errorf("DreamGet after JobDone = %+v, %v; want no lease", got, err)
		}
		return nil
	})
}
