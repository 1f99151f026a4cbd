package storagetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- sessions ----

func testSessions(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	attach := func(id, name string, access trove.Access) trove.SessionStore {
		return trove.SessionStore{StoreID: id, Access: access, Name: name, Description: "about " + name,
			Instructions: "use " + name, MountPath: "/mnt/memory/" + trove.Slug(name)}
	}
	// Attachment order is kept, whatever the IDs' order.
	sa, sb, sc := "memstore_b", "memstore_c", "memstore_a"
	mk := func(ws string, at int, stores ...trove.SessionStore) *trove.Session {
		return &trove.Session{ID: trove.NewID(trove.PrefixSession, secs(at)), WorkspaceID: ws, Stores: stores,
			CreatedBy: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_1"}, CreatedAt: secs(at)}
	}
	s1 := mk("wrkspc_a", 1, attach(sa, "User Prefs", trove.AccessReadWrite), attach(sb, "Team", trove.AccessReadOnly),
		attach(sc, "Z last", trove.AccessReadWrite))
	s2 := mk("wrkspc_a", 2)
	s3 := mk("wrkspc_b", 2, attach(sa, "User Prefs", trove.AccessReadOnly))
	s4 := mk("wrkspc_a", 1, attach(sa, "Prefs", trove.AccessReadOnly)) // ties with s1
	s4.CreatedBy = trove.Actor{Type: trove.ActorUser, UserID: "user_1"}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, s := range []*trove.Session{s1, s2, s3, s4} {
			if err := tx.SessionInsert(ctx, s, hash("token "+s.ID)); err != nil {
				return err
			}
		}
		return nil
	})
	opts := cmpopts.EquateEmpty()
	ids := func(ss []trove.Session) []string {
		out := []string{}
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, s := range []*trove.Session{s1, s2, s4} {
			got, err := tx.SessionGet(ctx, "wrkspc_a", s.ID)
			if err != nil {
				t.Fatalf("SessionGet: %v", err)
			}
			if diff := cmp.Diff(s, got, opts); diff != "" {
				t.Errorf("SessionGet (-want +got):\n%s", diff)
			}
			got, err = tx.SessionGetByTokenHash(ctx, hash("token "+s.ID))
			if err != nil {
				t.Fatalf("SessionGetByTokenHash: %v", err)
			}
			if diff := cmp.Diff(s, got, opts); diff != "" {
				t.Errorf("SessionGetByTokenHash (-want +got):\n%s", diff)
			}
		}
		_, err := tx.SessionGet(ctx, "wrkspc_b", s1.ID)
		wantCode(t, "SessionGet from another workspace", err, trove.ENOTFOUND)
		_, err = tx.SessionGet(ctx, "wrkspc_a", "sesn_missing")
		wantCode(t, "SessionGet unknown", err, trove.ENOTFOUND)
		_, err = tx.SessionGetByTokenHash(ctx, hash("wrong token"))
		wantCode(t, "SessionGetByTokenHash unknown", err, trove.ENOTFOUND)

		wsA := []trove.Session{*s1, *s2, *s4}
		descending(wsA, func(s trove.Session) (time.Time, string) { return s.CreatedAt, s.ID })
		got, err := tx.SessionList(ctx, storage.SessionListParams{WorkspaceID: "wrkspc_a"})
		if err != nil {
			t.Fatalf("SessionList: %v", err)
		}
		if diff := cmp.Diff(wsA, got, opts); diff != "" {
			t.Errorf("SessionList (-want +got):\n%s", diff)
		}
		withA := slices.DeleteFunc(slices.Clone(wsA), func(s trove.Session) bool {
			return !slices.ContainsFunc(s.Stores, func(st trove.SessionStore) bool { return st.StoreID == sa })
		})
		for _, c := range []struct {
			name string
			p    storage.SessionListParams
			want []trove.Session
		}{
			{"by store", storage.SessionListParams{WorkspaceID: "wrkspc_a", StoreID: sa}, withA},
			{"by store in another workspace", storage.SessionListParams{WorkspaceID: "wrkspc_b", StoreID: sa}, []trove.Session{*s3}},
			{"by unattached store", storage.SessionListParams{WorkspaceID: "wrkspc_a", StoreID: "memstore_none"}, nil},
			{"limit", storage.SessionListParams{WorkspaceID: "wrkspc_a", Limit: 1}, wsA[:1]},
			{"other workspace", storage.SessionListParams{WorkspaceID: "wrkspc_c"}, nil},
		} {
			got, err := tx.SessionList(ctx, c.p)
			if err != nil {
				t.Fatalf("SessionList %s: %v", c.name, err)
			}
			if diff := cmp.Diff(c.want, got, opts); diff != "" {
				t.Errorf("SessionList %s (-want +got):\n%s", c.name, diff)
			}
		}
		for _, storeID := range []string{"", sa} {
			paged := pages(t, 1, func(before *storage.Position, limit int) []trove.Session {
				got, err := tx.SessionList(ctx, storage.SessionListParams{WorkspaceID: "wrkspc_a", StoreID: storeID, Before: before, Limit: limit})
				if err != nil {
					t.Fatalf("SessionList: %v", err)
				}
				return got
			}, func(s trove.Session) storage.Position { return storage.Position{CreatedAt: s.CreatedAt, ID: s.ID} })
			want := wsA
			if storeID != "" {
				want = withA
			}
			if diff := cmp.Diff(ids(want), ids(paged)); diff != "" {
				t.Errorf("SessionList paged, store %q (-want +got):\n%s", storeID, diff)
			}
		}
		return nil
	})

	// SessionEnd sets ended_at once; ENOTFOUND for an unknown session.
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.SessionEnd(ctx, s1.ID, secs(30)) })
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.SessionEnd(ctx, s1.ID, secs(40)) })
	err := d.Write(ctx, func(tx storage.Tx) error { return tx.SessionEnd(ctx, "sesn_missing", secs(30)) })
	wantCode(t, "SessionEnd unknown", err, trove.ENOTFOUND)
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.SessionGet(ctx, "wrkspc_a", s1.ID)
		if err != nil {
			t.Fatalf("SessionGet: %v", err)
		}
		if got.EndedAt == nil || !got.EndedAt.Equal(secs(30)) {
			t.Errorf("EndedAt = %v, want %v (the first SessionEnd)", got.EndedAt, secs(30))
		}
		if got, err := tx.SessionGet(ctx, "wrkspc_a", s2.ID); err != nil || got.EndedAt != nil {
			t.Errorf("other session: %+v, %v; want not ended", got, err)
		}
		return nil
	})
}
