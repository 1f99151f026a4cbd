package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// fuzzMethods are the methods FuzzServer's method index picks from.
var fuzzMethods = []string{"GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"}

// fuzzRoutes are the path templates FuzzServer's route index picks from:
// the 14 memory store routes, the /trove/v1 session routes and search. {store},
// {mem}, {ver} and {sess} become the seeded objects' IDs.
var fuzzRoutes = []string{
	"/v1/memory_stores",
	"/v1/memory_stores/{store}",
	"/v1/memory_stores/{store}/archive",
	"/v1/memory_stores/{store}/memories",
	"/v1/memory_stores/{store}/memories/{mem}",
	"/v1/memory_stores/{store}/memory_versions",
	"/v1/memory_stores/{store}/memory_versions/{ver}",
	"/v1/memory_stores/{store}/memory_versions/{ver}/redact",
	"/trove/v1/sessions",
	"/trove/v1/sessions/{sess}",
	"/trove/v1/sessions/{sess}/end",
	"/trove/v1/search",
	"/trove/v1/memory_stores/{store}/as_of/memories",
	"/trove/v1/memory_stores/{store}/as_of/memory",
	"/trove/v1/memory_stores/{store}/diff",
	"/trove/v1/memory_stores/{store}/fork",
	"/trove/v1/memory_stores/{store}/rollback",
	"/trove/v1/memory_stores/{store}/audit/verify",
}

// FuzzServer sends arbitrary requests (method, route, path suffix, raw
// query, body, header variations) to one server over core and SQLite and
// checks the wire contract: no 5xx, every refusal is the error envelope with
// a matching request-id (and x-should-retry: false on 4xx), every 200 is
// JSON.
//
// hdr bits: 0-2 pick the anthropic-beta header, 3 sends the key as
// x-api-key, 4 sends a wrong key, 5 sends a mismatched
// anthropic-workspace-id, 6 drops Content-Type, 7 swaps the ID in the path
// for the suffix instead of appending it.
func FuzzServer(f *testing.F) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(f), sqlite.Options{AutoMigrate: true})
	if err != nil {
		f.Fatalf("sqlite.Open: %v", err)
	}
	f.Cleanup(func() { db.Close() })
	// seed makes a store for every destructive input: a long run makes
	// more than a workspace's 1,000 (a limit with tests of its own).
	svc := core.New(db, core.Options{Limits: trove.Limits{MaxStoresPerWorkspace: 1 << 30}})
	k, secret, err := svc.CreateKey(ctx, testWorkspace, "fuzz")
	if err != nil {
		f.Fatalf("CreateKey: %v", err)
	}
	pctx := trove.WithPrincipal(ctx, &trove.Principal{
		WorkspaceID: testWorkspace,
		Actor:       trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID},
	})
	// seed creates a store with three memories and a session on it, and
	// returns the replacer that puts their IDs in route templates.
	seed := func(tb testing.TB) *strings.Replacer {
		tb.Helper()
		st, err := svc.CreateStore(pctx, trove.CreateStoreParams{Name: "fuzz"})
		if err != nil {
			tb.Fatalf("CreateStore: %v", err)
		}
		var mem *trove.Memory
		for i, c := range []string{"alpha\n", "beta\n", "gamma\n"} {
			m, err := svc.CreateMemory(pctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/dir/m%d.md", i), Content: c})
			if err != nil {
				tb.Fatalf("CreateMemory: %v", err)
			}
			mem = m
		}
		sess, _, err := svc.CreateSession(pctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
		if err != nil {
			tb.Fatalf("CreateSession: %v", err)
		}
		return strings.NewReplacer("{store}", st.ID, "{mem}", mem.ID, "{ver}", mem.VersionID, "{sess}", sess.ID)
	}
	ids := seed(f)
	h := httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc})
	addrs := map[transport]string{}
	for _, tr := range transports {
		u, stop := serveTransport(f, tr, h, nil)
		f.Cleanup(stop)
		addrs[tr] = strings.TrimPrefix(u, "http://")
	}

	f.Fuzz(func(t *testing.T, method, route uint8, suffix, query string, body []byte, hdr uint8) {
		if len(body) > 64<<10 || len(suffix)+len(query) > 8<<10 {
			return // keep each input fast; size limits have their own tests
		}
		// Each input goes to one server on each transport in turn, built
		// on the seeded IDs of the moment.
		for _, tr := range transports {
			raw := fuzzRequest(ids, method, route, suffix, query, body, hdr, secret)
			req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
			if err != nil {
				return // net/http refuses it before any handler runs
			}
			res, b := rawExchange(t, addrs[tr], raw, req.Method)
			if tr == netHTTP && res.StatusCode == http.StatusBadRequest && res.Header.Get("request-id") == "" {
				return // net/http's own refusal of a request ReadRequest accepts (server-side checks)
			}
			checkFuzzResponse(t, tr, req, res, b)
			// A successful destructive call leaves the seeded objects
			// deleted, archived, ended or redacted: start the next request
			// on fresh ones so that it still reaches the handlers' success
			// paths.
			if res.StatusCode == http.StatusOK && (req.Method == "DELETE" || strings.HasSuffix(req.URL.Path, "/archive") ||
				strings.HasSuffix(req.URL.Path, "/end") || strings.HasSuffix(req.URL.Path, "/redact")) {
				ids = seed(t)
			}
		}
	})
}

// fuzzRequest builds FuzzServer's raw request from its inputs.
func fuzzRequest(ids *strings.Replacer, method, route uint8, suffix, query string, body []byte, hdr uint8, secret string) []byte {
	tmpl := fuzzRoutes[int(route)%len(fuzzRoutes)]
	path := ids.Replace(tmpl) + suffix
	if hdr&0x80 != 0 {
		path = strings.NewReplacer("{store}", suffix, "{mem}", suffix, "{ver}", suffix, "{sess}", suffix).Replace(tmpl)
	}
	target := path
	if query != "" {
		target += "?" + query
	}
	var raw bytes.Buffer
	fmt.Fprintf(&raw, "%s %s HTTP/1.1\r\nHost: trove.test\r\n", fuzzMethods[int(method)%len(fuzzMethods)], target)
	key := secret
	if hdr&0x10 != 0 {
		key = "sk-trove-wrong"
	}
	if hdr&0x08 != 0 {
		fmt.Fprintf(&raw, "x-api-key: %s\r\n", key)
	} else {
		fmt.Fprintf(&raw, "Authorization: Bearer %s\r\n", key)
	}
	switch hdr & 0x07 {
	case 0:
		fmt.Fprintf(&raw, "anthropic-beta: %s\r\n", httpapi.BetaAgentMemory)
	case 1:
		fmt.Fprintf(&raw, "anthropic-beta: %s\r\n", httpapi.BetaManagedAgents)
	case 2:
		fmt.Fprintf(&raw, "anthropic-beta: %s,%s\r\n", httpapi.BetaAgentMemory, httpapi.BetaManagedAgents)
	case 3: // none
	case 4:
		fmt.Fprintf(&raw, "anthropic-beta: other-beta, %s\r\n", httpapi.BetaAgentMemory)
	case 5:
		fmt.Fprintf(&raw, "anthropic-beta: other-beta\r\nanthropic-beta: %s\r\n", httpapi.BetaManagedAgents)
	case 6:
		raw.WriteString("anthropic-beta: \r\n")
	case 7:
		fmt.Fprintf(&raw, "anthropic-beta: %s\r\nanthropic-beta: %s\r\n", httpapi.BetaAgentMemory, httpapi.BetaAgentMemory)
	}
	if hdr&0x20 != 0 {
		raw.WriteString("anthropic-workspace-id: wrkspc_other\r\n")
	}
	if hdr&0x40 == 0 {
		raw.WriteString("Content-Type: application/json\r\n")
	}
	fmt.Fprintf(&raw, "Content-Length: %d\r\n\r\n", len(body))
	raw.Write(body)
	return raw.Bytes()
}

// rawExchange sends raw on a new loopback connection to addr and reads the
// response to a request of method (which ReadResponse needs for HEAD).
func rawExchange(t *testing.T, addr string, raw []byte, method string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	what := raw[:min(len(raw), 80)]
	if _, err := c.Write(raw); err != nil {
		t.Fatalf("%q: writing: %v", what, err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: reading the response: %v", what, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%q: reading the body: %v", what, err)
	}
	return res, b
}

func checkFuzzResponse(t *testing.T, tr transport, req *http.Request, res *http.Response, b []byte) {
	t.Helper()
	where := fmt.Sprintf("%s: %s %s", tr, req.Method, req.URL.RequestURI())
	if res.StatusCode >= 500 {
		t.Fatalf("%s: status %d: %s", where, res.StatusCode, b)
	}
	rid := res.Header.Get("request-id")
	if !strings.HasPrefix(rid, "req_") {
		t.Fatalf("%s: request-id header %q", where, rid)
	}
	if req.Method == "HEAD" { // no body on the wire
		if got := res.Header.Get("x-should-retry"); res.StatusCode >= 400 && got != "false" {
			t.Fatalf("%s: status %d with x-should-retry %q", where, res.StatusCode, got)
		}
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: status %d with Content-Type %q", where, res.StatusCode, ct)
		}
		return
	}
	if res.StatusCode == http.StatusOK {
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: 200 with Content-Type %q", where, ct)
		}
		if !json.Valid(b) {
			t.Fatalf("%s: 200 with invalid JSON: %q", where, b)
		}
		return
	}
	if res.StatusCode < 400 {
		t.Fatalf("%s: unexpected status %d: %s", where, res.StatusCode, b)
	}
	var env struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Type != "error" || env.Error == nil ||
		env.Error.Type == "" || env.Error.Message == "" {
		t.Fatalf("%s: status %d without the error envelope: %q", where, res.StatusCode, b)
	}
	if env.RequestID != rid {
		t.Fatalf("%s: request_id %q, header %q", where, env.RequestID, rid)
	}
	if got := res.Header.Get("x-should-retry"); got != "false" {
		t.Fatalf("%s: status %d with x-should-retry %q", where, res.StatusCode, got)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: status %d with Content-Type %q", where, res.StatusCode, ct)
	}
}
