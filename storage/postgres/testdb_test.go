package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove/internal/pgtest"

	"github.com/trovehq/trove/storage/postgres"
)

// testURL returns the test database's URL (pgtest.URL): $TROVE_TEST_POSTGRES,
// else a private cluster of this test process; it skips the test when
// there is neither.
func testURL(t testing.TB) string {
	t.Helper()
	return pgtest.URL(t)
}

// adminConn connects to the test database directly. The test fails (not
// skips) when the database is unreachable.
func adminConn(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, testURL(t))
	if err != nil {
		t.Fatalf("the test database is unreachable: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// newSchema creates a fresh empty schema trove_test_<random> and drops it,
// with everything in it, when the test ends.
func newSchema(t testing.TB) string {
	t.Helper()
	c := adminConn(t)
	name := randomName("trove_test_")
	if _, err := c.Exec(context.Background(), "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, testURL(t))
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// schemaAt returns the statements that bring the empty schema to version
// (the first version migration files applied and recorded as the driver
// records them): a database as an older trove left it, for migration tests
// to fill and then migrate.
func schemaAt(t testing.TB, schema string, version int) []string {
	t.Helper()
	q := []string{"SET LOCAL search_path TO " + schema,
		`CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`}
	ents, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range ents[:version] {
		b, err := os.ReadFile("migrations/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		q = append(q, string(b), fmt.Sprintf(`INSERT INTO schema_version (version, name) VALUES (%d, '%s')`, i+1, e.Name()))
	}
	return q
}

// openDB opens the driver on a fresh schema, migrated, with a small pool.
func openDB(t testing.TB) *postgres.DB {
	t.Helper()
	return openDBOn(t, testURL(t), newSchema(t), postgres.Options{})
}

// openDBOn opens the driver at url on schema with opts (AutoMigrate and a
// small pool added) and closes it when the test ends.
func openDBOn(t testing.TB, url, schema string, opts postgres.Options) *postgres.DB {
	t.Helper()
	opts.AutoMigrate = true
	opts.Schema = schema
	if opts.MaxConns == 0 {
		opts.MaxConns = 4
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := postgres.Open(ctx, url, opts)
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// withParam returns u with a query parameter set.
func withParam(t testing.TB, u, key, value string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatalf("the test database's address must be a URL: %v", err)
	}
	q := p.Query()
	q.Set(key, value)
	p.RawQuery = q.Encode()
	return p.String()
}

// proxy is a TCP proxy in front of PostgreSQL that a test can take down:
// it simulates a database that restarts or becomes unreachable without
// disturbing anyone else using the real server.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  proxyMode
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

type proxyMode int

const (
	proxyUp        proxyMode = iota // forward connections
	proxyDown                       // close every connection at once (refused)
	proxyBlackhole                  // accept connections and never answer
)

// newProxy starts a proxy to the host of dbURL and returns it with dbURL
// rewritten to go through it.
func newProxy(t testing.TB, dbURL string) (*proxy, string) {
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
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		if mode == proxyDown {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		if mode == proxyBlackhole {
			continue // held open, never answered, closed by setMode or close
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.drop(c)
			continue
		}
		p.mu.Lock()
		p.conns[up] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	p.drop(dst)
	p.drop(src)
}

func (p *proxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// setMode switches the proxy and cuts every open connection (forwarded
// ones when going down, held ones when coming back up).
func (p *proxy) setMode(m proxyMode) {
	p.mu.Lock()
	p.mode = m
	var cut []net.Conn
	for c := range p.conns {
		cut = append(cut, c)
	}
	p.mu.Unlock()
	for _, c := range cut {
		p.drop(c)
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.setMode(proxyDown)
	p.wg.Wait()
}

// execAll runs the statements q (a schema's migrations and the rows a
// migration test starts from, as schemaAt returns them) in one
// transaction on c.
func execAll(t testing.TB, c *pgx.Conn, q []string) {
	t.Helper()
	ctx := context.Background()
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range q {
		if _, err := tx.Exec(ctx, s); err != nil {
			t.Fatalf("%.60s: %v", s, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// queryPairs runs sql on c, whose rows are two text columns, and returns
// them as a map from the first to the second.
func queryPairs(t testing.TB, c *pgx.Conn, sql string) map[string]string {
	t.Helper()
	rows, err := c.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
