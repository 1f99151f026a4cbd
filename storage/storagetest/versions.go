package storagetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- versions ----

func testVersionRoundTrip(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	other := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	memID := trove.NewID(trove.PrefixMemory, secs(0))
	mk := func(op trove.Operation, at int, path string, content *string, by *trove.Actor) *trove.MemoryVersion {
		v := &trove.MemoryVersion{ID: trove.NewID(trove.PrefixVersion, secs(at)), StoreID: s.ID, MemoryID: memID,
			Operation: op, Path: strPtr(path), Content: content, CreatedBy: by, CreatedAt: secs(at)}
		if content != nil {
			v.SizeBytes, v.SHA256 = intPtr(len(*content)), strPtr(sha(*content))
		}
		return v
	}
	versions := []*trove.MemoryVersion{
		mk(trove.OpCreated, 1, "/p", strPtr("one\r\n"), &trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_1"}),
		mk(trove.OpModified, 2, "/q", strPtr(""), &trove.Actor{Type: trove.ActorSession, SessionID: "sesn_1"}),
		mk(trove.OpModified, 3, "/q", strPtr("three"), &trove.Actor{Type: trove.ActorUser, UserID: "user_1"}),
		mk(trove.OpDeleted, 4, "/q", nil, &trove.Actor{Type: trove.ActorServiceAccount, ServiceAccountID: "svac_1"}),
		mk(trove.OpCreated, 5, "/r", strPtr("no actor"), nil),
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, v := range versions {
			if err := tx.VersionInsert(ctx, v); err != nil {
				return err
			}
		}
		return nil
	})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, v := range versions {
			got, err := tx.VersionGet(ctx, s.ID, v.ID, true)
			if err != nil {
				t.Fatalf("VersionGet %s: %v", v.Operation, err)
			}
			if diff := cmp.Diff(v, got); diff != "" {
				t.Errorf("VersionGet full, %s (-want +got):\n%s", v.Operation, diff)
			}
			if got.CreatedAt.Location() != time.UTC {
				t.Errorf("VersionGet: CreatedAt in %v, want UTC", got.CreatedAt.Location())
			}
			got, err = tx.VersionGet(ctx, s.ID, v.ID, false)
			if err != nil {
				t.Fatalf("VersionGet basic: %v", err)
			}
			want := *v
			want.Content = nil
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("VersionGet basic, %s (-want +got):\n%s", v.Operation, diff)
			}
		}
		_, err := tx.VersionGet(ctx, other.ID, versions[0].ID, false)
		wantCode(t, "VersionGet from another store", err, trove.ENOTFOUND)
		_, err = tx.VersionGet(ctx, s.ID, "memver_missing", false)
		wantCode(t, "VersionGet unknown", err, trove.ENOTFOUND)
		return nil
	})
}

func testVersionList(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	other := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	m1, m2 := trove.NewID(trove.PrefixMemory, secs(0)), trove.NewID(trove.PrefixMemory, secs(0))
	actors := []*trove.Actor{
		{Type: trove.ActorAPI, APIKeyID: "apikey_1"},
		{Type: trove.ActorSession, SessionID: "sesn_1"},
		{Type: trove.ActorServiceAccount, ServiceAccountID: "svac_1"},
		{Type: trove.ActorSession, SessionID: "sesn_2"},
		{Type: trove.ActorUser, UserID: "user_1"},
		nil,
	}
	ops := []trove.Operation{trove.OpCreated, trove.OpModified, trove.OpModified, trove.OpDeleted}
	var all []trove.MemoryVersion // of s, with content
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for i := range 18 {
			at := secs(i / 3) // three versions per second: ties on created_at
			for _, store := range []string{s.ID, other.ID} {
				mem := m1
				if i%2 == 1 {
					mem = m2
				}
				if store == other.ID {
					mem = "mem_other"
				}
				op := ops[i%len(ops)]
				v := trove.MemoryVersion{ID: trove.NewID(trove.PrefixVersion, at), StoreID: store, MemoryID: mem,
					Operation: op, Path: strPtr(fmt.Sprintf("/v%d", i)), CreatedBy: actors[i%len(actors)], CreatedAt: at}
				if op != trove.OpDeleted {
					c := fmt.Sprintf("content %d", i)
					v.Content, v.SizeBytes, v.SHA256 = &c, intPtr(len(c)), strPtr(sha(c))
				}
				if err := tx.VersionInsert(ctx, &v); err != nil {
					return err
				}
				if store == s.ID {
					all = append(all, v)
				}
			}
		}
		return nil
	})
	descending(all, func(v trove.MemoryVersion) (time.Time, string) { return v.CreatedAt, v.ID })
	filter := func(keep func(v trove.MemoryVersion) bool) []string {
		out := []string{}
		for _, v := range all {
			if keep(v) {
				out = append(out, v.ID)
			}
		}
		return out
	}
	by := func(typ trove.ActorType, id string) func(v trove.MemoryVersion) bool {
		return func(v trove.MemoryVersion) bool {
			if v.CreatedBy == nil || v.CreatedBy.Type != typ {
				return false
			}
			switch typ {
			case trove.ActorSession:
				return v.CreatedBy.SessionID == id
			case trove.ActorAPI:
				return v.CreatedBy.APIKeyID == id
			}
			return v.CreatedBy.ServiceAccountID == id
		}
	}
	ids := func(vs []trove.MemoryVersion) []string {
		out := []string{}
		for _, v := range vs {
			out = append(out, v.ID)
		}
		return out
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		list := func(p storage.VersionListParams) []trove.MemoryVersion {
			t.Helper()
			got, err := tx.VersionList(ctx, p)
			if err != nil {
				t.Fatalf("VersionList(%+v): %v", p, err)
			}
			return got
		}
		got := list(storage.VersionListParams{StoreID: s.ID, WithContent: true})
		if diff := cmp.Diff(all, got); diff != "" {
			t.Errorf("VersionList with content (-want +got):\n%s", diff)
		}
		for i, v := range list(storage.VersionListParams{StoreID: s.ID}) {
			want := all[i]
			want.Content = nil
			if diff := cmp.Diff(want, v); diff != "" {
				t.Errorf("VersionList basic (-want +got):\n%s", diff)
			}
		}
		rng := trove.TimeRange{GTE: timePtr(secs(1)), LTE: timePtr(secs(3))}
		inRange := func(v trove.MemoryVersion) bool {
			return !v.CreatedAt.Before(secs(1)) && !v.CreatedAt.After(secs(3))
		}
		for _, c := range []struct {
			name string
			p    storage.VersionListParams
			want []string
		}{
			{"memory", storage.VersionListParams{MemoryID: m1}, filter(func(v trove.MemoryVersion) bool { return v.MemoryID == m1 })},
			{"session", storage.VersionListParams{SessionID: "sesn_1"}, filter(by(trove.ActorSession, "sesn_1"))},
			{"api key", storage.VersionListParams{APIKeyID: "apikey_1"}, filter(by(trove.ActorAPI, "apikey_1"))},
			{"service account", storage.VersionListParams{ServiceAccountID: "svac_1"}, filter(by(trove.ActorServiceAccount, "svac_1"))},
			{"unknown session", storage.VersionListParams{SessionID: "sesn_none"}, []string{}},
			{"session id as api key", storage.VersionListParams{APIKeyID: "sesn_1"}, []string{}},
			{"operation", storage.VersionListParams{Operation: trove.OpModified},
				filter(func(v trove.MemoryVersion) bool { return v.Operation == trove.OpModified })},
			{"created range inclusive", storage.VersionListParams{CreatedAt: rng}, filter(inRange)},
			{"memory and operation", storage.VersionListParams{MemoryID: m2, Operation: trove.OpDeleted},
				filter(func(v trove.MemoryVersion) bool { return v.MemoryID == m2 && v.Operation == trove.OpDeleted })},
			{"session and range", storage.VersionListParams{SessionID: "sesn_2", CreatedAt: rng},
				filter(func(v trove.MemoryVersion) bool { return by(trove.ActorSession, "sesn_2")(v) && inRange(v) })},
			{"limit", storage.VersionListParams{Limit: 4}, ids(all[:4])},
			{"before a tie", storage.VersionListParams{Before: &storage.Position{CreatedAt: all[4].CreatedAt, ID: all[4].ID}}, ids(all[5:])},
			{"memory of another store", storage.VersionListParams{MemoryID: "mem_other"}, []string{}},
		} {
			c.p.StoreID = s.ID
			if diff := cmp.Diff(c.want, ids(list(c.p))); diff != "" {
				t.Errorf("VersionList %s (-want +got):\n%s", c.name, diff)
			}
		}
		for _, c := range []struct {
			p    storage.VersionListParams
			want []string
		}{
			{storage.VersionListParams{StoreID: s.ID}, ids(all)},
			{storage.VersionListParams{StoreID: s.ID, MemoryID: m2}, filter(func(v trove.MemoryVersion) bool { return v.MemoryID == m2 })},
			{storage.VersionListParams{StoreID: s.ID, Operation: trove.OpModified},
				filter(func(v trove.MemoryVersion) bool { return v.Operation == trove.OpModified })},
		} {
			for _, limit := range []int{1, 4, 5} {
				got := pages(t, limit, func(before *storage.Position, limit int) []trove.MemoryVersion {
					p := c.p
					p.Before, p.Limit = before, limit
					return list(p)
				}, func(v trove.MemoryVersion) storage.Position {
					return storage.Position{CreatedAt: v.CreatedAt, ID: v.ID}
				})
				if diff := cmp.Diff(c.want, ids(got)); diff != "" {
					t.Errorf("VersionList %+v paged by %d (-want +got):\n%s", c.p, limit, diff)
				}
			}
		}
		return nil
	})
}

func testVersionRedact(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	other := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	m, v1 := insertMemory(t, d, s.ID, "/secret", "password=hunter2", secs(1))
	v2 := &trove.MemoryVersion{ID: trove.NewID(trove.PrefixVersion, secs(2)), StoreID: s.ID, MemoryID: m.ID,
		Operation: trove.OpModified, Path: strPtr("/secret"), Content: strPtr("clean"),
		SizeBytes: intPtr(5), SHA256: strPtr(sha("clean")),
		CreatedBy: &trove.Actor{Type: trove.ActorSession, SessionID: "sesn_1"}, CreatedAt: secs(2)}
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.VersionInsert(ctx, v2) })

	by := trove.Actor{Type: trove.ActorUser, UserID: "user_admin"}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		return tx.VersionRedact(ctx, s.ID, v1.ID, secs(10), by)
	})
	want := *v1
	want.Path, want.Content, want.SizeBytes, want.SHA256 = nil, nil, nil, nil
	want.RedactedAt, want.RedactedBy = timePtr(secs(10)), &by
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, withContent := range []bool{true, false} {
			got, err := tx.VersionGet(ctx, s.ID, v1.ID, withContent)
			if err != nil {
				t.Fatalf("VersionGet redacted: %v", err)
			}
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("redacted version, content %v (-want +got):\n%s", withContent, diff)
			}
		}
		got, err := tx.VersionList(ctx, storage.VersionListParams{StoreID: s.ID, WithContent: true})
		if err != nil {
			t.Fatalf("VersionList: %v", err)
		}
		if diff := cmp.Diff([]trove.MemoryVersion{*v2, want}, got); diff != "" {
			t.Errorf("VersionList after redaction (-want +got):\n%s", diff)
		}
		// The memory itself is untouched.
		if got, err := tx.MemoryGet(ctx, s.ID, m.ID, true); err != nil || *got.Content != *m.Content {
			t.Errorf("MemoryGet after redacting a version: %v, %v", got, err)
		}
		return nil
	})
	err := d.Write(ctx, func(tx storage.Tx) error { return tx.VersionRedact(ctx, other.ID, v2.ID, secs(11), by) })
	wantCode(t, "VersionRedact from another store", err, trove.ENOTFOUND)
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.VersionRedact(ctx, s.ID, "memver_missing", secs(11), by) })
	wantCode(t, "VersionRedact unknown", err, trove.ENOTFOUND)
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.VersionGet(ctx, s.ID, v2.ID, true)
		if err != nil {
			t.Fatalf("VersionGet: %v", err)
		}
		if diff := cmp.Diff(v2, got); diff != "" {
			t.Errorf("version after a failed redaction (-want +got):\n%s", diff)
		}
		return nil
	})
}

func testDeleteExpired(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	other := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	cutoff := secs(100)
	version := func(storeID, memID string, at time.Time, op trove.Operation) *trove.MemoryVersion {
		v := &trove.MemoryVersion{ID: trove.NewID(trove.PrefixVersion, at), StoreID: storeID, MemoryID: memID,
			Operation: op, Path: strPtr("/p"), CreatedAt: at}
		if op != trove.OpDeleted {
			v.Content, v.SizeBytes, v.SHA256 = strPtr("c"), intPtr(1), strPtr(sha("c"))
		}
		return v
	}
	// live: an old memory whose current version is old (kept) and whose
	// previous version is old (deleted).
	live, liveV1 := insertMemory(t, d, s.ID, "/live", "v1", secs(1))
	liveV2 := version(s.ID, live.ID, secs(2), trove.OpModified)
	// gone: a deleted memory; its old versions all go, the deletion's too.
	gone, goneV1 := insertMemory(t, d, s.ID, "/gone", "v1", secs(3))
	goneV2 := version(s.ID, gone.ID, secs(4), trove.OpDeleted)
	// fresh: versions at and after the cutoff stay; one just before goes.
	freshOld := version(s.ID, "mem_fresh", cutoff.Add(-time.Microsecond), trove.OpCreated)
	freshAt := version(s.ID, "mem_fresh", cutoff, trove.OpModified)
	freshNew := version(s.ID, "mem_fresh", secs(200), trove.OpModified)
	// another store's old, non-current version goes too.
	otherMem, otherV1 := insertMemory(t, d, other.ID, "/o", "o1", secs(5))
	otherV2 := version(other.ID, otherMem.ID, secs(6), trove.OpModified)
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, v := range []*trove.MemoryVersion{liveV2, goneV2, freshOld, freshAt, freshNew, otherV2} {
			if err := tx.VersionInsert(ctx, v); err != nil {
				return err
			}
		}
		// The memories now point at their newest version; gone is deleted.
		for _, u := range []struct {
			m *trove.Memory
			v *trove.MemoryVersion
		}{{live, liveV2}, {otherMem, otherV2}} {
			m := *u.m
			m.VersionID, m.UpdatedAt = u.v.ID, u.v.CreatedAt
			if err := tx.MemoryUpdate(ctx, &m); err != nil {
				return err
			}
		}
		return tx.MemoryDelete(ctx, s.ID, gone.ID)
	})
	var n int
	write(t, d, func(ctx context.Context, tx storage.Tx) (err error) {
		n, err = tx.VersionDeleteExpired(ctx, cutoff)
		return err
	})
	deleted := []*trove.MemoryVersion{liveV1, goneV1, goneV2, freshOld, otherV1}
	kept := []*trove.MemoryVersion{liveV2, freshAt, freshNew, otherV2}
	if n != len(deleted) {
		t.Errorf("VersionDeleteExpired deleted %d, want %d", n, len(deleted))
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, v := range deleted {
			_, err := tx.VersionGet(ctx, v.StoreID, v.ID, false)
			wantCode(t, fmt.Sprintf("VersionGet of expired %s of %s at %v", v.Operation, v.MemoryID, v.CreatedAt), err, trove.ENOTFOUND)
		}
		for _, v := range kept {
			if _, err := tx.VersionGet(ctx, v.StoreID, v.ID, false); err != nil {
				t.Errorf("VersionGet of kept %s of %s at %v: %v", v.Operation, v.MemoryID, v.CreatedAt, err)
			}
		}
		if _, err := tx.MemoryGet(ctx, s.ID, live.ID, true); err != nil {
			t.Errorf("live memory: %v", err)
		}
		return nil
	})
	write(t, d, func(ctx context.Context, tx storage.Tx) (err error) {
		n, err = tx.VersionDeleteExpired(ctx, cutoff)
		return err
	})
	if n != 0 {
		t.Errorf("second VersionDeleteExpired deleted %d, want 0", n)
	}
}
