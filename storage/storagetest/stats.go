package storagetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// testStoreStats: StoreStats's counters follow every change to memories and
// versions in the same transaction (inserts, batches, updates of size,
// deletes, retention, a rolled-back Write), and WorkspaceStoreCount follows
// StoreInsert and StoreDelete.
func testStoreStats(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	other := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	insertStore(t, d, newStore("wrkspc_b", secs(0)))
	want := func(what string, storeID string, w storage.StoreStats) {
		t.Helper()
		read(t, d, func(ctx context.Context, tx storage.Tx) error {
			got, err := tx.StoreStats(ctx, storeID)
			if err != nil {
				return err
			}
			if diff := gocmp.Diff(w, got); diff != "" {
				t.Errorf("%s: StoreStats (-want +got):\n%s", what, diff)
			}
			return nil
		})
	}
	wantWS := func(what string, w map[string]int) {
		t.Helper()
		read(t, d, func(ctx context.Context, tx storage.Tx) error {
			got := map[string]int{}
			for ws := range w {
				n, err := tx.WorkspaceStoreCount(ctx, ws)
				if err != nil {
					return err
				}
				got[ws] = n
			}
			if diff := gocmp.Diff(w, got); diff != "" {
				t.Errorf("%s: WorkspaceStoreCount (-want +got):\n%s", what, diff)
			}
			return nil
		})
	}
	want("a new store", s.ID, storage.StoreStats{})
	wantWS("three stores", map[string]int{"wrkspc_a": 2, "wrkspc_b": 1, "wrkspc_none": 0})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.StoreStats(ctx, "memstore_unknown")
		wantCode(t, "StoreStats(unknown store)", err, trove.ENOTFOUND)
		return nil
	})

	a, _ := insertMemory(t, d, s.ID, "/a", "hello", secs(1))
	insertMemory(t, d, s.ID, "/b", "wörld", secs(2)) // 6 bytes
	want("two inserts", s.ID, storage.StoreStats{MemoryCount: 2, ContentBytes: 11, VersionCount: 2})
	want("the other store", other.ID, storage.StoreStats{})

	// A Write whose fn fails leaves no trace in the counters.
	errFn := errors.New("fn failed")
	ctx := context.Background()
	if err := d.Write(ctx, func(tx storage.Tx) error {
		m, v := newMemory(s.ID, "/rolled", strings.Repeat("r", 100), secs(3))
		if err := tx.MemoryInsert(ctx, m); err != nil {
			return err
		}
		if err := tx.VersionInsert(ctx, v); err != nil {
			return err
		}
		got, err := tx.StoreStats(ctx, s.ID)
		if err != nil {
			return err
		}
		if w := (storage.StoreStats{MemoryCount: 3, ContentBytes: 111, VersionCount: 3}); got != w {
			t.Errorf("StoreStats inside the inserting Write = %+v, want %+v", got, w)
		}
		return errFn
	}); !errors.Is(err, errFn) {
		t.Fatalf("Write = %v, want the fn's error", err)
	}
	want("a rolled-back Write", s.ID, storage.StoreStats{MemoryCount: 2, ContentBytes: 11, VersionCount: 2})

	// An update counts the size difference; one that keeps the size, none.
	for i, c := range []string{"hello, world", "HELLO, WORLD", "hi"} {
		upd := *a
		upd.Content, upd.SizeBytes, upd.SHA256 = strPtr(c), len(c), sha(c)
		upd.VersionID = trove.NewID(trove.PrefixVersion, secs(4+i))
		write(t, d, func(ctx context.Context, tx storage.Tx) error {
			if err := tx.MemoryUpdate(ctx, &upd); err != nil {
				return err
			}
			return tx.VersionInsert(ctx, &trove.MemoryVersion{ID: upd.VersionID, StoreID: s.ID, MemoryID: a.ID, Operation: trove.OpModified,
				Path: strPtr(upd.Path), Content: strPtr(c), SizeBytes: intPtr(len(c)), SHA256: strPtr(sha(c)), CreatedAt: secs(4 + i)})
		})
		a = &upd
	}
	want("three updates", s.ID, storage.StoreStats{MemoryCount: 2, ContentBytes: 8, VersionCount: 5})

	// A batch counts its memories, bytes and versions.
	var ms []*trove.Memory
	var vs []*trove.MemoryVersion
	for _, p := range []string{"/c1", "/c2", "/c3"} {
		m, v := newMemory(s.ID, p, "batch", secs(10))
		ms, vs = append(ms, m), append(vs, v)
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryInsertBatch(ctx, ms, vs) })
	want("a batch", s.ID, storage.StoreStats{MemoryCount: 5, ContentBytes: 23, VersionCount: 8})

	// A delete takes the memory and its bytes off; its versions stay.
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryDelete(ctx, s.ID, ms[0].ID) })
	want("a delete", s.ID, storage.StoreStats{MemoryCount: 4, ContentBytes: 18, VersionCount: 8})

	// Retention takes its versions off: all but the live memories' current
	// ones are older than the cutoff.
	var n int
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		var err error
		n, err = tx.VersionDeleteExpired(ctx, secs(100))
		return err
	})
	if n != 4 {
		t.Fatalf("VersionDeleteExpired deleted %d, want 4", n)
	}
	want("retention", s.ID, storage.StoreStats{MemoryCount: 4, ContentBytes: 18, VersionCount: 4})

	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.StoreDelete(ctx, s.ID) })
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.StoreStats(ctx, s.ID)
		wantCode(t, "StoreStats(deleted store)", err, trove.ENOTFOUND)
		return nil
	})
	wantWS("a store deleted", map[string]int{"wrkspc_a": 1, "wrkspc_b": 1})
	// The count is serialized in a Write (storage.Tx.WorkspaceStoreCount);
	// it also reads inside one.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		n, err := tx.WorkspaceStoreCount(ctx, "wrkspc_a")
		if err == nil && n != 1 {
			t.Errorf("WorkspaceStoreCount in a Write = %d, want 1", n)
		}
		return err
	})
}
