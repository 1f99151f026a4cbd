package postgres_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// faultProxy is a loopback TCP proxy in front of PostgreSQL that fails the
// way a network does without a reset: silence makes every connection
// through it (and every new one) stop forwarding in both directions, the
// bytes held, the sockets open; heal forwards what was held and resumes.
// It reads the protocol's messages from the client, so that it can also
// hold a COMMIT (holdNextCommit) or let a COMMIT through and hold its
// acknowledgement (loseNextCommitAck).
type faultProxy struct {
	ln     net.Listener
	target string
	done   chan struct{} // closed by close: every held pipe gives up

	mu         sync.Mutex
	c2s, s2c   chan struct{} // closed while forwarding in that direction
	commitMode int           // what to do at the next COMMIT (commit* below)
	commitSeen chan struct{} // closed when that COMMIT is held or forwarded
	conns      map[net.Conn]struct{}
	wg         sync.WaitGroup
}

const (
	commitPass    = iota // forward COMMIT as anything else
	commitHold           // hold COMMIT and go silent both ways
	commitLoseAck        // forward COMMIT, then hold everything the server sends
)

// newFaultProxy starts a proxy to the host of dbURL and returns it with
// dbURL rewritten to go through it.
func newFaultProxy(t testing.TB, dbURL string) (*faultProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil || u.Host == "" {
		t.Fatalf("the test database's address must be a URL with a host: %q", dbURL)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target, done: make(chan struct{}), conns: map[net.Conn]struct{}{},
		c2s: closedChan(), s2c: closedChan(), commitSeen: make(chan struct{})}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	u.Host = ln.Addr().String()
	return p, u.String()
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// silence stops forwarding both ways, on every connection.
func (p *faultProxy) silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silenceLocked(true, true)
}

func (p *faultProxy) silenceLocked(c2s, s2c bool) {
	if c2s && isClosed(p.c2s) {
		p.c2s = make(chan struct{})
	}
	if s2c && isClosed(p.s2c) {
		p.s2c = make(chan struct{})
	}
}

// heal forwards what was held and resumes forwarding.
func (p *faultProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !isClosed(p.c2s) {
		close(p.c2s)
	}
	if !isClosed(p.s2c) {
		close(p.s2c)
	}
}

// holdNextCommit makes the next COMMIT a client sends stop there, with the
// proxy silent both ways from then on; the returned channel is closed when
// that happens.
func (p *faultProxy) holdNextCommit() <-chan struct{} { return p.armCommit(commitHold) }

// loseNextCommitAck lets the next COMMIT reach the server and holds
// everything the server sends from then on (the acknowledgement is lost
// until heal); the returned channel is closed when the COMMIT is forwarded.
func (p *faultProxy) loseNextCommitAck() <-chan struct{} { return p.armCommit(commitLoseAck) }

func (p *faultProxy) armCommit(mode int) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commitMode = mode
	p.commitSeen = make(chan struct{})
	return p.commitSeen
}

// wait blocks until direction (p.c2s or p.s2c, read under the lock) is
// open; false when the proxy is closing.
func (p *faultProxy) wait(dir func() chan struct{}) bool {
	p.mu.Lock()
	ch := dir()
	p.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-p.done:
		return false
	}
}

func (p *faultProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.clientToServer(up, c)
		go p.serverToClient(c, up)
	}
}

// clientToServer forwards the client's messages one by one, watching for
// COMMIT.
func (p *faultProxy) clientToServer(up, c net.Conn) {
	defer p.wg.Done()
	defer p.drop(up, c)
	r := bufio.NewReader(c)
	startup := true
	for {
		var msg []byte
		if startup { // untyped: length, then code and parameters
			var n [4]byte
			if _, err := io.ReadFull(r, n[:]); err != nil {
				return
			}
			l := binary.BigEndian.Uint32(n[:])
			if l < 8 || l > 1<<20 {
				return
			}
			msg = make([]byte, l)
			copy(msg, n[:])
			if _, err := io.ReadFull(r, msg[4:]); err != nil {
				return
			}
			// SSLRequest and GSSENCRequest are followed by the real one.
			code := binary.BigEndian.Uint32(msg[4:8])
			startup = code == 80877103 || code == 80877104
		} else { // type byte, length, body
			var h [5]byte
			if _, err := io.ReadFull(r, h[:]); err != nil {
				return
			}
			l := binary.BigEndian.Uint32(h[1:])
			if l < 4 || l > 1<<30 {
				return
			}
			msg = make([]byte, 1+l)
			copy(msg, h[:])
			if _, err := io.ReadFull(r, msg[5:]); err != nil {
				return
			}
			if h[0] == 'Q' && isCommit(string(msg[5:])) {
				p.mu.Lock()
				switch p.commitMode {
				case commitHold:
					p.silenceLocked(true, true)
					close(p.commitSeen)
				case commitLoseAck:
					p.silenceLocked(false, true)
					close(p.commitSeen)
				}
				p.commitMode = commitPass
				p.mu.Unlock()
			}
		}
		if !p.wait(func() chan struct{} { return p.c2s }) {
			return
		}
		if _, err := up.Write(msg); err != nil {
			return
		}
	}
}

func isCommit(q string) bool {
	q = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(strings.TrimRight(q, "\x00")), ";"))
	return strings.EqualFold(q, "COMMIT")
}

func (p *faultProxy) serverToClient(c, up net.Conn) {
	defer p.wg.Done()
	defer p.drop(up, c)
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			if !p.wait(func() chan struct{} { return p.s2c }) {
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *faultProxy) drop(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
	}
	p.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

func (p *faultProxy) close() {
	p.ln.Close()
	close(p.done)
	p.mu.Lock()
	var all []net.Conn
	for c := range p.conns {
		all = append(all, c)
	}
	p.mu.Unlock()
	p.drop(all...)
	p.wg.Wait()
}
