package storagetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- keys ----

func testKeys(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	mk := func(ws string, at int) *trove.APIKey {
		return &trove.APIKey{ID: trove.NewID(trove.PrefixAPIKey, secs(at)), WorkspaceID: ws, Name: "key " + ws,
			Hint: fmt.Sprintf("…%04d", at), CreatedAt: secs(at)}
	}
	k1, k2, k3 := mk("wrkspc_a", 1), mk("wrkspc_b", 2), mk("wrkspc_a", 3)
	k4 := mk("wrkspc_a", 3) // same created_at as k3: ID order
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, k := range []*trove.APIKey{k4, k3, k1, k2} { // inserted out of order
			if err := tx.KeyInsert(ctx, k, hash("secret "+k.ID)); err != nil {
				return err
			}
		}
		return nil
	})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.KeyGetByHash(ctx, hash("secret "+k1.ID))
		if err != nil {
			t.Fatalf("KeyGetByHash: %v", err)
		}
		if diff := cmp.Diff(k1, got); diff != "" {
			t.Errorf("KeyGetByHash (-want +got):\n%s", diff)
		}
		_, err = tx.KeyGetByHash(ctx, hash("wrong secret"))
		wantCode(t, "KeyGetByHash unknown", err, trove.ENOTFOUND)
		for _, c := range []struct {
			ws   string
			want []trove.APIKey
		}{
			{"wrkspc_a", []trove.APIKey{*k1, *k3, *k4}},
			{"", []trove.APIKey{*k1, *k2, *k3, *k4}},
			{"wrkspc_none", nil},
		} {
			got, err := tx.KeyList(ctx, c.ws)
			if err != nil {
				t.Fatalf("KeyList(%q): %v", c.ws, err)
			}
			if diff := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("KeyList(%q) (-want +got):\n%s", c.ws, diff)
			}
		}
		return nil
	})
	// The secret hash is unique.
	dup := mk("wrkspc_a", 4)
	if err := d.Write(ctx, func(tx storage.Tx) error { return tx.KeyInsert(ctx, dup, hash("secret "+k1.ID)) }); err == nil {
		t.Error("KeyInsert with a used secret hash succeeded")
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.KeyRevoke(ctx, k1.ID, secs(20)) })
	err := d.Write(ctx, func(tx storage.Tx) error { return tx.KeyRevoke(ctx, "apikey_missing", secs(20)) })
	wantCode(t, "KeyRevoke unknown", err, trove.ENOTFOUND)
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.KeyGetByHash(ctx, hash("secret "+k1.ID))
		if err != nil {
			t.Fatalf("KeyGetByHash of a revoked key: %v", err)
		}
		want := *k1
		want.RevokedAt = timePtr(secs(20))
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("revoked key (-want +got):\n%s", diff)
		}
		if got, err := tx.KeyGetByHash(ctx, hash("secret "+k3.ID)); err != nil || got.RevokedAt != nil {
			t.Errorf("other key after a revoke: %+v, %v; want not revoked", got, err)
		}
		return nil
	})
}

// testKeysLock: concurrent Writes that each insert a key only when KeyList
// finds none, after KeysLock, insert exactly one, and every other one sees
// it. The writers start together and read the keys a few more times between
// the check and the insert, so that without the lock (on a driver whose
// Writes run at the same time) several would pass the check.
func testKeysLock(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	const writers = 8
	type result struct {
		inserted bool
		seen     string // the key found, when not inserted
		err      error
	}
	results := make([]result, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			k := &trove.APIKey{ID: trove.NewID(trove.PrefixAPIKey, secs(w)), WorkspaceID: "wrkspc_a", Name: fmt.Sprintf("writer %d", w),
				Hint: fmt.Sprintf("%04d", w), CreatedAt: secs(w)}
			var r result
			r.err = d.Write(ctx, func(tx storage.Tx) error {
				r = result{}
				if err := tx.KeysLock(ctx); err != nil {
					return err
				}
				for range 3 {
					ks, err := tx.KeyList(ctx, "")
					if err != nil {
						return err
					}
					if len(ks) > 0 {
						r.seen = ks[0].ID
						return nil
					}
				}
				r.inserted = true
				return tx.KeyInsert(ctx, k, hash("secret "+k.ID))
			})
			results[w] = r
		}()
	}
	close(start)
	wg.Wait()
	var inserted []int
	for w, r := range results {
		if r.err != nil {
			t.Errorf("writer %d: %v", w, r.err)
		}
		if r.inserted {
			inserted = append(inserted, w)
		}
	}
	if len(inserted) != 1 {
		t.Fatalf("writers %v inserted a key; want exactly one", inserted)
	}
	var keys []trove.APIKey
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		var err error
		keys, err = tx.KeyList(ctx, "")
		return err
	})
	if len(keys) != 1 {
		t.Fatalf("KeyList = %d keys, want 1", len(keys))
	}
	for w, r := range results {
		if !r.inserted && r.seen != keys[0].ID {
			t.Errorf("writer %d saw key %q, want %s", w, r.seen, keys[0].ID)
		}
	}
}
