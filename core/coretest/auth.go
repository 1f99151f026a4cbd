package coretest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
)

// --- auth ---------------------------------------------------------------

func testAuth(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	bg := context.Background()

	k, secret, err := e.svc.CreateKey(bg, wsA, "ci")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "trove_sk_") || len(secret) != len("trove_sk_")+40 {
		t.Fatalf("secret %q: want trove_sk_ + 40 chars", secret)
	}
	for _, r := range secret[len("trove_sk_"):] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			t.Fatalf("secret %q has a non-base62 character", secret)
		}
	}
	if !strings.HasPrefix(k.ID, trove.PrefixAPIKey) || k.WorkspaceID != wsA || k.Name != "ci" || k.RevokedAt != nil {
		t.Fatalf("key = %+v", k)
	}
	if k.Hint == "" || !strings.HasSuffix(secret, k.Hint) || len(k.Hint) >= 40 {
		t.Fatalf("hint %q does not identify the secret's tail", k.Hint)
	}
	p, err := e.svc.Authenticate(bg, secret)
	if err != nil {
		t.Fatal(err)
	}
	want := &trove.Principal{WorkspaceID: wsA, Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Fatalf("principal (-want +got):\n%s", diff)
	}
	keys, err := e.svc.ListKeys(bg, wsA)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[1].ID != k.ID {
		t.Fatalf("ListKeys(%s) = %+v, want 2 keys, the new one last", wsA, keys)
	}
	if keys, _ := e.svc.ListKeys(bg, ""); len(keys) != 3 {
		t.Fatalf("ListKeys(all) = %d keys, want 3", len(keys))
	}
	if keys, err := e.svc.ListKeys(e.ctxB, ""); err != nil || len(keys) != 1 || keys[0].WorkspaceID != wsB {
		t.Fatalf("ListKeys as a workspace B key = %+v, %v; want only B's key", keys, err)
	}

	for _, bad := range []string{"", "trove_sk_", secret + "x", secret[:len(secret)-1], "trove_st_" + secret[9:], "Bearer " + secret, strings.Repeat("x", 10000)} {
		_, err := e.svc.Authenticate(bg, bad)
		wantCode(t, fmt.Sprintf("Authenticate(%.20q)", bad), err, trove.EUNAUTHENTICATED)
	}

	if err := e.svc.RevokeKey(bg, k.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Authenticate(bg, secret)
	wantCode(t, "Authenticate(revoked)", err, trove.EUNAUTHENTICATED)
	if err := e.svc.RevokeKey(bg, k.ID); err != nil {
		t.Fatalf("RevokeKey twice: %v", err)
	}
	wantCode(t, "RevokeKey(unknown)", e.svc.RevokeKey(bg, "apikey_nope"), trove.ENOTFOUND)
	wantCode(t, "RevokeKey(other workspace)", e.svc.RevokeKey(e.ctxB, k.ID), trove.ENOTFOUND)
	_, _, err = e.svc.CreateKey(e.ctxB, wsA, "x")
	wantCode(t, "CreateKey(other workspace)", err, trove.EFORBIDDEN)
	_, _, err = e.svc.CreateKey(bg, "", "x")
	wantCode(t, "CreateKey(no workspace)", err, trove.EINVALID)
	_, _, err = e.svc.CreateKey(bg, wsA, "bad\nname")
	wantCode(t, "CreateKey(control char)", err, trove.EINVALID)

	// Session tokens.
	st := e.store(t, "S")
	sctx, se, token := e.sessionCtx(t, trove.AttachStoreParams{StoreID: st.ID, Access: trove.AccessReadOnly})
	if !strings.HasPrefix(token, "trove_st_") || len(token) != len("trove_st_")+40 {
		t.Fatalf("session token %q: want trove_st_ + 40 chars", token)
	}
	sp := trove.PrincipalFrom(sctx)
	wantP := &trove.Principal{
		WorkspaceID: wsA,
		Actor:       trove.Actor{Type: trove.ActorSession, SessionID: se.ID},
		Session:     &trove.SessionScope{SessionID: se.ID, Stores: map[string]trove.Access{st.ID: trove.AccessReadOnly}},
	}
	if diff := cmp.Diff(wantP, sp); diff != "" {
		t.Fatalf("session principal (-want +got):\n%s", diff)
	}
	_, _, err = e.svc.CreateKey(sctx, wsA, "x")
	wantCode(t, "CreateKey(session)", err, trove.EFORBIDDEN)
	if _, err := e.svc.EndSession(e.ctx, se.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Authenticate(bg, token)
	wantCode(t, "Authenticate(ended session)", err, trove.EUNAUTHENTICATED)
}

func testNoPrincipal(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	st := e.store(t, "S")
	m := e.memory(t, st.ID, "/a", "x")
	ctx := context.Background()
	calls := map[string]func() error{
		"CreateStore": func() error { _, err := e.svc.CreateStore(ctx, trove.CreateStoreParams{Name: "x"}); return err },
		"GetStore":    func() error { _, err := e.svc.GetStore(ctx, st.ID); return err },
		"UpdateStore": func() error {
			_, err := e.svc.UpdateStore(ctx, st.ID, trove.UpdateStoreParams{Name: ptr("y")})
			return err
		},
		"ListStores":   func() error { _, err := e.svc.ListStores(ctx, trove.ListStoresParams{}); return err },
		"ArchiveStore": func() error { _, err := e.svc.ArchiveStore(ctx, st.ID); return err },
		"DeleteStore":  func() error { return e.svc.DeleteStore(ctx, st.ID) },
		"CreateMemory": func() error {
			_, err := e.svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/b"})
			return err
		},
		"GetMemory": func() error { _, err := e.svc.GetMemory(ctx, st.ID, m.ID, ""); return err },
		"UpdateMemory": func() error {
			_, err := e.svc.UpdateMemory(ctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("y")})
			return err
		},
		"ListMemories":  func() error { _, err := e.svc.ListMemories(ctx, st.ID, trove.ListMemoriesParams{}); return err },
		"DeleteMemory":  func() error { return e.svc.DeleteMemory(ctx, st.ID, m.ID, "") },
		"GetVersion":    func() error { _, err := e.svc.GetVersion(ctx, st.ID, m.VersionID, ""); return err },
		"ListVersions":  func() error { _, err := e.svc.ListVersions(ctx, st.ID, trove.ListVersionsParams{}); return err },
		"RedactVersion": func() error { _, err := e.svc.RedactVersion(ctx, st.ID, m.VersionID); return err },
		"CreateSession": func() error { _, _, err := e.svc.CreateSession(ctx, trove.CreateSessionParams{}); return err },
		"GetSession":    func() error { _, err := e.svc.GetSession(ctx, "sesn_x"); return err },
		"ListSessions":  func() error { _, err := e.svc.ListSessions(ctx, trove.ListSessionsParams{}); return err },
		"EndSession":    func() error { _, err := e.svc.EndSession(ctx, "sesn_x"); return err },
	}
	for name, call := range calls {
		wantCode(t, name+" without principal", call(), trove.EUNAUTHENTICATED)
	}
	// Nothing changed.
	got, err := e.svc.GetMemory(e.ctx, st.ID, m.ID, trove.ViewFull)
	if err != nil || *got.Content != "x" || got.Path != "/a" {
		t.Fatalf("memory changed by unauthenticated calls: %+v, %v", got, err)
	}
}

func testWorkspaceIsolation(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "A's")
	m := e.memory(t, s.ID, "/a", "x")
	ctx := e.ctxB
	calls := map[string]func() error{
		"GetStore": func() error { _, err := e.svc.GetStore(ctx, s.ID); return err },
		"UpdateStore": func() error {
			_, err := e.svc.UpdateStore(ctx, s.ID, trove.UpdateStoreParams{Name: ptr("y")})
			return err
		},
		"ArchiveStore": func() error { _, err := e.svc.ArchiveStore(ctx, s.ID); return err },
		"DeleteStore":  func() error { return e.svc.DeleteStore(ctx, s.ID) },
		"CreateMemory": func() error {
			_, err := e.svc.CreateMemory(ctx, s.ID, trove.CreateMemoryParams{Path: "/b"})
			return err
		},
		"GetMemory": func() error { _, err := e.svc.GetMemory(ctx, s.ID, m.ID, ""); return err },
		"UpdateMemory": func() error {
			_, err := e.svc.UpdateMemory(ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("y")})
			return err
		},
		"ListMemories":  func() error { _, err := e.svc.ListMemories(ctx, s.ID, trove.ListMemoriesParams{}); return err },
		"DeleteMemory":  func() error { return e.svc.DeleteMemory(ctx, s.ID, m.ID, "") },
		"GetVersion":    func() error { _, err := e.svc.GetVersion(ctx, s.ID, m.VersionID, ""); return err },
		"ListVersions":  func() error { _, err := e.svc.ListVersions(ctx, s.ID, trove.ListVersionsParams{}); return err },
		"RedactVersion": func() error { _, err := e.svc.RedactVersion(ctx, s.ID, m.VersionID); return err },
		"CreateSession": func() error {
			_, _, err := e.svc.CreateSession(ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: s.ID}}})
			return err
		},
	}
	for name, call := range calls {
		wantCode(t, name+" from another workspace", call(), trove.ENOTFOUND)
	}
	got, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, trove.ViewFull)
	if err != nil || *got.Content != "x" {
		t.Fatalf("memory changed from another workspace: %+v, %v", got, err)
	}
	if st, err := e.svc.GetStore(e.ctx, s.ID); err != nil || st.Name != "A's" || st.ArchivedAt != nil {
		t.Fatalf("store changed from another workspace: %+v, %v", st, err)
	}
	// A session of A cannot be read or ended from B.
	_, se, _ := e.sessionCtx(t, trove.AttachStoreParams{StoreID: s.ID})
	_, err = e.svc.GetSession(ctx, se.ID)
	wantCode(t, "GetSession from another workspace", err, trove.ENOTFOUND)
	_, err = e.svc.EndSession(ctx, se.ID)
	wantCode(t, "EndSession from another workspace", err, trove.ENOTFOUND)
}
