package httpapi_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/pgtest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

const testWorkspace = "wrkspc_test"

// transport is how a test env serves the API on its loopback listener.
type transport string

const (
	netHTTP transport = "net-http" // Server.HTTPServer, as trove serve runs it; clients speak HTTP/1.1
	h2c     transport = "h2c"      // the same server; the SDK and e.do speak unencrypted HTTP/2
)

var transports = []transport{netHTTP, h2c}

// h2cClient speaks unencrypted HTTP/2 (prior knowledge) only, and fails t
// on a response over any other protocol.
func h2cClient(t *testing.T) *http.Client {
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: protoCheck{t, &http.Transport{Protocols: &protos}}}
}

type protoCheck struct {
	t  *testing.T
	rt http.RoundTripper
}

func (p protoCheck) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := p.rt.RoundTrip(r)
	if err == nil && res.ProtoMajor != 2 {
		p.t.Errorf("%s %s answered over %s, want HTTP/2", r.Method, r.URL, res.Proto)
	}
	return res, err
}

// client is the HTTP client of e's transport for raw requests and the SDK.
func (e *testEnv) client() *http.Client {
	if e.hc != nil {
		return e.hc
	}
	return http.DefaultClient
}

// forTransports runs f as one subtest per transport, in parallel: each
// builds its own env (its own database).
func forTransports(t *testing.T, f func(t *testing.T, tr transport)) {
	t.Helper()
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) {
			t.Parallel()
			f(t, tr)
		})
	}
}

// testEnv is a real server on loopback over core and SQLite in a temp dir.
type testEnv struct {
	t      *testing.T
	tr     transport
	url    string
	key    string
	keyID  string
	svc    *core.Service
	db     storage.Driver
	mu     sync.Mutex
	counts map[string]int // "METHOD /path" → requests seen
	hc     *http.Client   // h2c's client (nil: http.DefaultClient)
	stop   func()         // shuts the server down (Shutdown, as trove serve does); once, also at cleanup
}

type envOption func(*httpapi.Config)

// newEnv serves over SQLite in a temp dir on transport tr.
func newEnv(t *testing.T, tr transport, opts ...envOption) *testEnv {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	return serveOn(t, tr, db, opts...)
}

// serveTransport serves h on a loopback listener with tr, calling seen
// (unless nil) with each request's method and decoded path first, and
// returns the base URL and the function that stops the server.
func serveTransport(t testing.TB, tr transport, h *httpapi.Server, seen func(method, path string)) (string, func()) {
	t.Helper()
	if tr != netHTTP && tr != h2c {
		t.Fatalf("unknown transport %q", tr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := h.HTTPServer()
	if seen != nil {
		srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen(r.Method, r.URL.Path)
			h.ServeHTTP(w, r)
		})
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shutdown := srv.Shutdown
		if tr == h2c {
			// Shutdown waits a second after its GOAWAY on every HTTP/2
			// connection; the test's requests are all answered by now.
			shutdown = func(context.Context) error { return srv.Close() }
		}
		if err := shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("Serve: %v", err)
		}
	}
}

// newPostgresEnv serves over a fresh schema of the test PostgreSQL
// (pgtest.SchemaURL: $TROVE_TEST_POSTGRES, else a private cluster), dropped
// at the end through a connection of its own once the driver is closed:
// dropped while the driver's pool was open, the schema's DROP could
// deadlock with the driver's background search indexer. It skips when
// there is none and fails when the database is unreachable.
func newPostgresEnv(t *testing.T, tr transport, opts ...envOption) *testEnv {
	t.Helper()
	url := pgtest.SchemaURL(t)
	db, err := postgres.Open(context.Background(), url, postgres.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("postgres.Open(%s): %v", url, err)
	}
	return serveOn(t, tr, db, opts...)
}

func serveOn(t *testing.T, tr transport, db storage.Driver, opts ...envOption) *testEnv {
	t.Helper()
	ctx := context.Background()
	svc := core.New(db, core.Options{})
	k, secret, err := svc.CreateKey(ctx, testWorkspace, "test")
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	cfg := httpapi.Config{Services: svc, Sessions: svc, Events: svc, Dreams: svc, Auth: svc, Agents: svc, Environments: svc, Work: svc}
	for _, o := range opts {
		o(&cfg)
	}
	e := &testEnv{t: t, tr: tr, key: secret, keyID: k.ID, svc: svc, db: db, counts: map[string]int{}}
	url, stop := serveTransport(t, tr, httpapi.NewServer(cfg), func(method, path string) {
		e.mu.Lock()
		e.counts[method+" "+path]++
		e.mu.Unlock()
	})
	e.url, e.stop = url, sync.OnceFunc(stop)
	if tr == h2c {
		e.hc = h2cClient(t)
	}
	t.Cleanup(func() {
		if e.hc != nil {
			e.hc.CloseIdleConnections()
		}
		e.stop()
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
	if e.tr == h2c {
		base = append(base, option.WithHTTPClient(e.hc))
	}
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
