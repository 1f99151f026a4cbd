package httpapi

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
)

// TestRedactServerLog: what net/http and its HTTP/2 server quote from a
// client (a bogus preface, a header value) never reaches the log, nor do
// control bytes; the rest of the line does.
func TestRedactServerLog(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`http2: server: error reading preface from client 127.0.0.1:5: bogus greeting "PRI * HTTP/2.0\r\n\r\nSM\r\ntrove_sk_abc"` + "\n",
			`http2: server: error reading preface from client 127.0.0.1:5: bogus greeting "…"`},
		{`http: invalid header "x-api-key: trove_sk_abc\x00" and "unterminated trove_sk_abc`,
			`http: invalid header "…" and "…"`},
		{"http: Accept error: too many open files; retrying in 5ms\n", "http: Accept error: too many open files; retrying in 5ms"},
		{"raw \x00\x01bytes\x7f", "raw bytes"},
	} {
		if got := redactServerLog(c.in); got != c.want {
			t.Errorf("redactServerLog(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := redactServerLog(strings.Repeat("é", 400)); len(got) > 310 || !strings.HasSuffix(got, "…") {
		t.Errorf("a long line is not cut: %d bytes", len(got))
	}
}

// blockingServices blocks GetStore until its context ends, then reports it.
type blockingServices struct {
	trove.Services
	started, cancelled chan struct{}
}

func (b blockingServices) GetStore(ctx context.Context, _ string) (*trove.Store, error) {
	close(b.started)
	<-ctx.Done()
	close(b.cancelled)
	return nil, ctx.Err()
}

// TestContextCancelledOnDisconnect: on Server.HTTPServer, a request's
// context ends when its client disconnects, so its work stops.
func TestContextCancelledOnDisconnect(t *testing.T) {
	t.Parallel()
	svc := blockingServices{started: make(chan struct{}), cancelled: make(chan struct{})}
	srv := NewServer(Config{Services: svc, Auth: allowAll{}}).HTTPServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.WriteString(c, "GET /v1/memory_stores/memstore_x HTTP/1.1\r\nHost: t\r\nx-api-key: k\r\nanthropic-beta: "+BetaAgentMemory+"\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-svc.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the service")
	}
	c.Close()
	select {
	case <-svc.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the request's context was not cancelled 10 s after its client disconnected")
	}
}
