package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
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
	db     *sqlite.DB
	srv    *httptest.Server
	mu     sync.Mutex
	counts map[string]int // "METHOD /path" → requests seen
}

type envOption func(*httpapi.Config)

func newEnv(t *testing.T, opts ...envOption) *testEnv {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	svc := core.New(db, core.Options{})
	k, secret, err := svc.CreateKey(ctx, testWorkspace, "test")
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	cfg := httpapi.Config{Services: svc, Sessions: svc, Auth: svc, Limits: svc.Limits()}
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
