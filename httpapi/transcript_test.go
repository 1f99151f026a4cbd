package httpapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata transcripts from the live server")

// exchange is one request and its normalized response in a transcript.
type exchange struct {
	Request struct {
		Method string          `json:"method"`
		Path   string          `json:"path"`
		Body   json.RawMessage `json:"body,omitempty"`
	} `json:"request"`
	Response struct {
		Status      int             `json:"status"`
		ShouldRetry string          `json:"x-should-retry,omitempty"`
		Body        json.RawMessage `json:"body"`
	} `json:"response"`
}

var (
	idRE   = regexp.MustCompile(`\b(memstore|mem|memver|apikey|sesn|req)_[0-9A-Za-z]{22}\b`)
	timeRE = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"`)
	pageRE = regexp.MustCompile(`"page_[A-Za-z0-9_-]+"`)
)

// normalizer replaces IDs (in order of first appearance), timestamps and
// cursors with stable placeholders.
type normalizer struct{ ids map[string]string }

func (n *normalizer) apply(s string) string {
	s = idRE.ReplaceAllStringFunc(s, func(id string) string {
		if p, ok := n.ids[id]; ok {
			return p
		}
		prefix := id[:strings.LastIndex(id, "_")]
		count := 0
		for _, v := range n.ids {
			if strings.HasPrefix(v, prefix+"_") {
				count++
			}
		}
		p := fmt.Sprintf("%s_%d", prefix, count+1)
		n.ids[id] = p
		return p
	})
	s = timeRE.ReplaceAllString(s, `"<timestamp>"`)
	return pageRE.ReplaceAllString(s, `"<cursor>"`)
}

// TestWireTranscript replays the memory stores guide as raw HTTP and
// compares every normalized response with testdata/guide.json (go test
// -run Transcript -update rewrites it).
func TestWireTranscript(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		e := newEnv(t, tr)
		norm := &normalizer{ids: map[string]string{}}
		vars := map[string]string{}
		steps := []struct {
			method, path, body string
			capture            map[string]string // var → JSON key of the response
		}{
			{"POST", "/v1/memory_stores", `{"name":"User Preferences","description":"Per-user preferences and project context."}`, map[string]string{"store": "id"}},
			{"POST", "/v1/memory_stores/{store}/memories", `{"path":"/formatting_standards.md","content":"All reports use GAAP formatting. Dates are ISO-8601..."}`, nil},
			{"POST", "/v1/memory_stores/{store}/memories", `{"path":"/preferences/formatting.md","content":"Always use tabs, not spaces."}`, map[string]string{"mem": "id", "v1": "memory_version_id"}},
			{"GET", "/v1/memory_stores/{store}/memories?path_prefix=/", "", nil},
			{"GET", "/v1/memory_stores/{store}/memories?depth=1&limit=1", "", nil},
			{"GET", "/v1/memory_stores/{store}/memories/{mem}", "", nil},
			{"POST", "/v1/memory_stores/{store}/memories/{mem}", `{"path":"/archive/2026_q1_formatting.md"}`, nil},
			{"POST", "/v1/memory_stores/{store}/memories/{mem}?view=full", `{"content":"CORRECTED: Always use 2-space indentation.","precondition":{"type":"content_sha256","content_sha256":"` + sha("Always use tabs, not spaces.") + `"}}`, nil},
			{"POST", "/v1/memory_stores/{store}/memories/{mem}", `{"content":"stale","precondition":{"type":"content_sha256","content_sha256":"` + sha("Always use tabs, not spaces.") + `"}}`, nil},
			{"POST", "/v1/memory_stores/{store}/memories", `{"path":"/archive","content":"x"}`, nil},
			{"DELETE", "/v1/memory_stores/{store}/memories/{mem}", "", nil},
			{"GET", "/v1/memory_stores/{store}/memory_versions?memory_id={mem}", "", nil},
			{"GET", "/v1/memory_stores/{store}/memory_versions/{v1}", "", nil},
			{"POST", "/v1/memory_stores/{store}/memory_versions/{v1}/redact", "", nil},
			{"GET", "/v1/memory_stores?include_archived=true", "", nil},
			{"POST", "/v1/memory_stores/{store}/archive", "", nil},
			{"POST", "/v1/memory_stores/{store}", `{"name":"renamed"}`, nil},
			{"GET", "/v1/memory_stores/{store}/nothing", "", nil},
			{"DELETE", "/v1/memory_stores/{store}", "", nil},
		}
		var got []exchange
		for _, st := range steps {
			path, body := st.path, st.body
			for k, v := range vars {
				path = strings.ReplaceAll(path, "{"+k+"}", v)
			}
			res := e.do(t, rawReq{method: st.method, path: path, body: body})
			var x exchange
			x.Request.Method = st.method
			x.Request.Path = norm.apply(path)
			if body != "" {
				x.Request.Body = json.RawMessage(norm.apply(body))
			}
			x.Response.Status = res.status
			x.Response.ShouldRetry = res.header.Get("x-should-retry")
			x.Response.Body = json.RawMessage(norm.apply(string(bytes.TrimSpace(res.body))))
			got = append(got, x)
			if st.capture != nil {
				var m map[string]any
				if err := json.Unmarshal(res.body, &m); err != nil {
					t.Fatalf("%s %s: %v: %s", st.method, path, err, res.body)
				}
				for k, key := range st.capture {
					vars[k], _ = m[key].(string)
				}
			}
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(got); err != nil {
			t.Fatal(err)
		}
		out := buf.Bytes()
		golden := filepath.Join("testdata", "guide.json")
		if *update {
			if err := os.WriteFile(golden, out, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		var wantX, gotX []exchange
		if err := json.Unmarshal(want, &wantX); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(out, &gotX)
		if diff := cmp.Diff(canon(t, wantX), canon(t, gotX)); diff != "" {
			t.Errorf("wire transcript differs from %s (-want +got); rerun with -update if intended:\n%s", golden, diff)
		}
	})
}

// canon re-indents the raw bodies so formatting does not matter.
func canon(t *testing.T, xs []exchange) []string {
	var out []string
	for _, x := range xs {
		var b bytes.Buffer
		if err := json.Indent(&b, x.Response.Body, "", " "); err != nil {
			t.Fatalf("bad body %s: %v", x.Response.Body, err)
		}
		out = append(out, fmt.Sprintf("%s %s -> %d retry=%q\n%s", x.Request.Method, x.Request.Path, x.Response.Status, x.Response.ShouldRetry, b.String()))
	}
	return out
}
