package core_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRollbackDryRunLogsNothing (issue 22 item 10): a rollback dry run, and
// a rollback refused for its conflicts, log no error (they are how the
// answer is computed, not failures), and return their result.
func TestRollbackDryRunLogsNothing(t *testing.T) {
	t.Parallel()
	logs := &lockedBuf{}
	svc := core.New(newMemDriver(), core.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	bg := context.Background()
	k, _, err := svc.CreateKey(bg, "wrkspc_a", "a")
	if err != nil {
		t.Fatal(err)
	}
	k2, _, err := svc.CreateKey(bg, "wrkspc_a", "b")
	if err != nil {
		t.Fatal(err)
	}
	ctx := trove.WithPrincipal(bg, &trove.Principal{WorkspaceID: "wrkspc_a", Actor: trove.NewActor(trove.ActorAPI, k.ID)})
	ctx2 := trove.WithPrincipal(bg, &trove.Principal{WorkspaceID: "wrkspc_a", Actor: trove.NewActor(trove.ActorAPI, k2.ID)})
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/a", Content: "one"})
	if err != nil {
		t.Fatal(err)
	}
	since := trove.Moment{Seq: 1}
	c := "two"
	if _, err := svc.UpdateMemory(ctx2, st.ID, m.ID, trove.UpdateMemoryParams{Content: &c}); err != nil {
		t.Fatal(err)
	}
	r, err := svc.RollbackActor(ctx, st.ID, trove.RollbackParams{APIKeyID: k2.ID, Since: since, DryRun: true})
	if err != nil || r.Applied || len(r.Changes) != 1 {
		t.Fatalf("dry run: %+v, %v", r, err)
	}
	c3 := "three"
	if _, err := svc.UpdateMemory(ctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: &c3}); err != nil {
		t.Fatal(err)
	}
	r, err = svc.RollbackActor(ctx, st.ID, trove.RollbackParams{APIKeyID: k2.ID, Since: since})
	if err != nil || r.Applied || len(r.Conflicts) != 1 {
		t.Fatalf("refused for its conflict: %+v, %v", r, err)
	}
	if l := logs.String(); strings.Contains(l, "level=ERROR") {
		t.Fatalf("logged an error:\n%s", l)
	}
}
