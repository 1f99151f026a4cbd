package storagetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- console sessions ----

// testConsoleSessions: a console session round-trips by token hash (the
// hash is unique), Delete removes one and tolerates an absent one, and
// DeleteExpired removes exactly the expired sessions and those of a
// revoked key.
func testConsoleSessions(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	mk := func(tok, key string, expires int) *storage.ConsoleSession {
		return &storage.ConsoleSession{TokenHash: hash(tok), KeyID: key, WorkspaceID: "wrkspc_a", CreatedAt: secs(0), ExpiresAt: secs(expires)}
	}
	s1, s2, s3, s4 := mk("t1", "apikey_a", 100), mk("t2", "apikey_a", 5), mk("t3", "apikey_b", 100), mk("t4", "apikey_c", 100)
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, s := range []*storage.ConsoleSession{s1, s2, s3, s4} {
			if err := tx.ConsoleSessionInsert(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err := d.Write(ctx, func(tx storage.Tx) error { return tx.ConsoleSessionInsert(ctx, mk("t1", "apikey_z", 1)) }); err == nil {
		t.Error("ConsoleSessionInsert with a used token hash succeeded")
	}
	get := func(tok string) (*storage.ConsoleSession, error) {
		var got *storage.ConsoleSession
		err := d.Read(ctx, func(tx storage.Tx) error {
			var err error
			got, err = tx.ConsoleSessionGet(ctx, hash(tok))
			return err
		})
		return got, err
	}
	got, err := get("t1")
	if err != nil {
		t.Fatalf("ConsoleSessionGet: %v", err)
	}
	if diff := cmp.Diff(s1, got); diff != "" {
		t.Errorf("ConsoleSessionGet (-want +got):\n%s", diff)
	}
	_, err = get("unknown")
	wantCode(t, "ConsoleSessionGet unknown", err, trove.ENOTFOUND)

	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.ConsoleSessionDelete(ctx, hash("t4")); err != nil {
			return err
		}
		return tx.ConsoleSessionDelete(ctx, hash("absent"))
	})
	// Expired at 10s: s2; revoked key apikey_b: s3.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		return tx.ConsoleSessionDeleteExpired(ctx, secs(10), "apikey_b")
	})
	for _, c := range []struct {
		tok  string
		live bool
	}{{"t1", true}, {"t2", false}, {"t3", false}, {"t4", false}} {
		_, err := get(c.tok)
		if c.live && err != nil {
			t.Errorf("session %s: %v, want it kept", c.tok, err)
		}
		if !c.live {
			wantCode(t, "session "+c.tok+" after delete", err, trove.ENOTFOUND)
		}
	}
	// No revoked key: only expiry counts, and a key ID "" matches nothing.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		return tx.ConsoleSessionDeleteExpired(ctx, secs(99), "")
	})
	if _, err := get("t1"); err != nil {
		t.Errorf("unexpired session after DeleteExpired: %v", err)
	}
}
