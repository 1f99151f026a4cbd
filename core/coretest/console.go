package coretest

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage"
)

// --- console sessions ----------------------------------------------------

// testConsoleSessions: a console session is made from a live API key only,
// acts as a user actor naming the key (so console edits are attributed to
// it), is shared through the database (a second Service over the same
// driver sees it), and ends on sign-out, on expiry and when its key is
// revoked.
func testConsoleSessions(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	bg := context.Background()
	k, secret, err := e.svc.CreateKey(bg, wsA, "console")
	if err != nil {
		t.Fatal(err)
	}
	token, p, err := e.svc.StartConsoleSession(bg, secret)
	if err != nil {
		t.Fatalf("StartConsoleSession: %v", err)
	}
	if !strings.HasPrefix(token, core.ConsoleTokenPrefix) || strings.Contains(token, secret[len(core.APIKeyPrefix):]) {
		t.Fatalf("token %q: want a %s token unrelated to the key", token, core.ConsoleTokenPrefix)
	}
	want := &trove.Principal{WorkspaceID: wsA, Actor: trove.Actor{Type: trove.ActorUser, UserID: "user_" + k.ID}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Fatalf("principal (-want +got):\n%s", diff)
	}
	got, err := e.svc.ConsoleAuthenticate(bg, token)
	if err != nil {
		t.Fatalf("ConsoleAuthenticate: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ConsoleAuthenticate principal (-want +got):\n%s", diff)
	}
	// The token is not an API credential, and the key is not a console token.
	_, err = e.svc.Authenticate(bg, token)
	wantCode(t, "Authenticate(console token)", err, trove.EUNAUTHENTICATED)
	_, err = e.svc.ConsoleAuthenticate(bg, secret)
	wantCode(t, "ConsoleAuthenticate(API key)", err, trove.EUNAUTHENTICATED)

	// A console edit is a user actor's version.
	ctx := trove.WithPrincipal(bg, got)
	s, err := e.svc.CreateStore(ctx, trove.CreateStoreParams{Name: "console"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.svc.CreateMemory(ctx, s.ID, trove.CreateMemoryParams{Path: "/a.md", Content: "x"})
	if err != nil {
		t.Fatal(err)
	}
	vs := e.allVersions(t, s.ID, trove.ListVersionsParams{MemoryID: m.ID})
	if len(vs) != 1 || vs[0].CreatedBy == nil || *vs[0].CreatedBy != want.Actor {
		t.Fatalf("versions = %+v, want one by %+v", vs, want.Actor)
	}

	// Bad sign-ins.
	_, _, sessToken := e.sessionCtx(t)
	for _, bad := range []string{"", "trove_sk_nope", sessToken, strings.Repeat("x", 1000)} {
		_, _, err := e.svc.StartConsoleSession(bg, bad)
		wantCode(t, "StartConsoleSession(bad)", err, trove.EUNAUTHENTICATED)
	}

	// Sign-out ends it.
	token2, _, err := e.svc.StartConsoleSession(bg, secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.EndConsoleSession(bg, token2); err != nil {
		t.Fatalf("EndConsoleSession: %v", err)
	}
	_, err = e.svc.ConsoleAuthenticate(bg, token2)
	wantCode(t, "ConsoleAuthenticate after sign-out", err, trove.EUNAUTHENTICATED)
	if err := e.svc.EndConsoleSession(bg, token2); err != nil {
		t.Fatalf("EndConsoleSession twice: %v", err)
	}
	if _, err := e.svc.ConsoleAuthenticate(bg, token); err != nil {
		t.Fatalf("the other session after a sign-out: %v", err)
	}

	// Expiry.
	e.clock.Advance(core.ConsoleSessionTTL + 1)
	_, err = e.svc.ConsoleAuthenticate(bg, token)
	wantCode(t, "ConsoleAuthenticate after expiry", err, trove.EUNAUTHENTICATED)

	// Revoking the key ends its sessions.
	token3, _, err := e.svc.StartConsoleSession(bg, secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.RevokeKey(bg, k.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.ConsoleAuthenticate(bg, token3)
	wantCode(t, "ConsoleAuthenticate after revoke", err, trove.EUNAUTHENTICATED)
	_, _, err = e.svc.StartConsoleSession(bg, secret)
	wantCode(t, "StartConsoleSession with a revoked key", err, trove.EUNAUTHENTICATED)
}

// testConsoleRevokedElsewhere: a key revoked directly in the database
// (leaving its console session rows) stops its console session at
// the next request, even though RevokeKey did not run on this Service.
func testConsoleRevokedElsewhere(t *testing.T, open Opener) {
	d := open(t)
	t.Cleanup(func() { d.Close() })
	clk := newClock(t0, 0)
	a := core.New(d, core.Options{Now: clk.Now})
	b := core.New(d, core.Options{Now: clk.Now})
	k, secret, err := a.CreateKey(context.Background(), wsA, "k")
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := a.StartConsoleSession(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ConsoleAuthenticate(context.Background(), token); err != nil {
		t.Fatalf("another node: %v", err)
	}
	// Straight in the database, as an older node's RevokeKey would: the
	// console session row is still there.
	if err := d.Write(context.Background(), func(tx storage.Tx) error { return tx.KeyRevoke(context.Background(), k.ID, t0) }); err != nil {
		t.Fatal(err)
	}
	_, err = a.ConsoleAuthenticate(context.Background(), token)
	wantCode(t, "first node after a revoke on the second", err, trove.EUNAUTHENTICATED)
}
