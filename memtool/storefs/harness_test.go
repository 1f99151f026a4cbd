package storefs_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/pgtest"
	"github.com/trovehq/trove/storage/postgres"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// newPostgresCore returns core over the test PostgreSQL (pgtest.URL:
// $TROVE_TEST_POSTGRES, else a private cluster). It skips when there is
// none and fails when the database is unreachable.
func newPostgresCore(t testing.TB) *core.Service {
	t.Helper()
	url := pgtest.SchemaURL(t)
	db, err := postgres.Open(context.Background(), url, postgres.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("the test PostgreSQL is unreachable: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return core.New(db, core.Options{})
}

const workspace = "wrkspc_storefs_test"

// agent returns a context whose principal is an API-key actor named id.
func agent(id string) context.Context {
	return trove.WithPrincipal(context.Background(), &trove.Principal{
		WorkspaceID: workspace,
		Actor:       trove.Actor{Type: trove.ActorAPI, APIKeyID: id},
	})
}

// newCore opens a fresh SQLite database in a temp dir and returns the core
// service over it.
func newCore(t testing.TB) *core.Service {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return core.New(db, core.Options{})
}

// newStore creates a store through svc.
func newStore(t testing.TB, ctx context.Context, svc trove.Services) string {
	t.Helper()
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "agent memory"})
	if err != nil {
		t.Fatalf("CreateStore: %v", err)
	}
	return st.ID
}

// newRemote starts the HTTP API over svc on a loopback port and returns a
// client authenticated with a fresh API key of the test workspace.
func newRemote(t testing.TB, svc *core.Service) *httpapi.Client {
	t.Helper()
	_, secret, err := svc.CreateKey(context.Background(), workspace, "storefs test")
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}))
	t.Cleanup(srv.Close)
	return httpapi.NewClient(srv.URL, secret)
}

// hooked wraps a real trove.Services and runs a hook before the first
// UpdateMemory that carries a content precondition: the test uses it to make
// another agent's write land between an engine's read and its conditional
// write, deterministically.
type hooked struct {
	trove.Services
	mu   sync.Mutex
	hook func()
}

func (h *hooked) UpdateMemory(ctx context.Context, storeID, memoryID string, p trove.UpdateMemoryParams) (*trove.Memory, error) {
	if p.PreconditionSHA256 != "" {
		h.mu.Lock()
		f := h.hook
		h.hook = nil
		h.mu.Unlock()
		if f != nil {
			f()
		}
	}
	return h.Services.UpdateMemory(ctx, storeID, memoryID, p)
}
