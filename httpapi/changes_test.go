package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// clientFor returns an httpapi.Client of e with secret.
func (e *testEnv) clientFor(secret string) *httpapi.Client {
	opts := []httpapi.ClientOption{httpapi.WithMaxRetries(0)}
	if e.hc != nil {
		opts = append(opts, httpapi.WithHTTPClient(e.hc))
	}
	return httpapi.NewClient(e.url, secret, opts...)
}

// TestChangesList: the JSON form pages exactly what core lists, the long
// poll waits for a write, and bad input gets the error envelope.
func TestChangesList(t *testing.T) {
	t.Parallel()
	forTransports(t, func(t *testing.T, tr transport) {
		e := newEnv(t, tr)
		c := e.clientFor(e.key)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st, err := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "s"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 7 {
			if _, err := e.svc.CreateMemory(e.ctx(), st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/m%d", i), Content: "x"}); err != nil {
				t.Fatal(err)
			}
		}
		want, err := e.svc.ListChanges(e.ctx(), st.ID, trove.ListChangesParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var got []trove.Change
		var cursor int64
		for {
			b, err := c.ListChanges(ctx, st.ID, trove.ListChangesParams{After: cursor, Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, b.Changes...)
			cursor = b.Cursor
			if !b.More {
				break
			}
		}
		if diff := cmp.Diff(want.Changes, got); diff != "" || cursor != 7 {
			t.Fatalf("cursor %d; changes over HTTP (-core +http):\n%s", cursor, diff)
		}

		// Long poll: WaitChanges returns once a write lands.
		type res struct {
			seq int64
			err error
		}
		done := make(chan res, 1)
		go func() { s, err := c.WaitChanges(ctx, st.ID, 7); done <- res{s, err} }()
		if _, err := e.svc.CreateMemory(e.ctx(), st.ID, trove.CreateMemoryParams{Path: "/late", Content: "x"}); err != nil {
			t.Fatal(err)
		}
		if r := <-done; r.err != nil || r.seq != 8 {
			t.Fatalf("WaitChanges: %d, %v", r.seq, r.err)
		}
		// A wait that passes answers an empty page with the cursor kept.
		b, err := c.ListChanges(ctx, st.ID, trove.ListChangesParams{After: 8})
		if err != nil || len(b.Changes) != 0 || b.Cursor != 8 || b.More {
			t.Fatalf("after the end: %+v, %v", b, err)
		}
		short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err = c.WaitChanges(short, st.ID, 8)
		cancelShort()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitChanges on a quiet store: %v", err)
		}

		for _, q := range []string{"after=-1", "after=x", "wait=10m", "wait=soon", "limit=1000", "limit=x", "since=3"} {
			res, body := e.rawGet(t, "/trove/v1/memory_stores/"+st.ID+"/changes?"+q, nil)
			if res.StatusCode != 400 || !strings.Contains(body, "invalid_request_error") || res.Header.Get("Trove-Changes") != "1" {
				t.Errorf("?%s: %d %s", q, res.StatusCode, body)
			}
		}
		_, err = c.ListChanges(ctx, "memstore_nope", trove.ListChangesParams{})
		if trove.ErrorCode(err) != trove.ENOTFOUND || errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("unknown store: %v", err)
		}
	})
}

// rawGet sends a GET with the test key and extra headers and returns the
// answer with its body read.
func (e *testEnv) rawGet(t *testing.T, path string, h http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+e.key)
	res, err := e.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// TestChangesScope: a session token follows and lists its attached
// stores only; another store is not found, whatever the form.
func TestChangesScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mine, _ := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "mine"})
	theirs, _ := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "theirs"})
	if _, err := e.svc.CreateMemory(e.ctx(), theirs.ID, trove.CreateMemoryParams{Path: "/secret", Content: "s"}); err != nil {
		t.Fatal(err)
	}
	_, token, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: mine.ID, Access: trove.AccessReadOnly}}})
	if err != nil {
		t.Fatal(err)
	}
	c := e.clientFor(token)
	if _, err := c.ListChanges(ctx, theirs.ID, trove.ListChangesParams{}); trove.ErrorCode(err) != trove.ENOTFOUND {
		t.Fatalf("session ListChanges on another store: %v", err)
	}
	if _, err := c.WaitChanges(ctx, theirs.ID, 0); trove.ErrorCode(err) != trove.ENOTFOUND {
		t.Fatalf("session WaitChanges on another store: %v", err)
	}
	err = c.FollowChanges(ctx, theirs.ID, 0, func(ch trove.Change) error {
		t.Errorf("session saw another store's change %+v", ch)
		return nil
	}, nil)
	if trove.ErrorCode(err) != trove.ENOTFOUND {
		t.Fatalf("session FollowChanges on another store: %v", err)
	}
	// Its own store: followed.
	if _, err := e.svc.CreateMemory(e.ctx(), mine.ID, trove.CreateMemoryParams{Path: "/a", Content: "a"}); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	err = c.FollowChanges(ctx, mine.ID, 0, func(ch trove.Change) error {
		if ch.Path != "/a" || ch.Seq != 1 {
			t.Errorf("change %+v", ch)
		}
		return stop
	}, nil)
	if err != stop {
		t.Fatalf("FollowChanges on its store: %v", err)
	}
	// Bad credentials are not retried forever.
	bad := e.clientFor("trove_sk_nope")
	if err := bad.FollowChanges(ctx, mine.ID, 0, func(trove.Change) error { return nil }, nil); trove.ErrorCode(err) != trove.EUNAUTHENTICATED {
		t.Fatalf("bad key: %v", err)
	}
}

// cutProxy forwards TCP connections to target and can cut every open one,
// or send the next ones to another target.
type cutProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string // host:port
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: strings.TrimPrefix(target, "http://")}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			target := p.target
			p.mu.Unlock()
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) url() string { return "http://" + p.ln.Addr().String() }

// retarget sends the connections accepted from now on to target (a base
// URL); open ones stay where they are.
func (p *cutProxy) retarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = strings.TrimPrefix(target, "http://")
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestFollowChangesReconnect: a follower whose connection is cut again
// and again while writers go on gets every change exactly once, in order,
// on both drivers.
func TestFollowChangesReconnect(t *testing.T) {
	t.Parallel()
	for _, drv := range []string{"sqlite", "postgres"} {
		t.Run(drv, func(t *testing.T) {
			t.Parallel()
			var e *testEnv
			if drv == "sqlite" {
				e = newEnv(t, netHTTP)
			} else {
				e = newPostgresEnv(t, netHTTP)
			}
			st, _ := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "s"})
			px := newCutProxy(t, e.url)
			c := httpapi.NewClient(px.url(), e.key, httpapi.WithMaxRetries(0))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			const total = 120
			var got []int64
			var mu sync.Mutex
			conns := 0
			connected := make(chan struct{}, 100)
			followed := make(chan error, 1)
			done := errors.New("done")
			go func() {
				followed <- c.FollowChanges(ctx, st.ID, 0, func(ch trove.Change) error {
					got = append(got, ch.Seq)
					if len(got) == total {
						return done
					}
					return nil
				}, func(up bool) {
					if up {
						mu.Lock()
						conns++
						mu.Unlock()
						connected <- struct{}{}
					}
				})
			}()
			<-connected
			for i := range total {
				if _, err := e.svc.CreateMemory(e.ctx(), st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/m%03d", i), Content: "x"}); err != nil {
					t.Fatal(err)
				}
				if i%20 == 10 {
					px.cut()
					<-connected // the follower is back before the next writes
				}
			}
			if err := <-followed; err != done {
				t.Fatalf("FollowChanges: %v (got %d changes)", err, len(got))
			}
			for i, s := range got {
				if s != int64(i+1) {
					t.Fatalf("position %d has seq %d: lost, repeated or reordered: %v", i, s, got)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if conns < 6 {
				t.Fatalf("only %d connections: the cuts did not happen", conns)
			}
		})
	}
}

// TestChangesStreamOutlivesWriteTimeout: heartbeats keep an idle stream
// open past the server's write timeout, a change still arrives after, a
// Last-Event-ID resumes after that seq.
func TestChangesStreamOutlivesWriteTimeout(t *testing.T) {
	t.Parallel()
	const write = 150 * time.Millisecond
	e := newEnv(t, netHTTP, func(c *httpapi.Config) {
		c.Timeouts.Write = write
		c.FeedHeartbeat = 30 * time.Millisecond
	})
	st, _ := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "s"})
	for _, p := range []string{"/a", "/b"} {
		if _, err := e.svc.CreateMemory(e.ctx(), st.ID, trove.CreateMemoryParams{Path: p, Content: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := http.NewRequest("GET", e.url+"/trove/v1/memory_stores/"+st.ID+"/changes?after=0", nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "1") // wins over after=0
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("%d %s", res.StatusCode, ct)
	}
	lines := bufio.NewScanner(res.Body)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("stream ended: %v", lines.Err())
		}
		return lines.Text()
	}
	var ids []string
	start := time.Now()
	beats := 0
	for time.Since(start) < 3*write || beats < 3 {
		switch l := next(); {
		case strings.HasPrefix(l, "id: "):
			ids = append(ids, l[4:])
		case l == ": heartbeat":
			beats++
		}
	}
	if _, err := e.svc.CreateMemory(e.ctx(), st.ID, trove.CreateMemoryParams{Path: "/c", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	for len(ids) < 2 {
		if l := next(); strings.HasPrefix(l, "id: ") {
			ids = append(ids, l[4:])
		}
	}
	if diff := cmp.Diff([]string{"2", "3"}, ids); diff != "" {
		t.Fatalf("event ids (-want +got):\n%s", diff)
	}
}
