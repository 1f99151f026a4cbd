package httpapi_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
	"github.com/trovehq/trove/storage/sqlite"
)

const testWorkspace = "wrkspc_test"

// testEnv is a real server on loopback over core and SQLite in a temp dir.
type testEnv struct {
	t      *testing.T
	url    string
	key    string
	keyID  string
	svc    *core.Service
	db     storage.Driver
	srv    *httptest.Server
	mu     sync.Mutex
	counts map[string]int // "METHOD /path" → requests seen
}

type envOption func(*httpapi.Config)

// newEnv serves over SQLite in a temp dir.
func newEnv(t *testing.T, opts ...envOption) *testEnv {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	return serveOn(t, db, opts...)
}

// newPostgresEnv serves over a fresh schema of $TROVE_TEST_POSTGRES,
// dropped at the end. It skips when the variable is unset and fails when
// the database is unreachable.
func newPostgresEnv(t *testing.T, opts ...envOption) *testEnv {
	t.Helper()
	url := os.Getenv("TROVE_TEST_POSTGRES")
	if url == "" {
		t.Skip("TROVE_TEST_POSTGRES is not set; skipping the PostgreSQL run")
	}
	ctx := context.Background()
	schema := fmt.Sprintf("trove_httpapi_%d", rand.Uint64())
	db, err := postgres.Open(ctx, url, postgres.Options{AutoMigrate: true, Schema: schema})
	if err != nil {
		t.Fatalf("postgres.Open(%s): %v", url, err)
	}
	e := serveOn(t, db, opts...)
	// Registered after serveOn's cleanup, so it runs before the pool closes.
	t.Cleanup(func() {
		if _, err := db.Pool().Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return e
}

func serveOn(t *testing.T, db storage.Driver, opts ...envOption) *testEnv {
	t.Helper()
	ctx := context.Background()
	svc := core.New(db, core.Options{})
	k, secret, err := svc.CreateKey(ctx, testWorkspace, "test")
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	cfg := httpapi.Config{Services: svc, Sessions: svc, Auth: svc}
	for _, o := range opts {
		o(&cfg)
	}
	e := &testEnv{t: t, key: secret, keyID: k.ID, svc: svc, db: db, counts: map[string]int{}}
	h := httpapi.NewServer(cfg)
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.counts[r.Method+" "+r.URL.Path]++
		e.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	e.url = e.srv.URL
	t.Cleanup(func() {
		e.srv.Close()
		db.Close()
	})
	return e
}

// count returns how many requests reached method path.
func (e *testEnv) count(method, path string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[method+" "+path]
}

// sdk returns an official SDK client for the server with the test key.
func (e *testEnv) sdk(opts ...option.RequestOption) anthropic.Client {
	base := []option.RequestOption{option.WithBaseURL(e.url), option.WithAPIKey(e.key)}
	return anthropic.NewClient(append(base, opts...)...)
}

// ctx returns a context acting as the test key's principal, for direct
// core calls.
func (e *testEnv) ctx() context.Context {
	return trove.WithPrincipal(context.Background(), &trove.Principal{
		WorkspaceID: testWorkspace,
		Actor:       trove.Actor{Type: trove.ActorAPI, APIKeyID: e.keyID},
	})
}
