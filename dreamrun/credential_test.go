package dreamrun_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/dreamrun"
	"github.com/trovehq/trove/internal/claudetest"
)

// waitCore polls the dream through core (its creator's key may be revoked)
// until it is terminal.
func (e *env) waitCore(t *testing.T, id string, within time.Duration) *trove.Dream {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		d, err := e.svc.GetDream(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.Terminal() && d.LeaseOwner == "" {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("dream %s still %s (lease %q) after %s", id, d.Status, d.LeaseOwner, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// revokeCreator revokes the test key as trove keys revoke does: an
// operator call with no principal.
func (e *env) revokeCreator(t *testing.T) {
	t.Helper()
	p := trove.PrincipalFrom(e.ctx)
	if err := e.svc.RevokeKey(context.Background(), p.Actor.APIKeyID); err != nil {
		t.Fatal(err)
	}
}

// TestDreamCreatorRevokedBeforeClaim (issue 22 item 2): a dream whose
// creator's key is revoked while it is queued fails at the claim with
// credential_revoked: no Messages request, no output store.
func TestDreamCreatorRevokedBeforeClaim(t *testing.T) {
	e := newEnv(t)
	st, se := e.fixture(t)
	d := e.create(t, params(st.ID, se.ID))
	e.revokeCreator(t)
	srv := e.run(t, dreamrun.Config{}, false, claudetest.Turn{Text: "done"})
	got := e.waitCore(t, d.ID, 20*time.Second)
	if got.Status != trove.DreamFailed || got.Error == nil || got.Error.Type != trove.DreamErrCredentialRevoked ||
		!strings.Contains(got.Error.Message, "revoked") {
		t.Fatalf("dream = %+v (error %+v), want failed credential_revoked", got, got.Error)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d Messages requests made for a revoked creator", n)
	}
	stores, err := e.svc.ListStores(e.ctx, trove.ListStoresParams{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(stores.Data) != 1 || got.OutputStoreID != "" {
		t.Errorf("stores after the refused dream: %d (output %q), want only the input", len(stores.Data), got.OutputStoreID)
	}
}

// TestDreamCreatorRevokedMidRun (issue 22 item 2): revoking the creator's
// key while its dream waits on the model stops the run within a few
// heartbeats, failed with credential_revoked; no further model request.
func TestDreamCreatorRevokedMidRun(t *testing.T) {
	e := newEnv(t)
	st, se := e.fixture(t)
	hold, reached := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(hold) })
	srv := e.run(t, dreamrun.Config{}, false,
		claudetest.Turn{Hold: hold, Reached: reached},
		claudetest.Turn{Text: "done"})
	d := e.create(t, params(st.ID, se.ID))
	select {
	case <-reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the runner never reached the model")
	}
	start := time.Now()
	e.revokeCreator(t)
	got := e.waitCore(t, d.ID, 10*time.Second)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the run stopped %s after the revocation, want within seconds", took)
	}
	if got.Status != trove.DreamFailed || got.Error == nil || got.Error.Type != trove.DreamErrCredentialRevoked {
		t.Fatalf("dream = %+v (error %+v), want failed credential_revoked", got, got.Error)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d Messages requests, want only the one in flight", n)
	}
}

// TestCheckActorCredential: an api_actor's and a console user's key are
// checked, a session actor never passes.
func TestCheckActorCredential(t *testing.T) {
	e := newEnv(t)
	p := trove.PrincipalFrom(e.ctx)
	ctx := context.Background()
	user := trove.NewActor(trove.ActorUser, trove.ConsoleUserID(p.Actor.APIKeyID))
	for _, a := range []trove.Actor{p.Actor, user} {
		if err := e.svc.CheckActorCredential(ctx, p.WorkspaceID, a); err != nil {
			t.Errorf("live key, %s: %v", a.Type, err)
		}
	}
	if err := e.svc.CheckActorCredential(ctx, "wrkspc_other", p.Actor); trove.ErrorCode(err) != trove.EUNAUTHENTICATED {
		t.Errorf("another workspace: %v", err)
	}
	if err := e.svc.CheckActorCredential(ctx, p.WorkspaceID, trove.NewActor(trove.ActorSession, "sesn_x")); trove.ErrorCode(err) != trove.EUNAUTHENTICATED {
		t.Errorf("session actor: %v", err)
	}
	e.revokeCreator(t)
	for _, a := range []trove.Actor{p.Actor, user} {
		if err := e.svc.CheckActorCredential(ctx, p.WorkspaceID, a); trove.ErrorCode(err) != trove.EUNAUTHENTICATED {
			t.Errorf("revoked key, %s: %v", a.Type, err)
		}
	}
}
