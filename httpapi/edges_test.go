package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// connState is a connection's state change, by the client's address.
type connState struct {
	client string
	state  http.ConnState
}

// edgeServer is Server.HTTPServer on loopback over SQLite, as trove serve
// runs it, with every log line (the handler's slog records and
// http.Server's ErrorLog, which HTTPServer sends to the same logger)
// captured in logs and every connection's state changes sent to states.
type edgeServer struct {
	addr, key string
	pctx      context.Context // the key's principal, for direct core calls
	svc       *core.Service
	logs      *syncBuffer
	states    chan connState
	stop      func() // shuts the server down; idempotent
}

func newEdgeServer(t *testing.T, cfg func(*httpapi.Config)) *edgeServer {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	svc := core.New(db, core.Options{})
	k, secret, err := svc.CreateKey(ctx, testWorkspace, "edge")
	if err != nil {
		t.Fatal(err)
	}
	es := &edgeServer{key: secret, svc: svc, logs: &syncBuffer{}, states: make(chan connState, 1024),
		pctx: trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: testWorkspace, Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}})}
	c := httpapi.Config{Services: svc, Sessions: svc, Auth: svc,
		Logger: slog.New(slog.NewTextHandler(es.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if cfg != nil {
		cfg(&c)
	}
	srv := httpapi.NewServer(c).HTTPServer()
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		select {
		case es.states <- connState{c.RemoteAddr().String(), s}:
		default:
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	es.addr = ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	var once sync.Once
	es.stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				srv.Close()
			}
			<-done
			db.Close()
		})
	}
	t.Cleanup(es.stop)
	return es
}

// exchange writes raw on a new connection and reads one response, failing
// the test after 10 s.
func (es *edgeServer) exchange(t *testing.T, raw string) (rawResult, time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", es.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatalf("writing: %v", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "GET"})
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return rawResult{status: res.StatusCode, header: res.Header, body: b}, time.Since(start)
}

// h2Exchange sends one GET /v1/memory_stores over unencrypted HTTP/2
// (prior knowledge) with the extra header field hf, unvalidated, and
// returns the response's status, or 0 when the server reset the stream or
// the connection instead.
func (es *edgeServer) h2Exchange(t *testing.T, hf [2]string) int {
	t.Helper()
	c, err := net.Dial("tcp", es.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "t"}, {":path", "/v1/memory_stores"},
		{"anthropic-beta", httpapi.BetaAgentMemory}, hf} {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	dec := hpack.NewDecoder(4096, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return 0 // the connection ended
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.RSTStreamFrame, *http2.GoAwayFrame:
			return 0
		case *http2.HeadersFrame:
			fields, err := dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				t.Fatal(err)
			}
			for _, hf := range fields {
				if hf.Name == ":status" {
					var status int
					fmt.Sscan(hf.Value, &status)
					return status
				}
			}
		}
	}
}

// TestF1NoCredentialInLogs: requests that carry a valid key next to bytes
// no HTTP request may hold (a control byte after the key in Authorization
// or x-api-key, control bytes in the request target) get 400, and no log
// line the server writes, its own or net/http's, holds the key or its
// secret part.
func TestF1NoCredentialInLogs(t *testing.T) {
	t.Parallel()
	es := newEdgeServer(t, nil)
	mem := "anthropic-beta: " + httpapi.BetaAgentMemory + "\r\n"
	for _, c := range []struct{ name, raw string }{
		{"NUL after the bearer key", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + es.key + "\x00\r\n" + mem + "\r\n"},
		{"control byte after x-api-key", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\nx-api-key: " + es.key + "\x01\r\n" + mem + "\r\n"},
		{"control bytes in the target", "GET /v1/memory_stores/\x01" + es.key + "\x7f HTTP/1.1\r\nHost: t\r\nx-api-key: " + es.key + "\r\n" + mem + "\r\n"},
		{"key in an invalid header name", "GET /v1/memory_stores HTTP/1.1\r\nHost: t\r\nX-" + es.key + "\x02: 1\r\n" + mem + "\r\n"},
	} {
		res, _ := es.exchange(t, c.raw)
		if res.status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", c.name, res.status, res.body)
		}
		if bytes.Contains(res.body, []byte(es.key)) {
			t.Errorf("%s: the response quotes the key: %s", c.name, res.body)
		}
	}
	// The same over unencrypted HTTP/2: the stream is refused (reset, or
	// 400) and nothing is logged either.
	if status := es.h2Exchange(t, [2]string{"x-api-key", es.key}); status != 200 {
		t.Fatalf("HTTP/2 with a valid key: %d, want 200", status)
	}
	for _, hf := range [][2]string{{"authorization", "Bearer " + es.key + "\x00"}, {"x-api-key", es.key + "\x01"}} {
		if status := es.h2Exchange(t, hf); status != 0 && status != http.StatusBadRequest {
			t.Errorf("HTTP/2 %s with a control byte: %d, want a refusal", hf[0], status)
		}
	}
	// A request the handler does see, with the key in the target too, so
	// that the log has lines to search.
	if res, _ := es.exchange(t, "GET /v1/memory_stores/"+es.key+" HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer "+es.key+"\r\n"+mem+"\r\n"); res.status != http.StatusNotFound {
		t.Errorf("a get of a store named like the key: %d, want 404: %s", res.status, res.body)
	}
	es.stop() // every connection's goroutine has finished writing its logs
	logs := es.logs.String()
	if !strings.Contains(logs, "msg=request") {
		t.Fatalf("no request log line captured:\n%s", logs)
	}
	secret := es.key[strings.LastIndex(es.key, "_")+1:]
	for _, s := range []string{es.key, secret} {
		if strings.Contains(logs, s) {
			t.Errorf("the logs hold %q:\n%s", s, logs)
		}
	}
}

// TestF3NeverReadingClientIsCutOff: clients that pipeline large view=full
// lists and never read (a small receive buffer) are disconnected within
// the write timeout of the server's first response to them, and while they
// are held the server's heap stays within a few responses per connection.
func TestF3NeverReadingClientIsCutOff(t *testing.T) {
	const writeTimeout = 500 * time.Millisecond
	const conns, pipelined = 8, 50
	es := newEdgeServer(t, func(c *httpapi.Config) { c.Timeouts.Write = writeTimeout })
	st, err := es.svc.CreateStore(es.pctx, trove.CreateStoreParams{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	content := strings.Repeat("\x01", 30_000) // escaped as \u0001: six bytes each on the wire
	for i := range 20 {
		if _, err := es.svc.CreateMemory(es.pctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/m%02d.md", i), Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	req := "GET /v1/memory_stores/" + st.ID + "/memories?view=full&limit=20 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + es.key +
		"\r\nanthropic-beta: " + httpapi.BetaAgentMemory + "\r\n\r\n"
	// One response, measured: what a connection may hold at a time.
	res, _ := es.exchange(t, req)
	if res.status != 200 {
		t.Fatalf("list: %d %.200s", res.status, res.body)
	}
	respSize := uint64(len(res.body))
	if respSize < 2<<20 {
		t.Fatalf("a list response is %d bytes, too small to fill the socket buffers", respSize)
	}

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse

	dialer := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = setReceiveBuffer(fd, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	clients := map[string]bool{} // local address → still open
	start := time.Now()
	for range conns {
		c, err := dialer.Dial("tcp", es.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[c.LocalAddr().String()] = true
		go func() { _, _ = io.WriteString(c, strings.Repeat(req, pipelined)) }() // may block: the server reads one at a time
	}
	// Sample the heap until every connection is closed by the server.
	var peak uint64
	closed := 0
	deadline := time.After(writeTimeout + 30*time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for closed < conns {
		select {
		case s := <-es.states:
			if s.state == http.StateClosed && clients[s.client] {
				clients[s.client] = false
				closed++
			}
		case <-tick.C:
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		case <-deadline:
			t.Fatalf("%d of %d never-reading connections closed %s after they connected (write timeout %s)", closed, conns, time.Since(start), writeTimeout)
		}
	}
	elapsed := time.Since(start)
	// The write deadline runs from a response's first byte, after the
	// handler has built it (a list of 20 large memories, 8 at a time on a
	// shared machine, maybe under -race): allow for that. Without a write
	// deadline the connections stay open for as long as the clients do.
	if limit := writeTimeout + 15*time.Second; elapsed > limit {
		t.Errorf("the never-reading connections were closed after %s, want within %s", elapsed, limit)
	}
	// Each connection holds at most the response it is writing and the
	// pooled buffers behind it; allow 4 per connection and 64 MiB of slack.
	if bound := base + conns*4*respSize + 64<<20; peak > bound {
		t.Errorf("heap in use peaked at %d MiB with %d never-reading clients (baseline %d MiB, responses of %d KiB), want at most %d MiB",
			peak>>20, conns, base>>20, respSize>>10, bound>>20)
	}
	t.Logf("%d never-reading clients cut off after %s; heap in use %d MiB → peak %d MiB (responses of %d KiB)",
		conns, elapsed.Round(time.Millisecond), base>>20, peak>>20, respSize>>10)
}

// TestF4BodyLimits: a declared Content-Length over the body limit gets the
// 413 envelope with no body byte sent (with or without Expect:
// 100-continue), and a body that trickles gets the 408 envelope within the
// body timeout.
func TestF4BodyLimits(t *testing.T) {
	t.Parallel()
	const bodyTimeout = 500 * time.Millisecond
	cfg := func(body time.Duration) func(*httpapi.Config) {
		return func(c *httpapi.Config) {
			c.MaxBodyBytes = 1 << 20
			c.Timeouts.Body = body
		}
	}
	head := func(key string) string {
		return "POST /v1/memory_stores HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + key + "\r\nanthropic-beta: " + httpapi.BetaAgentMemory +
			"\r\nContent-Type: application/json\r\n"
	}
	// A long body timeout: the 413 must come from the headers alone, well
	// before the server would give up waiting for the body.
	const longBody = time.Minute
	long := newEdgeServer(t, cfg(longBody))
	for _, expect := range []string{"", "Expect: 100-continue\r\n"} {
		res, took := long.exchange(t, head(long.key)+expect+"Content-Length: 10485760\r\n\r\n")
		checkEnvelope(t, "declared body over the limit "+expect, res, http.StatusRequestEntityTooLarge, "request_too_large")
		if took >= 5*time.Second {
			t.Errorf("413 after %s, want it at once (body timeout %s)", took, longBody)
		}
	}

	es := newEdgeServer(t, cfg(bodyTimeout))
	res, took := es.exchange(t, head(es.key)+"Content-Length: 100\r\n\r\n{\"name\":")
	if res.status != http.StatusRequestTimeout || !bytes.Contains(res.body, []byte(`"type":"timeout_error"`)) ||
		res.header.Get("Content-Type") != "application/json" || res.header.Get("Request-Id") == "" {
		t.Errorf("trickling body: %d %v %s, want the 408 envelope", res.status, res.header, res.body)
	}
	if took < bodyTimeout || took > bodyTimeout+8*time.Second {
		t.Errorf("408 after %s, want it at the body timeout (%s)", took, bodyTimeout)
	}
	if stores, err := es.svc.ListStores(es.pctx, trove.ListStoresParams{}); err != nil || len(stores.Data) != 0 {
		t.Errorf("stores after refused bodies: %v, %v; want none", stores, err)
	}
}

// TestF6StrictBodies: request bodies are decoded case-sensitively and
// strictly: mis-cased, duplicate and unknown members and anything but a
// JSON object are 400 with the envelope, naming the member, and change
// nothing.
func TestF6StrictBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP)
	st, err := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.svc.CreateMemory(e.ctx(), st.ID, trove.CreateMemoryParams{Path: "/keep.md", Content: "k"})
	if err != nil {
		t.Fatal(err)
	}
	stores := "/v1/memory_stores"
	mems := stores + "/" + st.ID + "/memories"
	for _, c := range []struct {
		name, method, path, body string
		msg                      string // in the error message
	}{
		{"mis-cased name", "POST", stores, `{"NAME":"x"}`, `"NAME"`},
		{"mis-cased duplicate", "POST", stores, `{"name":"x","Name":"y"}`, `"Name"`},
		{"exact duplicate", "POST", stores, `{"name":"x","name":"y"}`, `duplicate field "name"`},
		{"duplicate metadata key", "POST", stores, `{"name":"x","metadata":{"a":"1","a":"2"}}`, `duplicate field "metadata.a"`},
		{"null store", "POST", stores, `null`, "not null"},
		{"array store", "POST", stores, `[]`, "not an array"},
		{"string store", "POST", stores, `"x"`, "not a string"},
		{"null update", "POST", stores + "/" + st.ID, `null`, "not null"},
		{"mis-cased path", "POST", mems, `{"path":"/a.md","PATH":"/b.md","content":""}`, `"PATH"`},
		{"duplicate path", "POST", mems, `{"path":"/a.md","path":"/b.md","content":""}`, `duplicate field "path"`},
		{"mis-cased precondition member", "POST", mems + "/" + m.ID, `{"content":"n","precondition":{"Type":"content_sha256"}}`, `"precondition.Type"`},
		{"wrong type", "POST", mems, `{"path":1,"content":""}`, `field "path" must be a string, not a number`},
		{"null session", "POST", "/trove/v1/sessions", `null`, "not null"},
		{"mis-cased session member", "POST", "/trove/v1/sessions", `{"Resources":[]}`, `"Resources"`},
	} {
		res := e.do(t, rawReq{method: c.method, path: c.path, body: c.body})
		checkEnvelope(t, c.name, res, http.StatusBadRequest, "invalid_request_error")
		if !bytes.Contains(res.body, []byte(strings.ReplaceAll(c.msg, `"`, `\"`))) {
			t.Errorf("%s: message does not say %s: %s", c.name, c.msg, res.body)
		}
	}
	ls, err := e.svc.ListStores(e.ctx(), trove.ListStoresParams{})
	if err != nil || len(ls.Data) != 1 || ls.Data[0].Name != "s" {
		t.Errorf("stores after refused bodies: %+v, %v; want only s", ls, err)
	}
	lm, err := e.svc.ListMemories(e.ctx(), st.ID, trove.ListMemoriesParams{})
	if err != nil || len(lm.Data) != 1 {
		t.Errorf("memories after refused bodies: %+v, %v; want only /keep.md", lm, err)
	}
	ss, err := e.svc.ListSessions(e.ctx(), trove.ListSessionsParams{})
	if err != nil || len(ss.Data) != 0 {
		t.Errorf("sessions after refused bodies: %+v, %v; want none", ss, err)
	}
}
