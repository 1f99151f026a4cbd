package cli

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// TestBench runs a tiny trove bench with both load generators and both
// cache settings: every line is there, with no errors, a ratio and, for
// the get, the ratio by CPU time per operation.
func TestBench(t *testing.T) {
	code, out, errOut := runTrove(t, "bench", "--n", "20", "--concurrency", "1,2", "--rounds", "2",
		"--client", "lean,net/http", "--auth-cache", "0s,2s", "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("bench = %d: %s%s", code, out, errOut)
	}
	var want []string
	for _, c := range []int{1, 2} {
		want = append(want, fmt.Sprintf(`raw write \(1 txn/write\) +%d +\d+ +\S+ +\d+–\d+ *\n`, c), fmt.Sprintf(`raw point read +%d +\d+ +\S+ +\d+–\d+ *\n`, c))
	}
	for _, cl := range []string{"lean", "net/http"} {
		for _, cache := range []string{"auth cache 0s, " + cl, cl} {
			for _, c := range []int{1, 2} {
				for _, op := range []string{"create", "update"} {
					want = append(want, fmt.Sprintf(`http %s \(%s\) +%d +\d+ +\S+ +\S+ +\S+ +0 +\d+\.\d\d× raw write +\d+\.\d\d×–\d+\.\d\d×`, op, regexp.QuoteMeta(cache), c))
				}
				want = append(want, fmt.Sprintf(`http get \(%s\) +%d +\d+ +\S+ +\S+ +\S+ +0 +\d+%% raw read +\d+%%–\d+%% +\d+%% *\n`, regexp.QuoteMeta(cache), c),
					fmt.Sprintf(`http list \(%s\) +%d +\d+ +\S+ +\S+ +\S+ +0 *\n`, regexp.QuoteMeta(cache), c))
			}
		}
	}
	for _, w := range want {
		if !regexp.MustCompile(w).MatchString(out) {
			t.Errorf("bench output lacks a line matching %s", w)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
	for _, args := range [][]string{
		{"--client", "curl"}, {"--rounds", "0"}, {"--n", "0"}, {"--concurrency", "0"}, {"--auth-cache", "-1s"},
	} {
		if code, _, errOut := runTrove(t, append([]string{"bench"}, args...)...); code == 0 || errOut == "" {
			t.Errorf("bench %v = %d %q, want a usage error", args, code, errOut)
		}
	}
}

// TestLeanConn: the lean load generator reads status and body, keeps the
// connection, redials after the server closed it, and refuses responses it
// cannot frame (chunked).
func TestLeanConn(t *testing.T) {
	var conns atomic.Int32
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("anthropic-beta") == "" {
				w.WriteHeader(401)
				return
			}
			switch r.URL.Path {
			case "/chunked":
				w.Write([]byte("a"))
				w.(http.Flusher).Flush()
				w.Write([]byte("b"))
			case "/close":
				w.Header().Set("Connection", "close")
				w.Write([]byte("bye"))
			default:
				var b strings.Builder
				fmt.Fprintf(&b, "%s %s", r.Method, r.URL.Path)
				if r.ContentLength > 0 {
					buf := make([]byte, r.ContentLength)
					r.Body.Read(buf)
					fmt.Fprintf(&b, " %s", buf)
				}
				w.Header().Set("Content-Length", fmt.Sprint(b.Len()))
				w.WriteHeader(201)
				w.Write([]byte(b.String()))
			}
		}),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	lc := &leanConn{addr: ln.Addr().String(), auth: "k"}
	defer lc.close()
	for i, c := range []struct {
		method, path, body string
		status             int
		resp               string
		wantErr            bool
	}{
		{"GET", "/a", "", 201, "GET /a", false},
		{"POST", "/b", `{"x":1}`, 201, `POST /b {"x":1}`, false},
		{"GET", "/close", "", 200, "bye", false},
		{"GET", "/c", "", 201, "GET /c", false},
		{"GET", "/chunked", "", 0, "", true},
		{"GET", "/d", "", 201, "GET /d", false},
	} {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		status, resp, err := lc.do(c.method, c.path, body)
		if (err != nil) != c.wantErr || status != c.status || string(resp) != c.resp {
			t.Errorf("%d: do(%s %s) = %d %q %v; want %d %q (error: %v)", i, c.method, c.path, status, resp, err, c.status, c.resp, c.wantErr)
		}
	}
	// One connection for /a, /b, /close; one after the close for /c and
	// /chunked; one after the refused response.
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3", n)
	}
}

// TestMemberID: the lean client's ID extraction finds the top-level "id" of
// a memory as the server encodes it, and nothing where there is none.
func TestMemberID(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"type":"memory","id":"mem_0ABC","memory_store_id":"memstore_1","memory_version_id":"memver_2"}`, "mem_0ABC"},
		{`{"type":"memory","memory_store_id":"memstore_1"}`, ""},
		{`{"id":"mem_unterminated`, ""},
		{``, ""},
	} {
		if got := memberID([]byte(c.in)); got != c.want {
			t.Errorf("memberID(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}
