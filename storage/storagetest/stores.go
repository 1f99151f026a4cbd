package storagetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- stores ----

func testStoreRoundTrip(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	zone := time.FixedZone("UTC+2", 2*3600)
	full := &trove.Store{
		ID: trove.NewID(trove.PrefixStore, base), WorkspaceID: "wrkspc_a", Name: "Notes ✓", Description: "about",
		Metadata:  map[string]string{"k": "v", "é": "ü\n"},
		CreatedAt: secs(0).In(zone), UpdatedAt: secs(1).In(zone), ArchivedAt: timePtr(secs(2).In(zone)),
	}
	bare := &trove.Store{ID: trove.NewID(trove.PrefixStore, base), WorkspaceID: "wrkspc_a", Name: "bare",
		CreatedAt: secs(3), UpdatedAt: secs(3)}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.StoreInsert(ctx, full); err != nil {
			return err
		}
		return tx.StoreInsert(ctx, bare)
	})

	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.StoreGet(ctx, "wrkspc_a", full.ID)
		if err != nil {
			t.Fatalf("StoreGet: %v", err)
		}
		if diff := cmp.Diff(full, got); diff != "" {
			t.Errorf("StoreGet (-want +got):\n%s", diff)
		}
		for name, tm := range map[string]time.Time{"CreatedAt": got.CreatedAt, "UpdatedAt": got.UpdatedAt, "ArchivedAt": *got.ArchivedAt} {
			if tm.Location() != time.UTC {
				t.Errorf("%s is in %v, want UTC", name, tm.Location())
			}
		}
		got, err = tx.StoreGet(ctx, "wrkspc_a", bare.ID)
		if err != nil {
			t.Fatalf("StoreGet bare: %v", err)
		}
		if got.Metadata == nil || len(got.Metadata) != 0 || got.Description != "" || got.ArchivedAt != nil {
			t.Errorf("bare store: metadata %#v description %q archived %v; want empty non-nil map, \"\", nil",
				got.Metadata, got.Description, got.ArchivedAt)
		}
		_, err = tx.StoreGet(ctx, "wrkspc_b", full.ID)
		wantCode(t, "StoreGet from another workspace", err, trove.ENOTFOUND)
		_, err = tx.StoreGet(ctx, "wrkspc_a", "memstore_missing")
		wantCode(t, "StoreGet unknown", err, trove.ENOTFOUND)
		return nil
	})

	// StoreLock behaves as StoreGet.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.StoreLock(ctx, "wrkspc_a", full.ID)
		if err != nil {
			t.Fatalf("StoreLock: %v", err)
		}
		if diff := cmp.Diff(full, got); diff != "" {
			t.Errorf("StoreLock (-want +got):\n%s", diff)
		}
		_, err = tx.StoreLock(ctx, "wrkspc_b", full.ID)
		wantCode(t, "StoreLock from another workspace", err, trove.ENOTFOUND)
		_, err = tx.StoreLock(ctx, "wrkspc_a", "memstore_missing")
		wantCode(t, "StoreLock unknown", err, trove.ENOTFOUND)
		return nil
	})

	// StoreUpdate replaces the mutable fields only.
	upd := *bare
	upd.Name, upd.Description = "renamed", "now described"
	upd.Metadata = map[string]string{"a": "1"}
	upd.UpdatedAt, upd.ArchivedAt = secs(10), timePtr(secs(11))
	upd.CreatedAt = secs(99) // must not be written
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.StoreUpdate(ctx, &upd) })
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.StoreGet(ctx, "wrkspc_a", bare.ID)
		if err != nil {
			t.Fatalf("StoreGet after update: %v", err)
		}
		want := upd
		want.CreatedAt = bare.CreatedAt
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("after StoreUpdate (-want +got):\n%s", diff)
		}
		return nil
	})
	err := d.Write(ctx, func(tx storage.Tx) error {
		return tx.StoreUpdate(ctx, &trove.Store{ID: "memstore_missing", Name: "x", UpdatedAt: secs(1)})
	})
	wantCode(t, "StoreUpdate unknown", err, trove.ENOTFOUND)
}

func testStoreList(t *testing.T, d storage.Driver) {
	var all []trove.Store // wrkspc_a, archived included
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		add := func(ws string, at time.Time, archived bool) error {
			s := newStore(ws, at)
			if archived {
				s.ArchivedAt = timePtr(at.Add(time.Hour))
			}
			if ws == "wrkspc_a" {
				all = append(all, *s)
			}
			return tx.StoreInsert(ctx, s)
		}
		// Three stores share a created_at (the ID breaks the tie), one is
		// archived, and another workspace interleaves.
		for _, c := range []struct {
			ws       string
			at       int
			archived bool
		}{
			{"wrkspc_a", 5, false}, {"wrkspc_a", 1, false}, {"wrkspc_b", 3, false}, {"wrkspc_a", 3, false},
			{"wrkspc_a", 3, true}, {"wrkspc_a", 3, false}, {"wrkspc_a", 7, false}, {"wrkspc_b", 7, false},
			{"wrkspc_a", 9, true},
		} {
			if err := add(c.ws, secs(c.at), c.archived); err != nil {
				return err
			}
		}
		return nil
	})
	descending(all, func(s trove.Store) (time.Time, string) { return s.CreatedAt, s.ID })
	live := slices.DeleteFunc(slices.Clone(all), func(s trove.Store) bool { return s.ArchivedAt != nil })
	ids := func(ss []trove.Store) []string {
		out := []string{}
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	between := func(ss []trove.Store, lo, hi int) []trove.Store {
		return slices.DeleteFunc(slices.Clone(ss), func(s trove.Store) bool {
			return s.CreatedAt.Before(secs(lo)) || s.CreatedAt.After(secs(hi))
		})
	}

	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		list := func(p storage.StoreListParams) []trove.Store {
			t.Helper()
			got, err := tx.StoreList(ctx, p)
			if err != nil {
				t.Fatalf("StoreList(%+v): %v", p, err)
			}
			return got
		}
		got := list(storage.StoreListParams{WorkspaceID: "wrkspc_a", IncludeArchived: true})
		if diff := cmp.Diff(all, got); diff != "" {
			t.Errorf("StoreList all (-want +got):\n%s", diff)
		}
		for _, c := range []struct {
			name string
			p    storage.StoreListParams
			want []trove.Store
		}{
			{"live only", storage.StoreListParams{WorkspaceID: "wrkspc_a"}, live},
			{"limit", storage.StoreListParams{WorkspaceID: "wrkspc_a", IncludeArchived: true, Limit: 2}, all[:2]},
			{"created range inclusive", storage.StoreListParams{WorkspaceID: "wrkspc_a", IncludeArchived: true,
				CreatedAt: trove.TimeRange{GTE: timePtr(secs(3)), LTE: timePtr(secs(7))}}, between(all, 3, 7)},
			{"gte only", storage.StoreListParams{WorkspaceID: "wrkspc_a",
				CreatedAt: trove.TimeRange{GTE: timePtr(secs(5))}}, between(live, 5, 100)},
			{"lte only", storage.StoreListParams{WorkspaceID: "wrkspc_a",
				CreatedAt: trove.TimeRange{LTE: timePtr(secs(3))}}, between(live, 0, 3)},
			{"before a tie", storage.StoreListParams{WorkspaceID: "wrkspc_a", IncludeArchived: true,
				Before: &storage.Position{CreatedAt: all[3].CreatedAt, ID: all[3].ID}}, all[4:]},
			{"other workspace", storage.StoreListParams{WorkspaceID: "wrkspc_c"}, nil},
		} {
			if diff := cmp.Diff(ids(c.want), ids(list(c.p))); diff != "" {
				t.Errorf("StoreList %s (-want +got):\n%s", c.name, diff)
			}
		}
		if got := list(storage.StoreListParams{WorkspaceID: "wrkspc_b"}); len(got) != 2 {
			t.Errorf("StoreList wrkspc_b: %d stores, want 2", len(got))
		}
		for _, limit := range []int{1, 2, 3} {
			for _, archived := range []bool{false, true} {
				got := pages(t, limit, func(before *storage.Position, limit int) []trove.Store {
					return list(storage.StoreListParams{WorkspaceID: "wrkspc_a", IncludeArchived: archived, Before: before, Limit: limit})
				}, func(s trove.Store) storage.Position { return storage.Position{CreatedAt: s.CreatedAt, ID: s.ID} })
				want := live
				if archived {
					want = all
				}
				if diff := cmp.Diff(ids(want), ids(got)); diff != "" {
					t.Errorf("StoreList paged by %d (archived %v) (-want +got):\n%s", limit, archived, diff)
				}
			}
		}
		return nil
	})
}

func testStoreDelete(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	a := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	b := insertStore(t, d, newStore("wrkspc_a", secs(1)))
	ma, va := insertMemory(t, d, a.ID, "/x", "in a", secs(2))
	mb, vb := insertMemory(t, d, b.ID, "/x", "in b", secs(3))
	// A deleted memory's versions go with the store too.
	ma2, va2 := insertMemory(t, d, a.ID, "/gone", "gone", secs(4))
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryDelete(ctx, a.ID, ma2.ID) })

	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.StoreDelete(ctx, a.ID) })
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.StoreGet(ctx, "wrkspc_a", a.ID)
		wantCode(t, "StoreGet deleted", err, trove.ENOTFOUND)
		_, err = tx.MemoryGet(ctx, a.ID, ma.ID, false)
		wantCode(t, "MemoryGet of deleted store", err, trove.ENOTFOUND)
		for _, v := range []*trove.MemoryVersion{va, va2} {
			_, err = tx.VersionGet(ctx, a.ID, v.ID, false)
			wantCode(t, "VersionGet of deleted store", err, trove.ENOTFOUND)
		}
		if vs, err := tx.VersionList(ctx, storage.VersionListParams{StoreID: a.ID}); err != nil || len(vs) != 0 {
			t.Errorf("VersionList of deleted store = %d versions, %v; want none", len(vs), err)
		}
		if vs, err := tx.VersionList(ctx, storage.VersionListParams{MemoryID: ma2.ID}); err != nil || len(vs) != 0 {
			t.Errorf("VersionList of a deleted store's memory = %d versions, %v; want none", len(vs), err)
		}
		if n, err := tx.MemoryCount(ctx, a.ID); err != nil || n != 0 {
			t.Errorf("MemoryCount of deleted store = %d, %v; want 0", n, err)
		}
		// The other store is untouched.
		if _, err := tx.StoreGet(ctx, "wrkspc_a", b.ID); err != nil {
			t.Errorf("StoreGet other store: %v", err)
		}
		if _, err := tx.MemoryGet(ctx, b.ID, mb.ID, true); err != nil {
			t.Errorf("MemoryGet other store: %v", err)
		}
		if _, err := tx.VersionGet(ctx, b.ID, vb.ID, true); err != nil {
			t.Errorf("VersionGet other store: %v", err)
		}
		return nil
	})
	err := d.Write(ctx, func(tx storage.Tx) error { return tx.StoreDelete(ctx, a.ID) })
	wantCode(t, "StoreDelete twice", err, trove.ENOTFOUND)
}
