package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/trovehq/trove"
)

// faultyServices fails GetStore with a chosen error and panics in
// ArchiveStore; a bug or an outage cannot be produced on demand by the real
// core, so this stub stands in for it. Other methods are never called.
type faultyServices struct {
	trove.Services
	err error
}

func (f faultyServices) GetStore(context.Context, string) (*trove.Store, error) { return nil, f.err }
func (f faultyServices) ArchiveStore(context.Context, string) (*trove.Store, error) {
	panic("invariant broken: secret detail")
}
func (f faultyServices) DeleteStore(context.Context, string) error { panic(http.ErrAbortHandler) }

// serveLoopback serves s on a loopback listener with Server.HTTPServer
// (transport "net-http") and returns its base URL.
func serveLoopback(t *testing.T, s *Server, transport string) string {
	t.Helper()
	if transport != "net-http" {
		t.Fatalf("unknown transport %q", transport)
	}
	srv := httptest.NewUnstartedServer(s)
	srv.Config = s.HTTPServer()
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

var internalTransports = []string{"net-http"}

type allowAll struct{}

func (allowAll) Authenticate(context.Context, string) (*trove.Principal, error) {
	return &trove.Principal{WorkspaceID: "wrkspc_x", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_x"}}, nil
}

func TestInternalAndUnavailableErrors(t *testing.T) {
	cases := []struct {
		name        string
		err         error
		method      string
		path        string
		status      int
		typ, msg    string
		shouldRetry string
	}{
		{"plain error", errors.New("disk on fire: secret detail"), "GET", "/v1/memory_stores/memstore_x", 500, "api_error", internalMessage, ""},
		{"EINTERNAL", &trove.Error{Code: trove.EINTERNAL, Message: "secret detail", Err: errors.New("secret detail")}, "GET", "/v1/memory_stores/memstore_x", 500, "api_error", internalMessage, ""},
		{"unknown code", &trove.Error{Code: "weird", Message: "secret detail"}, "GET", "/v1/memory_stores/memstore_x", 500, "api_error", internalMessage, ""},
		{"EUNAVAILABLE", &trove.Error{Code: trove.EUNAVAILABLE, Message: "database unavailable", Err: errors.New("secret detail")}, "GET", "/v1/memory_stores/memstore_x", 503, "api_error", "database unavailable", "true"},
		{"ECONFLICT", trove.Errorf(trove.ECONFLICT, "busy"), "GET", "/v1/memory_stores/memstore_x", 409, "conflict_error", "busy", "false"},
		{"panic", nil, "POST", "/v1/memory_stores/memstore_x/archive", 500, "api_error", internalMessage, ""},
	}
	for _, tr := range internalTransports {
		for _, tc := range cases {
			var logs syncBuf
			s := NewServer(Config{
				Services: faultyServices{err: tc.err},
				Auth:     allowAll{},
				Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
			})
			req, _ := http.NewRequest(tc.method, serveLoopback(t, s, tr)+tc.path, nil)
			req.Header.Set("Authorization", "Bearer k")
			req.Header.Set("anthropic-beta", BetaAgentMemory)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tr, tc.name, err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var env wireError
			if err := json.Unmarshal(body, &env); err != nil {
				t.Fatalf("%s %s: body %q: %v", tr, tc.name, body, err)
			}
			if res.StatusCode != tc.status || env.Error.Type != tc.typ || env.Error.Message != tc.msg || res.Header.Get("x-should-retry") != tc.shouldRetry {
				t.Errorf("%s %s: %d %+v retry=%q, want %d %s %q retry=%q", tr, tc.name, res.StatusCode, env.Error, res.Header.Get("x-should-retry"), tc.status, tc.typ, tc.msg, tc.shouldRetry)
			}
			if tc.status >= 500 && strings.Contains(string(body), "secret detail") {
				t.Errorf("%s %s: internal detail leaked: %s", tr, tc.name, body)
			}
			if tc.status >= 500 && tc.status != 503 && !strings.Contains(logs.String(), "secret detail") {
				t.Errorf("%s %s: detail not logged:\n%s", tr, tc.name, logs.String())
			}
			if env.RequestID == "" || env.RequestID != res.Header.Get("request-id") {
				t.Errorf("%s %s: request id %q vs header %q", tr, tc.name, env.RequestID, res.Header.Get("request-id"))
			}
		}
	}
}

// TestAbortHandler: a handler panicking with http.ErrAbortHandler drops the
// connection without a response on both transports, and the server goes on.
func TestAbortHandler(t *testing.T) {
	for _, tr := range internalTransports {
		base := serveLoopback(t, NewServer(Config{Services: faultyServices{}, Auth: allowAll{}}), tr)
		req, _ := http.NewRequest("DELETE", base+"/v1/memory_stores/memstore_x", nil)
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("anthropic-beta", BetaAgentMemory)
		res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err == nil {
			res.Body.Close()
			t.Errorf("%s: aborted request answered %d", tr, res.StatusCode)
		}
		res, err = http.Get(base + "/healthz")
		if err != nil {
			t.Fatalf("%s: healthz after the abort: %v", tr, err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("%s: healthz after the abort: %d", tr, res.StatusCode)
		}
	}
}

// syncBuf is a goroutine-safe log sink: the server logs from its own
// goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestHealthz(t *testing.T) {
	for _, tc := range []struct {
		health func(context.Context) error
		status int
	}{{nil, 200}, {func(context.Context) error { return nil }, 200}, {func(context.Context) error { return errors.New("db gone") }, 503}} {
		s := NewServer(Config{Services: faultyServices{}, Auth: allowAll{}, Health: tc.health})
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		if rec.Code != tc.status {
			t.Errorf("healthz = %d, want %d: %s", rec.Code, tc.status, rec.Body)
		}
	}
}

func TestCheckBetas(t *testing.T) {
	cases := []struct {
		lines []string
		ok    bool
	}{
		{[]string{BetaAgentMemory}, true},
		{[]string{BetaManagedAgents}, true},
		{[]string{"computer-use-2024-10-22," + BetaAgentMemory}, true},
		{[]string{" a , " + BetaAgentMemory + " "}, true},
		{[]string{"x", BetaManagedAgents}, true},
		{[]string{BetaAgentMemory + "," + BetaManagedAgents}, false},
		{[]string{BetaAgentMemory, BetaManagedAgents}, false},
		{[]string{"agent-memory"}, false},
		{nil, false},
	}
	for _, tc := range cases {
		h := http.Header{}
		for _, l := range tc.lines {
			h.Add("anthropic-beta", l)
		}
		if err := checkBetas(h); (err == nil) != tc.ok || (err != nil && trove.ErrorCode(err) != trove.EINVALID) {
			t.Errorf("checkBetas(%q) = %v, want ok=%v", tc.lines, err, tc.ok)
		}
	}
}
