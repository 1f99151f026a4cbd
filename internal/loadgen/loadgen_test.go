package loadgen_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove/internal/loadgen"
)

// TestConn: the load generator reads status and body, keeps the
// connection, redials after the server closed it, and refuses responses it
// cannot frame (chunked).
func TestConn(t *testing.T) {
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
	lc := &loadgen.Conn{Addr: ln.Addr().String(), Header: "Authorization: Bearer k\r\nanthropic-beta: b\r\n"}
	defer lc.Close()
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
		status, resp, err := lc.Do(c.method, c.path, body)
		if (err != nil) != c.wantErr || status != c.status || string(resp) != c.resp {
			t.Errorf("%d: Do(%s %s) = %d %q %v; want %d %q (error: %v)", i, c.method, c.path, status, resp, err, c.status, c.resp, c.wantErr)
		}
	}
	// One connection for /a, /b, /close; one after the close for /c and
	// /chunked; one after the refused response.
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3", n)
	}
}

// TestProcessCPU: the CPU clock moves forward when the process computes.
func TestProcessCPU(t *testing.T) {
	before := loadgen.ProcessCPU()
	x := 0
	for deadline := time.Now().Add(20 * time.Millisecond); time.Now().Before(deadline); x++ {
	}
	if after := loadgen.ProcessCPU(); after <= before {
		t.Errorf("ProcessCPU went from %v to %v over 20 ms of spinning (%d loops)", before, after, x)
	}
}
