package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
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
	for _, tc := range cases {
		var logs bytes.Buffer
		s := NewServer(Config{
			Services: faultyServices{err: tc.err},
			Auth:     allowAll{},
			Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		})
		req := httptest.NewRequest(tc.method, tc.path, nil)
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("anthropic-beta", BetaAgentMemory)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		var env wireError
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
			t.Fatalf("%s: body %q: %v", tc.name, rec.Body, err)
		}
		if rec.Code != tc.status || env.Error.Type != tc.typ || env.Error.Message != tc.msg || rec.Header().Get("x-should-retry") != tc.shouldRetry {
			t.Errorf("%s: %d %+v retry=%q, want %d %s %q retry=%q", tc.name, rec.Code, env.Error, rec.Header().Get("x-should-retry"), tc.status, tc.typ, tc.msg, tc.shouldRetry)
		}
		if tc.status >= 500 && strings.Contains(rec.Body.String(), "secret detail") {
			t.Errorf("%s: internal detail leaked: %s", tc.name, rec.Body)
		}
		if tc.status >= 500 && tc.status != 503 && !strings.Contains(logs.String(), "secret detail") {
			t.Errorf("%s: detail not logged:\n%s", tc.name, logs.String())
		}
		if env.RequestID == "" || env.RequestID != rec.Header().Get("request-id") {
			t.Errorf("%s: request id %q vs header %q", tc.name, env.RequestID, rec.Header().Get("request-id"))
		}
	}
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
