package coretest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
)

// --- sessions -----------------------------------------------------------

func testSessions(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	prefs, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "User Preferences!", Description: "how the user likes things"})
	if err != nil {
		t.Fatal(err)
	}
	n1 := e.store(t, "Notes")
	n2 := e.store(t, "notes")
	n3 := e.store(t, "NOTES??")
	n4 := e.store(t, "Notes 2")
	jp := e.store(t, "日本語")
	se, token, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{
		{StoreID: prefs.ID, Instructions: "Check before answering."},
		{StoreID: n1.ID, Access: trove.AccessReadOnly},
		{StoreID: n2.ID, Access: trove.AccessReadWrite},
		{StoreID: n3.ID},
		{StoreID: n4.ID},
		{StoreID: jp.ID},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if token == "" || !strings.HasPrefix(se.ID, trove.PrefixSession) || se.WorkspaceID != wsA || se.EndedAt != nil ||
		se.CreatedBy != (trove.Actor{Type: trove.ActorAPI, APIKeyID: e.keyID}) || se.CreatedAt.IsZero() {
		t.Fatalf("session = %+v", se)
	}
	want := []trove.SessionStore{
		{StoreID: prefs.ID, Access: trove.AccessReadWrite, Name: "User Preferences!", Description: "how the user likes things", Instructions: "Check before answering.", MountPath: "/mnt/memory/user-preferences"},
		{StoreID: n1.ID, Access: trove.AccessReadOnly, Name: "Notes", MountPath: "/mnt/memory/notes"},
		{StoreID: n2.ID, Access: trove.AccessReadWrite, Name: "notes", MountPath: "/mnt/memory/notes-2"},
		{StoreID: n3.ID, Access: trove.AccessReadWrite, Name: "NOTES??", MountPath: "/mnt/memory/notes-3"},
		{StoreID: n4.ID, Access: trove.AccessReadWrite, Name: "Notes 2", MountPath: "/mnt/memory/notes-2-2"},
		{StoreID: jp.ID, Access: trove.AccessReadWrite, Name: "日本語", MountPath: "/mnt/memory/store"},
	}
	if diff := cmp.Diff(want, se.Stores); diff != "" {
		t.Fatalf("attached stores (-want +got):\n%s", diff)
	}
	// Renaming a store later does not change the snapshot.
	if _, err := e.svc.UpdateStore(e.ctx, prefs.ID, trove.UpdateStoreParams{Name: ptr("Renamed"), Description: ptr("new")}); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetSession(e.ctx, se.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(se, got); diff != "" {
		t.Fatalf("GetSession (-create +get):\n%s", diff)
	}
	_, err = e.svc.GetSession(e.ctx, "sesn_missing")
	wantCode(t, "GetSession(unknown)", err, trove.ENOTFOUND)

	// A session with no stores is allowed.
	empty, _, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{})
	if err != nil || len(empty.Stores) != 0 {
		t.Fatalf("empty session = %+v, %v", empty, err)
	}
	third, _, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: n1.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	// Lists: newest first, by store, paged.
	var ids []string
	cursor := ""
	for range 10 {
		pg, err := e.svc.ListSessions(e.ctx, trove.ListSessionsParams{Limit: 1, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range pg.Data {
			ids = append(ids, x.ID)
		}
		if pg.NextPage == "" {
			break
		}
		cursor = pg.NextPage
	}
	if diff := cmp.Diff([]string{third.ID, empty.ID, se.ID}, ids); diff != "" {
		t.Fatalf("ListSessions (-want +got):\n%s", diff)
	}
	pg, err := e.svc.ListSessions(e.ctx, trove.ListSessionsParams{StoreID: n1.ID})
	if err != nil || len(pg.Data) != 2 || pg.Data[0].ID != third.ID || pg.Data[1].ID != se.ID {
		t.Fatalf("ListSessions(store) = %+v, %v", pg, err)
	}
	pg, err = e.svc.ListSessions(e.ctxB, trove.ListSessionsParams{})
	if err != nil || len(pg.Data) != 0 {
		t.Fatalf("ListSessions from workspace B = %+v, %v", pg, err)
	}
	for _, p := range []trove.ListSessionsParams{{Limit: 101}, {Limit: -1}, {Cursor: "page_!"}} {
		_, err := e.svc.ListSessions(e.ctx, p)
		wantCode(t, fmt.Sprintf("ListSessions(%+v)", p), err, trove.EINVALID)
	}

	// EndSession is idempotent.
	ended, err := e.svc.EndSession(e.ctx, se.ID)
	if err != nil || ended.EndedAt == nil {
		t.Fatalf("EndSession = %+v, %v", ended, err)
	}
	e.clock.Advance(time.Hour)
	again, err := e.svc.EndSession(e.ctx, se.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ended, again); diff != "" {
		t.Fatalf("ending twice (-first +second):\n%s", diff)
	}
	if g, _ := e.svc.GetSession(e.ctx, se.ID); !cmp.Equal(ended, g) {
		t.Fatalf("GetSession(ended) = %+v", g)
	}
	_, err = e.svc.Authenticate(context.Background(), token)
	wantCode(t, "Authenticate(ended)", err, trove.EUNAUTHENTICATED)
	_, err = e.svc.EndSession(e.ctx, "sesn_missing")
	wantCode(t, "EndSession(unknown)", err, trove.ENOTFOUND)
}

func testSessionValidation(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	var stores []trove.AttachStoreParams
	for i := range 9 {
		stores = append(stores, trove.AttachStoreParams{StoreID: e.store(t, fmt.Sprintf("s%d", i)).ID})
	}
	archived := e.store(t, "archived")
	if _, err := e.svc.ArchiveStore(e.ctx, archived.ID); err != nil {
		t.Fatal(err)
	}
	bStore, err := e.svc.CreateStore(e.ctxB, trove.CreateStoreParams{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	id := stores[0].StoreID
	tests := []struct {
		name   string
		stores []trove.AttachStoreParams
		code   string
	}{
		{"eight stores", stores[:8], ""},
		{"nine stores", stores, trove.EINVALID},
		{"duplicate", []trove.AttachStoreParams{{StoreID: id}, {StoreID: id, Access: trove.AccessReadOnly}}, trove.EINVALID},
		{"bad access", []trove.AttachStoreParams{{StoreID: id, Access: "write"}}, trove.EINVALID},
		{"instructions 4096", []trove.AttachStoreParams{{StoreID: id, Instructions: strings.Repeat("é", 4096)}}, ""},
		{"instructions 4097", []trove.AttachStoreParams{{StoreID: id, Instructions: strings.Repeat("i", 4097)}}, trove.EINVALID},
		{"instructions invalid UTF-8", []trove.AttachStoreParams{{StoreID: id, Instructions: "\xff"}}, trove.EINVALID},
		{"archived", []trove.AttachStoreParams{{StoreID: archived.ID}}, trove.EINVALID},
		{"unknown", []trove.AttachStoreParams{{StoreID: id}, {StoreID: "memstore_missing"}}, trove.ENOTFOUND},
		{"other workspace", []trove.AttachStoreParams{{StoreID: bStore.ID}}, trove.ENOTFOUND},
	}
	for _, tt := range tests {
		_, token, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: tt.stores})
		wantCode(t, "CreateSession("+tt.name+")", err, tt.code)
		if err != nil && token != "" {
			t.Fatalf("CreateSession(%s) returned a token with an error", tt.name)
		}
	}
	pg, err := e.svc.ListSessions(e.ctx, trove.ListSessionsParams{})
	if err != nil || len(pg.Data) != 2 {
		t.Fatalf("refused sessions were stored: %d sessions, %v", len(pg.Data), err)
	}
}

func testSessionPrincipal(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	rw := e.store(t, "rw")
	ro := e.store(t, "ro")
	hidden := e.store(t, "hidden")
	rom := e.memory(t, ro.ID, "/ref.md", "reference")
	hm := e.memory(t, hidden.ID, "/h", "h")
	sctx, se, _ := e.sessionCtx(t,
		trove.AttachStoreParams{StoreID: rw.ID},
		trove.AttachStoreParams{StoreID: ro.ID, Access: trove.AccessReadOnly},
	)
	other, _, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}

	// Reads of attached stores work; the unattached store does not exist.
	for _, id := range []string{rw.ID, ro.ID} {
		if _, err := e.svc.GetStore(sctx, id); err != nil {
			t.Fatalf("GetStore(attached): %v", err)
		}
	}
	if _, err := e.svc.GetMemory(sctx, ro.ID, rom.ID, ""); err != nil {
		t.Fatalf("GetMemory(read_only store): %v", err)
	}
	if items := e.allMemories(t, sctx, ro.ID, trove.ListMemoriesParams{}); len(items) != 1 {
		t.Fatalf("ListMemories(read_only store) = %v", itemPaths(items))
	}
	if _, err := e.svc.ListVersions(sctx, ro.ID, trove.ListVersionsParams{}); err != nil {
		t.Fatalf("ListVersions(read_only store): %v", err)
	}
	pg, err := e.svc.ListStores(sctx, trove.ListStoresParams{})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, s := range pg.Data {
		listed = append(listed, s.ID)
	}
	if diff := cmp.Diff([]string{ro.ID, rw.ID}, listed); diff != "" {
		t.Fatalf("ListStores(session) (-want +got):\n%s", diff)
	}
	pg, err = e.svc.ListStores(sctx, trove.ListStoresParams{Limit: 1})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].ID != ro.ID || pg.NextPage == "" {
		t.Fatalf("ListStores(session, limit 1) = %+v, %v", pg, err)
	}
	pg, err = e.svc.ListStores(sctx, trove.ListStoresParams{Limit: 1, Cursor: pg.NextPage})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].ID != rw.ID || pg.NextPage != "" {
		t.Fatalf("ListStores(session, page 2) = %+v, %v", pg, err)
	}

	notFound := map[string]func() error{
		"GetStore":     func() error { _, err := e.svc.GetStore(sctx, hidden.ID); return err },
		"GetMemory":    func() error { _, err := e.svc.GetMemory(sctx, hidden.ID, hm.ID, ""); return err },
		"ListMemories": func() error { _, err := e.svc.ListMemories(sctx, hidden.ID, trove.ListMemoriesParams{}); return err },
		"GetVersion":   func() error { _, err := e.svc.GetVersion(sctx, hidden.ID, hm.VersionID, ""); return err },
		"ListVersions": func() error { _, err := e.svc.ListVersions(sctx, hidden.ID, trove.ListVersionsParams{}); return err },
		"CreateMemory": func() error {
			_, err := e.svc.CreateMemory(sctx, hidden.ID, trove.CreateMemoryParams{Path: "/x"})
			return err
		},
		"UpdateMemory": func() error {
			_, err := e.svc.UpdateMemory(sctx, hidden.ID, hm.ID, trove.UpdateMemoryParams{Content: ptr("x")})
			return err
		},
		"DeleteMemory": func() error { return e.svc.DeleteMemory(sctx, hidden.ID, hm.ID, "") },
	}
	for name, call := range notFound {
		wantCode(t, name+"(unattached store)", call(), trove.ENOTFOUND)
	}
	forbidden := map[string]func() error{
		"CreateMemory(read_only)": func() error {
			_, err := e.svc.CreateMemory(sctx, ro.ID, trove.CreateMemoryParams{Path: "/x"})
			return err
		},
		"UpdateMemory(read_only)": func() error {
			_, err := e.svc.UpdateMemory(sctx, ro.ID, rom.ID, trove.UpdateMemoryParams{Content: ptr("x")})
			return err
		},
		"DeleteMemory(read_only)": func() error { return e.svc.DeleteMemory(sctx, ro.ID, rom.ID, "") },
		"CreateStore":             func() error { _, err := e.svc.CreateStore(sctx, trove.CreateStoreParams{Name: "x"}); return err },
		"UpdateStore": func() error {
			_, err := e.svc.UpdateStore(sctx, rw.ID, trove.UpdateStoreParams{Name: ptr("x")})
			return err
		},
		"ArchiveStore":  func() error { _, err := e.svc.ArchiveStore(sctx, rw.ID); return err },
		"DeleteStore":   func() error { return e.svc.DeleteStore(sctx, rw.ID) },
		"RedactVersion": func() error { _, err := e.svc.RedactVersion(sctx, ro.ID, rom.VersionID); return err },
		"CreateSession": func() error {
			_, _, err := e.svc.CreateSession(sctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: rw.ID}}})
			return err
		},
		"EndSession(other)": func() error { _, err := e.svc.EndSession(sctx, other.ID); return err },
	}
	for name, call := range forbidden {
		wantCode(t, name+" by a session", call(), trove.EFORBIDDEN)
	}
	_, err = e.svc.CreateMemory(sctx, ro.ID, trove.CreateMemoryParams{Path: "/x"})
	if !strings.Contains(trove.ErrorMessage(err), "read_only") {
		t.Fatalf("read_only refusal message %q does not say why", trove.ErrorMessage(err))
	}
	// Nothing above changed anything.
	if got, err := e.svc.GetMemory(e.ctx, ro.ID, rom.ID, ""); err != nil || got.VersionID != rom.VersionID {
		t.Fatalf("read_only memory changed: %+v, %v", got, err)
	}
	if got, err := e.svc.GetStore(e.ctx, rw.ID); err != nil || got.Name != "rw" || got.ArchivedAt != nil {
		t.Fatalf("store changed by a session: %+v, %v", got, err)
	}

	// Writes to the read_write store carry the session actor.
	m, err := e.svc.CreateMemory(sctx, rw.ID, trove.CreateMemoryParams{Path: "/agent.md", Content: "learned"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.svc.UpdateMemory(sctx, rw.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("learned more"), PreconditionSHA256: m.SHA256})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteMemory(sctx, rw.ID, m.ID, u.SHA256); err != nil {
		t.Fatal(err)
	}
	sa := trove.Actor{Type: trove.ActorSession, SessionID: se.ID}
	for _, v := range e.allVersions(t, rw.ID, trove.ListVersionsParams{}) {
		if v.CreatedBy == nil || *v.CreatedBy != sa {
			t.Fatalf("version %s by %+v, want %+v", v.Operation, v.CreatedBy, sa)
		}
	}
	// A session reads and ends only itself.
	if got, err := e.svc.GetSession(sctx, se.ID); err != nil || got.ID != se.ID {
		t.Fatalf("GetSession(own) = %+v, %v", got, err)
	}
	_, err = e.svc.GetSession(sctx, other.ID)
	wantCode(t, "GetSession(other) by a session", err, trove.EFORBIDDEN)
	_, err = e.svc.ListSessions(sctx, trove.ListSessionsParams{})
	wantCode(t, "ListSessions by a session", err, trove.EFORBIDDEN)
	// Archiving an attached store hides it from the session's list unless
	// archived stores are asked for, and refuses the session's writes.
	if _, err := e.svc.ArchiveStore(e.ctx, rw.ID); err != nil {
		t.Fatal(err)
	}
	if pg, err := e.svc.ListStores(sctx, trove.ListStoresParams{}); err != nil || len(pg.Data) != 1 || pg.Data[0].ID != ro.ID {
		t.Fatalf("ListStores(session) after archive = %+v, %v", pg, err)
	}
	if pg, err := e.svc.ListStores(sctx, trove.ListStoresParams{IncludeArchived: true}); err != nil || len(pg.Data) != 2 {
		t.Fatalf("ListStores(session, include archived) = %+v, %v", pg, err)
	}
	_, err = e.svc.CreateMemory(sctx, rw.ID, trove.CreateMemoryParams{Path: "/late.md"})
	wantCode(t, "CreateMemory(archived, by a session)", err, trove.EINVALID)
	if _, err := e.svc.EndSession(sctx, se.ID); err != nil {
		t.Fatalf("EndSession(own): %v", err)
	}
	if g, _ := e.svc.GetSession(e.ctx, other.ID); g.EndedAt != nil {
		t.Fatal("the other session was ended")
	}
}
