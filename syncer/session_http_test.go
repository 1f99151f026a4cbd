package syncer_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/syncer"
)

// TestSessionTokenOverHTTP drives a session credential through the real
// HTTP server and client: every call a session may not make is refused, and
// a sync engine holding only the session token writes session versions to
// its read_write store and cannot write a read_only one even when
// misconfigured to try.
func TestSessionTokenOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: e.svc, Sessions: e.svc, Auth: e.svc}))
	defer srv.Close()
	_, key, err := e.svc.CreateKey(context.Background(), "wrkspc_test", "ws")
	if err != nil {
		t.Fatal(err)
	}
	ws := httpapi.NewClient(srv.URL, key)
	ctx := context.Background()
	mk := func(name, path, content string) (*trove.Store, *trove.Memory) {
		st, err := ws.CreateStore(ctx, trove.CreateStoreParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		m, err := ws.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: path, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		return st, m
	}
	notes, noteMem := mk("Notes", "/a.md", "A\n")
	std, stdMem := mk("Standards", "/s.md", "S\n")
	secret, secretMem := mk("Secret", "/x.md", "X\n")
	c := "A2\n"
	if _, err := ws.UpdateMemory(ctx, notes.ID, noteMem.ID, trove.UpdateMemoryParams{Content: &c}); err != nil {
		t.Fatal(err)
	}
	vs, err := ws.ListVersions(ctx, notes.ID, trove.ListVersionsParams{MemoryID: noteMem.ID})
	if err != nil || len(vs.Data) != 2 {
		t.Fatalf("versions: %v %v", vs, err)
	}
	oldVersion := vs.Data[1].ID

	sess, token, err := ws.CreateSession(ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{
		{StoreID: notes.ID, Access: trove.AccessReadWrite},
		{StoreID: std.ID, Access: trove.AccessReadOnly},
	}})
	if err != nil {
		t.Fatal(err)
	}
	sc := httpapi.NewClient(srv.URL, token)
	x := "x"
	name := "renamed"
	forbidden := []struct {
		name string
		call func() error
		code string
	}{
		{"write a read_only store", func() error {
			_, err := sc.UpdateMemory(ctx, std.ID, stdMem.ID, trove.UpdateMemoryParams{Content: &x})
			return err
		}, trove.EFORBIDDEN},
		{"create in a read_only store", func() error {
			_, err := sc.CreateMemory(ctx, std.ID, trove.CreateMemoryParams{Path: "/n.md", Content: x})
			return err
		}, trove.EFORBIDDEN},
		{"delete in a read_only store", func() error { return sc.DeleteMemory(ctx, std.ID, stdMem.ID, "") }, trove.EFORBIDDEN},
		{"redact", func() error { _, err := sc.RedactVersion(ctx, notes.ID, oldVersion); return err }, trove.EFORBIDDEN},
		{"archive a store", func() error { _, err := sc.ArchiveStore(ctx, notes.ID); return err }, trove.EFORBIDDEN},
		{"delete a store", func() error { return sc.DeleteStore(ctx, notes.ID) }, trove.EFORBIDDEN},
		{"update a store", func() error {
			_, err := sc.UpdateStore(ctx, notes.ID, trove.UpdateStoreParams{Name: &name})
			return err
		}, trove.EFORBIDDEN},
		{"create a store", func() error { _, err := sc.CreateStore(ctx, trove.CreateStoreParams{Name: "n"}); return err }, trove.EFORBIDDEN},
		{"create a session", func() error {
			_, _, err := sc.CreateSession(ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: notes.ID}}})
			return err
		}, trove.EFORBIDDEN},
		{"read an unattached store", func() error { _, err := sc.GetStore(ctx, secret.ID); return err }, trove.ENOTFOUND},
		{"list an unattached store", func() error {
			_, err := sc.ListMemories(ctx, secret.ID, trove.ListMemoriesParams{})
			return err
		}, trove.ENOTFOUND},
		{"read an unattached memory", func() error {
			_, err := sc.GetMemory(ctx, secret.ID, secretMem.ID, trove.ViewFull)
			return err
		}, trove.ENOTFOUND},
		{"write an unattached store", func() error {
			_, err := sc.CreateMemory(ctx, secret.ID, trove.CreateMemoryParams{Path: "/n.md", Content: x})
			return err
		}, trove.ENOTFOUND},
	}
	for _, f := range forbidden {
		if got := trove.ErrorCode(f.call()); got != f.code {
			t.Errorf("%s: code %q, want %q", f.name, got, f.code)
		}
	}
	if m, err := sc.GetMemory(ctx, std.ID, stdMem.ID, trove.ViewFull); err != nil || *m.Content != "S\n" {
		t.Errorf("a session cannot read its read_only store: %v", err)
	}
	if pg, err := sc.ListStores(ctx, trove.ListStoresParams{}); err != nil || len(pg.Data) != 2 {
		t.Errorf("session lists %d stores (%v), want the 2 attached", len(pg.Data), err)
	}

	// A sync engine with the session token only.
	rw := e.engine("notes", func(o *syncer.Options) { o.Services = sc; o.StoreID = notes.ID; o.SessionID = sess.ID })
	if _, err := rw.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	writeFile(t, rw.Dir(), "/learned.md", "L\n")
	if rep, err := rw.Sync(ctx); err != nil || len(rep.Errors) > 0 {
		t.Fatalf("sync: %v %+v", err, rep)
	}
	var learned *trove.Memory
	pg, _ := ws.ListMemories(ctx, notes.ID, trove.ListMemoriesParams{})
	for _, it := range pg.Data {
		if it.Memory.Path == "/learned.md" {
			learned = it.Memory
		}
	}
	if learned == nil {
		t.Fatal("the session's file did not reach the store")
	}
	lv, _ := ws.ListVersions(ctx, notes.ID, trove.ListVersionsParams{MemoryID: learned.ID})
	if len(lv.Data) != 1 || !cmp.Equal(lv.Data[0].CreatedBy, &trove.Actor{Type: trove.ActorSession, SessionID: sess.ID}) {
		t.Errorf("version actor = %+v, want session %s", lv.Data[0].CreatedBy, sess.ID)
	}

	// Misconfigured as read_write on a read_only attachment: the server
	// refuses, the local bytes stay, the store is unchanged.
	ro := e.engine("std", func(o *syncer.Options) { o.Services = sc; o.StoreID = std.ID })
	if _, err := ro.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	writeFile(t, ro.Dir(), "/s.md", "tampered\n")
	rep, err := ro.Sync(ctx)
	if err != nil || len(rep.Errors) != 1 {
		t.Fatalf("sync: %v, errors %+v, want one refusal", err, rep.Errors)
	}
	if m, _ := ws.GetMemory(ctx, std.ID, stdMem.ID, trove.ViewFull); *m.Content != "S\n" {
		t.Errorf("read_only store written: %q", *m.Content)
	}
	if got := readDir(t, ro.Dir())["/s.md"]; got != "tampered\n" {
		t.Errorf("local bytes lost: %q", got)
	}

	// Once the session ends its token is dead.
	if _, err := ws.EndSession(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Sync(ctx); trove.ErrorCode(err) != trove.EUNAUTHENTICATED {
		t.Errorf("sync after the session ended: %v, want unauthenticated", err)
	}
}
