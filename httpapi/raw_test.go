package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/trovehq/trove/httpapi"
)

// rawResult is a response read without the SDK.
type rawResult struct {
	status int
	header http.Header
	body   []byte
}

type rawReq struct {
	method, path, body string
	header             map[string]string // "" value deletes a default header
}

// do sends a raw request with the test key and the memory beta unless the
// test overrides them.
func (e *testEnv) do(t *testing.T, r rawReq) rawResult {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, e.url+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("anthropic-beta", httpapi.BetaAgentMemory)
	req.Header.Set("anthropic-version", "2026-10-21")
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := e.client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return rawResult{status: res.StatusCode, header: res.Header, body: b}
}

type envelope struct {
	Type  string `json:"type"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// checkEnvelope verifies the error envelope and headers of a refusal.
func checkEnvelope(t *testing.T, name string, res rawResult, status int, typ string) {
	t.Helper()
	if res.status != status {
		t.Errorf("%s: status %d, want %d: %s", name, res.status, status, res.body)
		return
	}
	var env envelope
	if err := json.Unmarshal(res.body, &env); err != nil || env.Type != "error" || env.Error == nil {
		t.Errorf("%s: body is not the error envelope: %s", name, res.body)
		return
	}
	if env.Error.Type != typ || env.Error.Message == "" {
		t.Errorf("%s: error = %+v, want type %s with a message", name, *env.Error, typ)
	}
	if rid := res.header.Get("request-id"); rid == "" || rid != env.RequestID || !strings.HasPrefix(rid, "req_") {
		t.Errorf("%s: request-id header %q, body %q", name, rid, env.RequestID)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", name, ct)
	}
	if status >= 400 && status < 500 && res.header.Get("x-should-retry") != "false" {
		t.Errorf("%s: x-should-retry = %q, want false", name, res.header.Get("x-should-retry"))
	}
}

func TestRawHTTPRefusals(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		e := newEnv(t, tr, func(c *httpapi.Config) { c.MaxBodyBytes = 200 << 10 })
		ctx := context.Background()
		c := e.sdk()
		store, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "Raw"})
		if err != nil {
			t.Fatal(err)
		}
		mem, err := c.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/m.md", Content: anthropic.String("m")})
		if err != nil {
			t.Fatal(err)
		}
		sp := "/v1/memory_stores/" + store.ID
		mp := sp + "/memories/" + mem.ID
		big := `{"path":"/big.md","content":"` + strings.Repeat("x", 300<<10) + `"}`
		overContent := `{"path":"/big.md","content":"` + strings.Repeat("x", 102401) + `"}`

		cases := []struct {
			name   string
			req    rawReq
			status int
			typ    string
		}{
			{"unknown field", rawReq{method: "POST", path: "/v1/memory_stores", body: `{"name":"x","color":"red"}`}, 400, "invalid_request_error"},
			{"bad JSON", rawReq{method: "POST", path: "/v1/memory_stores", body: `{"name":`}, 400, "invalid_request_error"},
			{"not JSON", rawReq{method: "POST", path: "/v1/memory_stores", body: `name=x`}, 400, "invalid_request_error"},
			{"array body", rawReq{method: "POST", path: "/v1/memory_stores", body: `["x"]`}, 400, "invalid_request_error"},
			{"trailing data", rawReq{method: "POST", path: "/v1/memory_stores", body: `{"name":"x"} {}`}, 400, "invalid_request_error"},
			{"wrong type", rawReq{method: "POST", path: "/v1/memory_stores", body: `{"name":42}`}, 400, "invalid_request_error"},
			{"wrong metadata type", rawReq{method: "POST", path: "/v1/memory_stores", body: `{"name":"x","metadata":{"a":1}}`}, 400, "invalid_request_error"},
			{"null metadata value on create", rawReq{method: "POST", path: "/v1/memory_stores", body: `{"name":"x","metadata":{"a":null}}`}, 400, "invalid_request_error"},
			{"missing name", rawReq{method: "POST", path: "/v1/memory_stores", body: `{}`}, 400, "invalid_request_error"},
			{"empty body on create", rawReq{method: "POST", path: "/v1/memory_stores"}, 400, "invalid_request_error"},
			{"invalid UTF-8", rawReq{method: "POST", path: "/v1/memory_stores", body: "{\"name\":\"\xff\"}"}, 400, "invalid_request_error"},
			{"oversize body", rawReq{method: "POST", path: sp + "/memories", body: big}, 413, "request_too_large"},
			{"oversize content", rawReq{method: "POST", path: sp + "/memories", body: overContent}, 400, "invalid_request_error"},
			{"bad path", rawReq{method: "POST", path: sp + "/memories", body: `{"path":"no-slash","content":"x"}`}, 400, "invalid_request_error"},
			{"dot segment", rawReq{method: "POST", path: sp + "/memories", body: `{"path":"/a/../b","content":"x"}`}, 400, "invalid_request_error"},
			{"wrong content type", rawReq{method: "POST", path: sp + "/memories", body: `{"path":"/x","content":["x"]}`}, 400, "invalid_request_error"},
			{"update nothing", rawReq{method: "POST", path: mp, body: `{}`}, 400, "invalid_request_error"},
			{"precondition without hash", rawReq{method: "POST", path: mp, body: `{"content":"n","precondition":{"type":"content_sha256"}}`}, 400, "invalid_request_error"},
			{"precondition bad hash", rawReq{method: "POST", path: mp, body: `{"content":"n","precondition":{"type":"content_sha256","content_sha256":"ABC"}}`}, 400, "invalid_request_error"},
			{"precondition bad type", rawReq{method: "POST", path: mp, body: `{"content":"n","precondition":{"type":"etag","content_sha256":"` + sha("m") + `"}}`}, 400, "invalid_request_error"},
			{"precondition unknown field", rawReq{method: "POST", path: mp, body: `{"content":"n","precondition":{"type":"content_sha256","x":1}}`}, 400, "invalid_request_error"},
			{"delete bad expected hash", rawReq{method: "DELETE", path: mp + "?expected_content_sha256=expected"}, 400, "invalid_request_error"},
			{"both betas", rawReq{method: "GET", path: "/v1/memory_stores", header: map[string]string{"anthropic-beta": httpapi.BetaAgentMemory + ", " + httpapi.BetaManagedAgents}}, 400, "invalid_request_error"},
			{"missing beta", rawReq{method: "GET", path: "/v1/memory_stores", header: map[string]string{"anthropic-beta": ""}}, 400, "invalid_request_error"},
			{"other beta only", rawReq{method: "GET", path: "/v1/memory_stores", header: map[string]string{"anthropic-beta": "computer-use-2024-10-22"}}, 400, "invalid_request_error"},
			{"bad cursor stores", rawReq{method: "GET", path: "/v1/memory_stores?page=page"}, 400, "invalid_request_error"},
			{"bad cursor memories", rawReq{method: "GET", path: sp + "/memories?page=page_%21%21"}, 400, "invalid_request_error"},
			{"bad cursor versions", rawReq{method: "GET", path: sp + "/memory_versions?page=garbage"}, 400, "invalid_request_error"},
			{"limit 0", rawReq{method: "GET", path: "/v1/memory_stores?limit=0"}, 400, "invalid_request_error"},
			{"limit 101", rawReq{method: "GET", path: sp + "/memories?limit=101"}, 400, "invalid_request_error"},
			{"limit text", rawReq{method: "GET", path: sp + "/memory_versions?limit=ten"}, 400, "invalid_request_error"},
			{"bad include_archived", rawReq{method: "GET", path: "/v1/memory_stores?include_archived=maybe"}, 400, "invalid_request_error"},
			{"bad created_at", rawReq{method: "GET", path: "/v1/memory_stores?created_at%5Bgte%5D=yesterday"}, 400, "invalid_request_error"},
			{"bad view", rawReq{method: "GET", path: mp + "?view=everything"}, 400, "invalid_request_error"},
			{"bad depth", rawReq{method: "GET", path: sp + "/memories?depth=-1"}, 400, "invalid_request_error"},
			{"depth 2", rawReq{method: "GET", path: sp + "/memories?depth=2"}, 400, "invalid_request_error"},
			{"depth 3 with prefix", rawReq{method: "GET", path: sp + "/memories?path_prefix=/&depth=3"}, 400, "invalid_request_error"},
			{"depth overflow", rawReq{method: "GET", path: sp + "/memories?depth=99999999999999999999"}, 400, "invalid_request_error"},
			{"depth text", rawReq{method: "GET", path: sp + "/memories?depth=one"}, 400, "invalid_request_error"},
			{"bad path_prefix", rawReq{method: "GET", path: sp + "/memories?path_prefix=path_prefix"}, 400, "invalid_request_error"},
			{"bad operation", rawReq{method: "GET", path: sp + "/memory_versions?operation=renamed"}, 400, "invalid_request_error"},
			{"no credential", rawReq{method: "GET", path: "/v1/memory_stores", header: map[string]string{"Authorization": ""}}, 401, "authentication_error"},
			{"bad key", rawReq{method: "GET", path: "/v1/memory_stores", header: map[string]string{"Authorization": "Bearer trove_sk_nope"}}, 401, "authentication_error"},
			{"bad scheme", rawReq{method: "GET", path: "/v1/memory_stores", header: map[string]string{"Authorization": "Basic eDp5"}}, 401, "authentication_error"},
			{"bad x-api-key", rawReq{method: "GET", path: "/v1/memory_stores", header: map[string]string{"Authorization": "", "x-api-key": "nope"}}, 401, "authentication_error"},
			{"wrong workspace", rawReq{method: "GET", path: "/v1/memory_stores", header: map[string]string{"anthropic-workspace-id": "wrkspc_other"}}, 403, "permission_error"},
			{"unknown store", rawReq{method: "GET", path: "/v1/memory_stores/memstore_nope"}, 404, "not_found_error"},
			{"unknown route", rawReq{method: "GET", path: "/v1/nothing"}, 404, "not_found_error"},
			{"trailing slash", rawReq{method: "GET", path: sp + "/"}, 404, "not_found_error"},
			{"wrong method", rawReq{method: "PUT", path: sp, body: `{}`}, 405, "invalid_request_error"},
			{"patch", rawReq{method: "PATCH", path: mp, body: `{}`}, 405, "invalid_request_error"},
		}
		for _, tc := range cases {
			res := e.do(t, tc.req)
			checkEnvelope(t, tc.name, res, tc.status, tc.typ)
		}

		// Accepted: x-api-key, repeated beta headers with an unknown extra one,
		// the managed-agents beta alone, unknown query parameters, the right
		// workspace header (echoed), and empty bodies on archive and redact.
		okCases := []struct {
			name string
			req  rawReq
		}{
			{"x-api-key", rawReq{method: "GET", path: "/v1/memory_stores?beta=true", header: map[string]string{"Authorization": "", "x-api-key": e.key}}},
			{"managed agents beta", rawReq{method: "GET", path: sp, header: map[string]string{"anthropic-beta": "computer-use-2024-10-22 , " + httpapi.BetaManagedAgents}}},
			{"workspace", rawReq{method: "GET", path: mp + "?beta=true&view=basic", header: map[string]string{"anthropic-workspace-id": testWorkspace}}},
			{"null optional fields", rawReq{method: "POST", path: sp, body: `{"name":null,"description":null,"metadata":null}`}},
			{"null content", rawReq{method: "POST", path: sp + "/memories", body: `{"path":"/empty.md","content":null}`}},
			{"archive empty body", rawReq{method: "POST", path: sp + "/archive"}},
		}
		for _, tc := range okCases {
			res := e.do(t, tc.req)
			if res.status != 200 || res.header.Get("Content-Type") != "application/json" || res.header.Get("request-id") == "" {
				t.Errorf("%s: %d %v: %s", tc.name, res.status, res.header, res.body)
			}
			if tc.name == "workspace" && res.header.Get("anthropic-workspace-id") != testWorkspace {
				t.Errorf("workspace header not echoed: %v", res.header)
			}
		}
		// Repeated anthropic-beta header lines.
		req, _ := http.NewRequest("GET", e.url+sp, nil)
		req.Header.Set("Authorization", "Bearer "+e.key)
		req.Header.Add("anthropic-beta", "foo-2025-01-01")
		req.Header.Add("anthropic-beta", httpapi.BetaAgentMemory)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("repeated beta headers: %d", res.StatusCode)
		}
		// Redact with an empty body (an old version of /m.md).
		if err := e.svc.DeleteMemory(e.ctx(), store.ID, mem.ID, ""); err != nil {
			t.Fatal(err)
		}
		r := e.do(t, rawReq{method: "POST", path: sp + "/memory_versions/" + mem.MemoryVersionID + "/redact"})
		if r.status != 200 {
			t.Errorf("redact empty body: %d %s", r.status, r.body)
		}
		// Health and metrics need no credential.
		for _, p := range []string{"/healthz", "/metrics"} {
			r := e.do(t, rawReq{method: "GET", path: p, header: map[string]string{"Authorization": ""}})
			if r.status != 200 {
				t.Errorf("%s: %d %s", p, r.status, r.body)
			}
			if p == "/metrics" && !strings.Contains(string(r.body), `trove_http_requests_total{route="GET /v1/memory_stores",status="400"}`) {
				t.Errorf("/metrics lacks the request counter by route and status:\n%.2000s", r.body)
			}
		}
	})
}
