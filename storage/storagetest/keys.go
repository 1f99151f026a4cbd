package storagetest

import (
	"context"
	"fmt"
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
