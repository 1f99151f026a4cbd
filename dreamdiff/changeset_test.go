package dreamdiff_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/dreamdiff"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// newService is core over a fresh SQLite database and a key's principal.
func newService(t *testing.T) (*core.Service, context.Context) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := core.New(db, core.Options{})
	k, _, err := svc.CreateKey(context.Background(), "wrkspc_diff", "test")
	if err != nil {
		t.Fatal(err)
	}
	return svc, trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: "wrkspc_diff", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}})
}

// fill creates a store holding files (path → content).
func fill(t *testing.T, ctx context.Context, svc *core.Service, name string, files map[string]string) *trove.Store {
	t.Helper()
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		if _, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func ptr(s string) *string { return &s }

// TestChangeSet: what a dream changed, by path, for each output behavior;
// the runner's own tests (dreamrun) check it after real runs.
func TestChangeSet(t *testing.T) {
	t.Parallel()
	svc, ctx := newService(t)
	in := fill(t, ctx, svc, "input", map[string]string{"/same.md": "same", "/edited.md": "old", "/gone.md": "bye"})
	out := fill(t, ctx, svc, "output", map[string]string{"/same.md": "same", "/edited.md": "new", "/added.md": "hi"})

	// In place: only what the dream's session wrote counts, from the
	// version before its first write to the memory now.
	place := fill(t, ctx, svc, "in place", map[string]string{"/a.md": "a0", "/b.md": "b0", "/untouched.md": "u"})
	sess, token, err := svc.CreateSession(ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: place.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	sctx := trove.WithPrincipal(context.Background(), p)
	byPath := map[string]string{}
	pg, err := svc.ListMemories(ctx, place.ID, trove.ListMemoriesParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range pg.Data {
		byPath[it.Memory.Path] = it.Memory.ID
	}
	for _, c := range []string{"a1", "a2"} { // two writes: before is a0
		if _, err := svc.UpdateMemory(sctx, place.ID, byPath["/a.md"], trove.UpdateMemoryParams{Content: ptr(c)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.DeleteMemory(sctx, place.ID, byPath["/b.md"], ""); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateMemory(sctx, place.ID, trove.CreateMemoryParams{Path: "/c.md", Content: "c"}); err != nil {
		t.Fatal(err)
	}
	// Someone else's later edit of a memory the dream did not touch.
	if _, err := svc.UpdateMemory(ctx, place.ID, byPath["/untouched.md"], trove.UpdateMemoryParams{Content: ptr("u2")}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		dream trove.Dream
		want  []dreamdiff.Change
	}{
		{
			name:  "create_new: input vs output, by path",
			dream: trove.Dream{InputStoreID: in.ID, OutputStoreID: out.ID, OutputBehavior: trove.OutputCreateNew},
			want: []dreamdiff.Change{
				{Path: "/added.md", New: ptr("hi")},
				{Path: "/edited.md", Old: ptr("old"), New: ptr("new")},
				{Path: "/gone.md", Old: ptr("bye")},
			},
		},
		{
			name:  "update_existing: what the dream's session wrote",
			dream: trove.Dream{InputStoreID: place.ID, OutputStoreID: place.ID, OutputBehavior: trove.OutputUpdateExisting, SessionID: sess.ID},
			want: []dreamdiff.Change{
				{Path: "/a.md", Old: ptr("a0"), New: ptr("a2")},
				{Path: "/b.md", Old: ptr("b0")},
				{Path: "/c.md", New: ptr("c")},
			},
		},
		{
			name:  "no output yet",
			dream: trove.Dream{InputStoreID: in.ID},
		},
		{
			name:  "in place without a session yet",
			dream: trove.Dream{InputStoreID: place.ID, OutputStoreID: place.ID, OutputBehavior: trove.OutputUpdateExisting},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dreamdiff.ChangeSet(ctx, svc, &tt.dream)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ChangeSet (-want +got):\n%s", diff)
			}
		})
	}
}
