package httpapi_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// rawDo sends method path (with its raw query as written) with the test
// key, the memory beta and body, and returns the status and body.
func (e *testEnv) rawDo(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+"/x", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	// Set the path and query as written: NewRequest would re-encode them.
	req.URL.Opaque = ""
	p, q, _ := strings.Cut(path, "?")
	req.URL.Path, req.URL.RawQuery = p, q
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("Anthropic-Beta", httpapi.BetaAgentMemory)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := e.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestDeletePreconditionNeverFailsOpen (issue 22 item 12): a delete whose
// expected_content_sha256 is present but empty, not %-decodable, or
// followed by junk is refused with 400 naming the parameter, and the
// memory is still there; a matching one deletes, a wrong one is 409.
func TestDeletePreconditionNeverFailsOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP)
	st, err := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.svc.CreateMemory(e.ctx(), st.ID, trove.CreateMemoryParams{Path: "/keep.md", Content: "precious"})
	if err != nil {
		t.Fatal(err)
	}
	base := "/v1/memory_stores/" + st.ID + "/memories/" + m.ID
	other := strings.Repeat("0", 64)
	for _, tc := range []struct{ name, query string }{
		{"empty", "expected_content_sha256="},
		{"bad escape", "expected_content_sha256=%zz"},
		{"semicolon junk", "expected_content_sha256=" + m.SHA256 + ";x=1"},
		{"uppercase", "expected_content_sha256=" + strings.ToUpper(m.SHA256)},
		{"short", "expected_content_sha256=abc"},
		{"twice", "expected_content_sha256=" + m.SHA256 + "&expected_content_sha256=" + other},
		{"bare name", "expected_content_sha256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := e.rawDo(t, "DELETE", base+"?"+tc.query, "")
			if code != 400 || !strings.Contains(body, "invalid_request_error") || !strings.Contains(body, "expected_content_sha256") {
				t.Fatalf("DELETE ?%s: %d %s, want 400 naming expected_content_sha256", tc.query, code, body)
			}
			if _, err := e.svc.GetMemory(e.ctx(), st.ID, m.ID, trove.ViewBasic); err != nil {
				t.Fatalf("after DELETE ?%s: the memory is gone: %v", tc.query, err)
			}
		})
	}
	if code, body := e.rawDo(t, "DELETE", base+"?expected_content_sha256="+other, ""); code != 409 {
		t.Fatalf("DELETE with a wrong hash: %d %s, want 409", code, body)
	}
	if code, body := e.rawDo(t, "DELETE", base+"?expected_content_sha256="+m.SHA256, ""); code != 200 {
		t.Fatalf("DELETE with the right hash: %d %s", code, body)
	}
}

// TestStrictQueries (issue 22 item 9): every endpoint parses its whole
// query through one rule: a malformed pair or a repeated parameter is a
// 400 naming the parameter, on every route; limit=0 is refused on every
// list, the change feed included; lists that take repeated parameters
// still do.
func TestStrictQueries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP)
	st, err := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.svc.CreateMemory(e.ctx(), st.ID, trove.CreateMemoryParams{Path: "/a.md", Content: "x"})
	if err != nil {
		t.Fatal(err)
	}
	lists := []string{
		"/v1/memory_stores",
		"/v1/memory_stores/" + st.ID + "/memories",
		"/v1/memory_stores/" + st.ID + "/memory_versions",
		"/trove/v1/sessions",
		"/trove/v1/memory_stores/" + st.ID + "/changes",
		"/trove/v1/search?q=x",
		"/trove/v1/memory_stores/" + st.ID + "/as_of/memories?at=now",
	}
	join := func(p, q string) string {
		if strings.Contains(p, "?") {
			return p + "&" + q
		}
		return p + "?" + q
	}
	for _, l := range lists {
		for _, q := range []string{"limit=0", "limit=-1", "limit=x", "limit=1&limit=2", "limit=%zz", "limit=1;page=2"} {
			code, body := e.rawDo(t, "GET", join(l, q), "")
			if code != 400 || !strings.Contains(body, "limit") {
				t.Errorf("GET %s: %d %s, want 400 naming limit", join(l, q), code, body)
			}
		}
		if code, body := e.rawDo(t, "GET", join(l, "limit=1"), ""); code != 200 {
			t.Errorf("GET %s: %d %s", join(l, "limit=1"), code, body)
		}
	}
	// Any route: a malformed query is refused before the handler acts.
	for _, tc := range []struct{ method, path, name string }{
		{"GET", "/v1/memory_stores/" + st.ID + "/memories/" + m.ID + "?view=full&view=basic", "view"},
		{"GET", "/v1/memory_stores/" + st.ID + "?x=%zz", "x"},
		{"POST", "/v1/memory_stores/" + st.ID + "/archive?a=1;b=2", "a"},
		{"GET", "/v1/memory_stores?=1", ""},
	} {
		code, body := e.rawDo(t, tc.method, tc.path, "")
		if code != 400 || !strings.Contains(body, "invalid_request_error") || !strings.Contains(body, `\"`+tc.name) {
			t.Errorf("%s %s: %d %s, want 400 naming %q", tc.method, tc.path, code, body, tc.name)
		}
	}
	if got, err := e.svc.GetStore(e.ctx(), st.ID); err != nil || got.ArchivedAt != nil {
		t.Fatalf("a refused archive archived the store: %+v %v", got, err)
	}
	// Lists by design still take repeated parameters.
	if code, body := e.rawDo(t, "GET", "/trove/v1/search?q=x&store_id="+st.ID+"&store_id="+st.ID, ""); code != 200 {
		t.Errorf("search with two store_id: %d %s", code, body)
	}
	// An empty value of an ordinary parameter is still "absent".
	if code, body := e.rawDo(t, "GET", "/v1/memory_stores?limit=&page=", ""); code != 200 {
		t.Errorf("empty limit and page: %d %s", code, body)
	}
}

// TestEventMembersStrict (issue 22 item 9): an event's members are matched
// case-sensitively like every body's: {"TYPE": …} is not taken for type,
// and ID/PROCESSED_AT beside the server's are refused; nothing is stored.
func TestEventMembersStrict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP)
	sess, _, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}
	path := "/trove/v1/sessions/" + sess.ID + "/events"
	for _, tc := range []struct{ name, body, want string }{
		{"TYPE only", `{"events":[{"TYPE":"user.message"}]}`, `TYPE`},
		{"TYPE beside type", `{"events":[{"type":"user.message","TYPE":"x"}]}`, `TYPE`},
		{"ID", `{"events":[{"type":"user.message","ID":"evt_x"}]}`, `ID`},
		{"PROCESSED_AT", `{"events":[{"type":"user.message","Processed_At":"2020-01-01T00:00:00Z"}]}`, `Processed_At`},
		{"type not a string", `{"events":[{"type":7}]}`, `type`},
		{"duplicate type", `{"events":[{"type":"user.message","type":"user.message"}]}`, `duplicate`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := e.rawDo(t, "POST", path, tc.body)
			if code != 400 || !strings.Contains(body, tc.want) {
				t.Fatalf("POST %s: %d %s, want 400 mentioning %s", tc.body, code, body, tc.want)
			}
		})
	}
	page, err := e.svc.ListEvents(e.ctx(), sess.ID, trove.ListEventsParams{})
	if err != nil || len(page.Data) != 0 {
		t.Fatalf("events stored after refusals: %+v %v", page, err)
	}
	if code, body := e.rawDo(t, "POST", path, `{"events":[{"type":"user.message","content":[{"type":"text","text":"hi"}],"Other":1}]}`); code != 200 {
		t.Fatalf("a well-formed event: %d %s", code, body)
	}
}

// TestCreateMemoryNeedsContent and null clears a description (issue 22
// item 13): content is required as the spec says (absent is a 400 and
// creates nothing; null and "" are an empty memory); on a store update
// null description clears it, absent keeps it.
func TestRequiredAndNullMembers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP)
	st, err := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "s", Description: "keep me"})
	if err != nil {
		t.Fatal(err)
	}
	mems := "/v1/memory_stores/" + st.ID + "/memories"
	for _, tc := range []struct {
		name, body string
		code       int
	}{
		{"absent", `{"path":"/a.md"}`, 400},
		{"number", `{"path":"/a.md","content":5}`, 400},
		{"null", `{"path":"/n.md","content":null}`, 200},
		{"empty", `{"path":"/e.md","content":""}`, 200},
	} {
		code, body := e.rawDo(t, "POST", mems, tc.body)
		if code != tc.code || (code == 400 && !strings.Contains(body, "content")) {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.code)
		}
	}
	page, err := e.svc.ListMemories(e.ctx(), st.ID, trove.ListMemoriesParams{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, it := range page.Data {
		paths = append(paths, it.Memory.Path)
	}
	if strings.Join(paths, " ") != "/e.md /n.md" {
		t.Errorf("memories after the creates: %v, want /e.md /n.md", paths)
	}

	storePath := "/v1/memory_stores/" + st.ID
	if code, body := e.rawDo(t, "POST", storePath, `{"name":"s2"}`); code != 200 || !strings.Contains(body, `"description":"keep me"`) {
		t.Fatalf("update without description: %d %s", code, body)
	}
	if code, body := e.rawDo(t, "POST", storePath, `{"description":7}`); code != 400 || !strings.Contains(body, "description") {
		t.Fatalf("description 7: %d %s", code, body)
	}
	if code, body := e.rawDo(t, "POST", storePath, `{"description":null}`); code != 200 || !strings.Contains(body, `"description":""`) {
		t.Fatalf("description null: %d %s, want it cleared", code, body)
	}
	got, err := e.svc.GetStore(e.ctx(), st.ID)
	if err != nil || got.Description != "" || got.Name != "s2" {
		t.Fatalf("store after null description: %+v %v", got, err)
	}
}

// TestNoLenientQueryReads: no handler reads its query with r.URL.Query
// (which treats an empty value as absent and drops pairs it cannot
// parse); every one reads queryOf, the query dispatch parsed strictly.
func TestNoLenientQueryReads(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "URL.Query()") {
			t.Errorf("%s reads a query with URL.Query(); use queryOf", f)
		}
	}
}
