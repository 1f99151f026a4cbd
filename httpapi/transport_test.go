package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove/httpapi"
)

// wireResponse is what a raw request got back, with the parts that differ
// between any two responses (Date, the request ID) normalized.
type wireResponse struct {
	Status int
	Header map[string]string
	Body   string
}

var requestIDRE = regexp.MustCompile(`req_[0-9A-Za-z]+`)

// sendRaw writes raw to a new connection to addr and reads one response.
func sendRaw(t *testing.T, addr, raw string) wireResponse {
	t.Helper()
	method, _, _ := strings.Cut(raw, " ")
	res, b := rawExchange(t, addr, []byte(raw), method)
	w := wireResponse{Status: res.StatusCode, Header: map[string]string{}, Body: requestIDRE.ReplaceAllString(string(b), "req_X")}
	for k, vs := range res.Header {
		v := strings.Join(vs, ", ")
		switch k {
		case "Date":
			if _, err := http.ParseTime(v); err != nil {
				t.Errorf("Date %q: %v", v, err)
			}
			v = "(date)"
		case "Request-Id":
			if !requestIDRE.MatchString(v) {
				t.Errorf("request-id %q", v)
			}
			v = requestIDRE.ReplaceAllString(v, "req_X")
		}
		w.Header[k] = v
	}
	if rid := res.Header.Get("Request-Id"); rid != "" && bytes.Contains(b, []byte(`"request_id"`)) && !bytes.Contains(b, []byte(rid)) {
		t.Errorf("body %s does not carry request-id %s", b, rid)
	}
	if res.StatusCode == http.StatusContinue {
		t.Errorf("unexpected 100 Continue")
	}
	return w
}

// TestTransportsAnswerAlike sends the same raw requests to a server on each
// transport and compares the whole responses (status, every header, body).
func TestTransportsAnswerAlike(t *testing.T) {
	const limit = 4 << 10
	envs := map[transport]*testEnv{}
	for _, tr := range transports {
		envs[tr] = newEnv(t, tr, func(c *httpapi.Config) { c.MaxBodyBytes = limit })
	}
	key := map[transport]string{}
	for tr, e := range envs {
		key[tr] = e.key
	}
	big := strings.Repeat("x", limit+1)
	type tc struct {
		name string
		raw  string // {key} is the env's API key
	}
	mem := "anthropic-beta: " + httpapi.BetaAgentMemory + "\r\n"
	auth := "Authorization: Bearer {key}\r\n"
	get := func(target string) string {
		return "GET " + target + " HTTP/1.1\r\nHost: t\r\n" + auth + mem + "\r\n"
	}
	post := func(target, body string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: t\r\n%s%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", target, auth, mem, len(body), body)
	}
	cases := []tc{
		{"list", get("/v1/memory_stores")},
		{"repeated and unknown query params", get("/v1/memory_stores?limit=1&limit=x&bogus=1")},
		{"repeated bad query param first", get("/v1/memory_stores?limit=x&limit=1")},
		{"percent-decoded path value", get("/v1/memory_stores/memstore_%41%20b")},
		{"escaped slash in path value", get("/v1/memory_stores/a%2Fb/memories")},
		{"empty segment", get("/v1/memory_stores//memories")},
		{"dot segment", get("/v1/memory_stores/./memories")},
		{"dot-dot segment", get("/v1/memory_stores/x/../memstore_y")},
		{"escaped dot-dot", get("/v1/memory_stores/%2e%2e/x")},
		{"trailing slash", get("/v1/memory_stores/")},
		{"unknown route", get("/v2/nothing")},
		{"root", get("/")},
		{"405 with Allow", "PUT /v1/memory_stores HTTP/1.1\r\nHost: t\r\n" + auth + mem + "Content-Length: 0\r\n\r\n"},
		{"405 on a memory", "PATCH /v1/memory_stores/s/memories/m HTTP/1.1\r\nHost: t\r\n" + auth + mem + "Content-Length: 0\r\n\r\n"},
		{"HEAD on a GET route", "HEAD /v1/memory_stores HTTP/1.1\r\nHost: t\r\n" + auth + mem + "\r\n"},
		{"no credential", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\n" + mem + "\r\n"},
		{"x-api-key", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\nx-api-key: {key}\r\n" + mem + "\r\n"},
		{"bad scheme", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\nAuthorization: Basic abc\r\n" + mem + "\r\n"},
		{"wrong key", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer trove_sk_nope\r\n" + mem + "\r\n"},
		{"no beta", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\n" + auth + "\r\n"},
		{"both betas in two headers", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\n" + auth + mem + "ANTHROPIC-BETA: " + httpapi.BetaManagedAgents + "\r\n\r\n"},
		{"workspace mismatch", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\n" + auth + mem + "anthropic-workspace-id: wrkspc_other\r\n\r\n"},
		{"bad JSON", post("/v1/memory_stores", `{"name":`)},
		{"unknown field", post("/v1/memory_stores", `{"name":"a","x":1}`)},
		{"empty body", post("/v1/memory_stores", ``)},
		{"invalid UTF-8", post("/v1/memory_stores", "{\"name\":\"\xff\"}")},
		{"two objects", post("/v1/memory_stores", `{"name":"a"} {}`)},
		{"body over the limit", post("/v1/memory_stores", `{"name":"`+big+`"}`)},
		{"chunked body over the limit", "POST /v1/memory_stores HTTP/1.1\r\nHost: t\r\n" + auth + mem + "Transfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x\r\n{\"name\":\"%s\"}\r\n0\r\n\r\n", len(big)+11, big)},
		{"chunked body", "POST /v1/memory_stores/memstore_nope/memories HTTP/1.1\r\nHost: t\r\n" + auth + mem + "Transfer-Encoding: chunked\r\n\r\n" +
			"5\r\n{\"pat\r\n18\r\nh\":\"/a.md\",\"content\":\"\"}\r\n0\r\n\r\n"},
		{"body on a GET", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\n" + auth + mem + "Content-Length: 5\r\n\r\nhello"},
		{"big body on a GET", fmt.Sprintf("GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\n%s%sContent-Length: %d\r\n\r\n%s", auth, mem, len(big), big)},
		{"bad view", get("/v1/memory_stores/memstore_nope/memories/mem_nope?view=nope")},
		{"bad limit", get("/v1/memory_stores?limit=0")},
		{"HTTP/1.0", "GET /v1/memory_stores HTTP/1.0\r\nHost: t\r\n" + auth + mem + "\r\n"},
		{"absolute-form target", "GET http://t/v1/memory_stores?limit=2 HTTP/1.1\r\nHost: other\r\n" + auth + mem + "\r\n"},
		{"healthz", "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"},
		{"server-wide OPTIONS", "OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n"},
		{"escaped NUL in the path", get("/heal%00thz")},
		{"bad escape in the query", get("/v1/memory_stores?page=%zz&limit=1")},
		{"healthz POST", "POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"},
		// The client sends the body only after a 100 Continue.
		{"Expect 100-continue over the limit", fmt.Sprintf("POST /v1/memory_stores HTTP/1.1\r\nHost: t\r\n%s%sExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", auth, mem, 10*limit)},
		{"Expect 100-continue over the limit, no credential", fmt.Sprintf("POST /v1/memory_stores HTTP/1.1\r\nHost: t\r\n%sExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", mem, 10*limit)},
		{"Expect 100-continue over the limit, unknown route", fmt.Sprintf("POST /v1/nothing HTTP/1.1\r\nHost: t\r\n%s%sExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", auth, mem, 10*limit)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[transport]wireResponse{}
			for _, tr := range transports {
				raw := strings.ReplaceAll(c.raw, "{key}", key[tr])
				got[tr] = sendRaw(t, strings.TrimPrefix(envs[tr].url, "http://"), raw)
			}
			want := got[netHTTP]
			if want.Status >= 400 && want.Header["Content-Type"] != "application/json" {
				t.Errorf("net/http: %d with Content-Type %q: %s", want.Status, want.Header["Content-Type"], want.Body)
			}
			for _, tr := range transports[1:] {
				if diff := cmp.Diff(want, got[tr]); diff != "" {
					t.Errorf("%s differs from %s (-%s +%s):\n%s", tr, netHTTP, netHTTP, tr, diff)
				}
			}
		})
	}
}

// TestMalformedRequests: requests net/http refuses before any handler runs
// get its plain-text refusal with the right status, which never quotes the
// request.
func TestMalformedRequests(t *testing.T) {
	addr := strings.TrimPrefix(newEnv(t, netHTTP).url, "http://")
	for _, c := range []struct {
		name, raw string
		status    int
	}{
		{"bad escape", "GET /v1/memory_stores/%zz HTTP/1.1\r\nHost: t\r\n\r\n", 400},
		{"bad Content-Length", "POST /v1/memory_stores HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n", 400},
		{"two Content-Lengths", "POST /v1/memory_stores HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
		{"header without colon", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\nbogus\r\n\r\n", 400},
		{"bad header name", "GET /healthz HTTP/1.1\r\nHost: t\r\nBad Name: x\r\n\r\n", 400},
		{"control byte in a value", "GET /healthz HTTP/1.1\r\nHost: t\r\nX-A: a\x01b\r\n\r\n", 400},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400},
		{"two Hosts", "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"bad Host", "GET /healthz HTTP/1.1\r\nHost: bad host\r\n\r\n", 400},
		{"bad method", "G(T /healthz HTTP/1.1\r\nHost: t\r\n\r\n", 400},
		{"relative target", "GET healthz HTTP/1.1\r\nHost: t\r\n\r\n", 400},
		{"HTTP/2.0", "GET /healthz HTTP/2.0\r\nHost: t\r\n\r\n", 505},
		{"unsupported Transfer-Encoding", "GET /healthz HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
		{"headers too large", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\nX-Big: " + strings.Repeat("x", 80<<10) + "\r\n\r\n", 431},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := sendRaw(t, addr, c.raw)
			if r.Status != c.status {
				t.Errorf("got %d, want %d: %s", r.Status, c.status, r.Body)
			}
			if strings.Contains(r.Body, "HTTP/1.1") || strings.Contains(r.Body, "healthz") {
				t.Errorf("the refusal quotes the request: %s", r.Body)
			}
		})
	}
}
