package postgres_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
)

// Fault tests: a node (A) reaches PostgreSQL through a faultProxy whose
// connections go silent without a reset, the way a partition or a dead
// middlebox fails; another node (B) reaches it directly. Time bounds are
// small so that each test takes seconds.

// memoryAt reports whether the store holds a live memory at path, read by
// db (a node whose connection works).
func memoryAt(t *testing.T, db storage.Driver, storeID, path string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var found bool
	err := db.Read(ctx, func(tx storage.Tx) error {
		_, err := tx.MemoryGetByPath(ctx, storeID, path, false)
		switch code(err) {
		case trove.ENOTFOUND:
			return nil
		case "":
			found = true
			return nil
		}
		return err
	})
	if err != nil {
		t.Fatalf("reading %s back: %v", path, err)
	}
	return found
}

// insertMemory is a write of one memory, as core does it: the store's lock,
// then the insert.
func insertMemory(ctx context.Context, db storage.Driver, storeID, path string, between func()) error {
	return db.Write(ctx, func(tx storage.Tx) error {
		if _, err := tx.StoreLock(ctx, "ws", storeID); err != nil {
			return err
		}
		if between != nil {
			between()
		}
		return tx.MemoryInsert(ctx, newMemory(storeID, path, "x"))
	})
}

// noTransactionOf waits until no backend of application app is inside a
// transaction (whatever a held message could still do has been done).
func noTransactionOf(t *testing.T, app string) {
	t.Helper()
	admin := adminConn(t)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		if err := admin.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND xact_start IS NOT NULL", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends of %s still in a transaction", n, app)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFaultSilentLockHolder: A's write takes a store's lock, then A's
// connection goes silent. A's write fails with EUNAVAILABLE by its
// deadline (the statement on the silent connection is abandoned and the
// connection discarded); B's write to the same store proceeds within
// seconds, because the server ends A's transaction (idle in transaction
// past its timeout), releasing the lock; A's write never lands, not even
// once the network heals and the held statement reaches the server; A
// works again on fresh connections; nothing acknowledged is lost.
func TestFaultSilentLockHolder(t *testing.T) {
	t.Parallel()
	url, schema := testURL(t), newSchema(t)
	app := randomName("trove_fault_")
	b := openDBOn(t, url, schema, postgres.Options{MaxConns: 2})
	fp, purl := newFaultProxy(t, withParam(t, url, "application_name", app))
	a := openDBOn(t, purl, schema, postgres.Options{MaxConns: 2, ConnectTimeout: time.Second, IdleInTxTimeout: time.Second})
	st := fixtureStore(t, b, "ws")
	if err := insertMemory(context.Background(), a, st.ID, "/acked", nil); err != nil {
		t.Fatal(err)
	}

	const deadline = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	locked := make(chan struct{})
	aErr := make(chan error, 1)
	go func() {
		aErr <- insertMemory(ctx, a, st.ID, "/from-a", func() { fp.silence(); close(locked) })
	}()
	select {
	case <-locked:
	case err := <-aErr:
		t.Fatalf("A's write ended before it held the lock: %v", err)
	}

	bctx, bcancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer bcancel()
	bStart := time.Now()
	if err := insertMemory(bctx, b, st.ID, "/from-b", nil); err != nil {
		t.Fatalf("B's write to the store locked by A's silent connection: %v after %v", err, time.Since(bStart))
	}
	if d := time.Since(bStart); d > 4*time.Second {
		t.Errorf("B's write waited %v for the lock of A's silent connection (idle-in-transaction timeout 1s)", d)
	}

	err := <-aErr
	if d := time.Since(start); d > deadline+time.Second {
		t.Errorf("A's write answered after %v, past its %v deadline", d, deadline)
	}
	if code(err) != trove.EUNAVAILABLE {
		t.Fatalf("A's write on a silent connection = %v, want EUNAVAILABLE", err)
	}

	fp.heal()
	noTransactionOf(t, app)
	if memoryAt(t, b, st.ID, "/from-a") {
		t.Fatal("A's write landed after A was answered with an error")
	}
	for _, p := range []string{"/acked", "/from-b"} {
		if !memoryAt(t, b, st.ID, p) {
			t.Fatalf("acknowledged write %s lost", p)
		}
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := insertMemory(wctx, a, st.ID, "/a-again", nil); err != nil {
		t.Fatalf("A after the network healed: %v", err)
	}
}

// TestFaultHeldCommitNeverLands: A's COMMIT is held in the network (sent,
// neither delivered nor answered) past A's deadline. A answers
// EUNAVAILABLE within its deadline, and the write never lands: when the
// network heals and the COMMIT reaches the server, the server has already
// ended A's transaction (idle in transaction), because A answered only
// once that was certain.
func TestFaultHeldCommitNeverLands(t *testing.T) {
	t.Parallel()
	url, schema := testURL(t), newSchema(t)
	app := randomName("trove_fault_")
	b := openDBOn(t, url, schema, postgres.Options{MaxConns: 2})
	fp, purl := newFaultProxy(t, withParam(t, url, "application_name", app))
	a := openDBOn(t, purl, schema, postgres.Options{MaxConns: 2, ConnectTimeout: time.Second, IdleInTxTimeout: time.Second})
	st := fixtureStore(t, b, "ws")

	const deadline = 4 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	held := fp.holdNextCommit()
	start := time.Now()
	err := insertMemory(ctx, a, st.ID, "/held", nil)
	took := time.Since(start)
	select {
	case <-held:
	default:
		t.Fatalf("the write ended (%v) without its COMMIT reaching the proxy", err)
	}
	fp.heal() // the held COMMIT reaches the server now
	noTransactionOf(t, app)
	if memoryAt(t, b, st.ID, "/held") {
		t.Fatalf("the write landed after its caller was answered with an error (%v)", err)
	}
	if code(err) != trove.EUNAVAILABLE || !strings.Contains(trove.ErrorMessage(err), "may or may not") {
		t.Fatalf("write whose COMMIT was held = %v, want EUNAVAILABLE saying it may or may not have been applied", err)
	}
	if took > deadline+500*time.Millisecond {
		t.Errorf("write answered after %v, past its %v deadline", took, deadline)
	}
}

// TestFaultLostCommitAck: A's COMMIT reaches the server but its
// acknowledgement is lost. A answers EUNAVAILABLE ("may or may not have
// been applied") within its deadline, and only once the outcome is
// settled: reading back right after the answer tells the truth (here:
// applied), and it does not change afterwards.
func TestFaultLostCommitAck(t *testing.T) {
	t.Parallel()
	url, schema := testURL(t), newSchema(t)
	app := randomName("trove_fault_")
	b := openDBOn(t, url, schema, postgres.Options{MaxConns: 2})
	fp, purl := newFaultProxy(t, withParam(t, url, "application_name", app))
	a := openDBOn(t, purl, schema, postgres.Options{MaxConns: 2, ConnectTimeout: time.Second, IdleInTxTimeout: time.Second})
	st := fixtureStore(t, b, "ws")

	const deadline = 4 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	forwarded := fp.loseNextCommitAck()
	start := time.Now()
	err := insertMemory(ctx, a, st.ID, "/ack-lost", nil)
	took := time.Since(start)
	select {
	case <-forwarded:
	default:
		t.Fatalf("the write ended (%v) without its COMMIT reaching the proxy", err)
	}
	if code(err) != trove.EUNAVAILABLE || !strings.Contains(trove.ErrorMessage(err), "may or may not") {
		t.Fatalf("write whose acknowledgement was lost = %v, want EUNAVAILABLE saying it may or may not have been applied", err)
	}
	if took > deadline+500*time.Millisecond {
		t.Errorf("write answered after %v, past its %v deadline", took, deadline)
	}
	if !memoryAt(t, b, st.ID, "/ack-lost") {
		t.Fatal("read back right after the answer: not applied, though the server committed it")
	}
	fp.heal()
	noTransactionOf(t, app)
	if !memoryAt(t, b, st.ID, "/ack-lost") {
		t.Fatal("the write disappeared")
	}
}

// faultServer is the HTTP API over core over db, with request timeout rt,
// and an API key for it.
func faultServer(t *testing.T, db *postgres.DB, rt time.Duration) (*httptest.Server, string) {
	t.Helper()
	svc := core.New(db, core.Options{})
	_, secret, err := svc.CreateKey(context.Background(), "ws", "fault")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc, Health: db.Ping,
		Timeouts: httpapi.Timeouts{Request: rt}}))
	t.Cleanup(srv.Close)
	return srv, secret
}

// call sends one API request and returns the status, x-should-retry and
// the time it took; the client gives up after 15 s (a hang fails the test).
func call(t *testing.T, srv *httptest.Server, key, method, path, body string) (int, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("anthropic-beta", httpapi.BetaAgentMemory)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: no answer after %v: %v", method, path, time.Since(start), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Should-Retry"), time.Since(start)
}

// TestFaultRequestDeadline: with the node's database connections silent,
// every request is answered by its deadline with the retryable 503, and
// the node serves again once the network heals.
func TestFaultRequestDeadline(t *testing.T) {
	t.Parallel()
	url, schema := testURL(t), newSchema(t)
	fp, purl := newFaultProxy(t, url)
	// A connect timeout past the request's: the request's deadline is what
	// answers.
	db := openDBOn(t, purl, schema, postgres.Options{MaxConns: 2, ConnectTimeout: 10 * time.Second, IdleInTxTimeout: 300 * time.Millisecond})
	const rt = 2 * time.Second
	srv, key := faultServer(t, db, rt)
	st, _, _ := call(t, srv, key, "POST", "/v1/memory_stores", `{"name":"s"}`)
	if st != http.StatusOK {
		t.Fatalf("create store = %d", st)
	}
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	svcStores := func() string {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/memory_stores", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("anthropic-beta", httpapi.BetaAgentMemory)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || len(list.Data) != 1 {
			t.Fatalf("list stores: %v %v", err, list)
		}
		return list.Data[0].ID
	}
	storeID := svcStores()

	fp.silence()
	for _, r := range []struct{ method, path, body string }{
		{"POST", memPath(storeID), `{"path":"/m","content":"x"}`},
		{"GET", "/v1/memory_stores/" + storeID, ""},
		{"GET", memPath(storeID), ""},
	} {
		status, retry, took := call(t, srv, key, r.method, r.path, r.body)
		t.Logf("%s %s: %d after %v", r.method, r.path, status, took)
		if status != http.StatusServiceUnavailable || retry != "true" {
			t.Errorf("%s %s on a silent database = %d (x-should-retry %q), want 503 with x-should-retry: true", r.method, r.path, status, retry)
		}
		if took > rt+time.Second {
			t.Errorf("%s %s answered after %v, past the %v request deadline", r.method, r.path, took, rt)
		}
	}
	fp.heal()
	healed := time.Now()
	for deadline := time.Now().Add(10 * time.Second); ; {
		status, _, took := call(t, srv, key, "POST", memPath(storeID), `{"path":"/after","content":"x"}`)
		t.Logf("after heal +%v: %d in %v", time.Since(healed), status, took)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create after the network healed = %d", status)
		}
	}
}

// TestFaultLockHeldElsewhere is the psql repro: another session
// holds a store's row lock and sleeps (BEGIN; SELECT … FOR UPDATE;
// SELECT pg_sleep(40)). A create in that store is answered with the
// retryable 503 within the lock timeout instead of hanging.
func TestFaultLockHeldElsewhere(t *testing.T) {
	t.Parallel()
	url, schema := testURL(t), newSchema(t)
	const lockTimeout = time.Second
	db := openDBOn(t, url, schema, postgres.Options{MaxConns: 2, LockTimeout: lockTimeout})
	srv, key := faultServer(t, db, 10*time.Second)
	st := fixtureStore(t, db, "ws")

	holder := adminConn(t)
	bg := context.Background()
	var pid int
	if err := holder.QueryRow(bg, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(bg, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(bg, "SELECT id FROM "+schema+".stores WHERE id = $1 FOR UPDATE", st.ID); err != nil {
		t.Fatal(err)
	}
	sleeping := make(chan error, 1)
	go func() {
		_, err := holder.Exec(bg, "SELECT pg_sleep(40)")
		sleeping <- err
	}()
	t.Cleanup(func() {
		_, _ = adminConn(t).Exec(bg, "SELECT pg_cancel_backend($1)", pid)
		<-sleeping
	})

	status, retry, took := call(t, srv, key, "POST", memPath(st.ID), `{"path":"/m","content":"x"}`)
	if status != http.StatusServiceUnavailable || retry != "true" {
		t.Fatalf("create in a store locked elsewhere = %d (x-should-retry %q), want 503 with x-should-retry: true", status, retry)
	}
	if took > lockTimeout+2*time.Second {
		t.Errorf("create answered after %v, lock timeout %v", took, lockTimeout)
	}
	// Reads of the store are not blocked by the lock.
	if status, _, _ := call(t, srv, key, "GET", memPath(st.ID), ""); status != http.StatusOK {
		t.Errorf("list while the store is locked elsewhere = %d, want 200", status)
	}
}

// TestFaultSilentListener: the change-feed listener's connection goes
// silent. The listener notices within seconds (it pings a quiet
// connection under a deadline), says so (a "" notification: anything may
// have been missed), and hears other nodes' commits again once the network
// heals.
func TestFaultSilentListener(t *testing.T) {
	t.Parallel()
	url, schema := testURL(t), newSchema(t)
	b := openDBOn(t, url, schema, postgres.Options{MaxConns: 2})
	fp, purl := newFaultProxy(t, url)
	a := openDBOn(t, purl, schema, postgres.Options{MaxConns: 2, ConnectTimeout: time.Second, TCPTimeout: 2 * time.Second})
	heard := make(chan string, 1000)
	a.NotifyVersions(func(id string) { heard <- id })
	svc := core.New(b, core.Options{})
	ctx := apiPrincipal("ws")
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "listened"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	// hear waits until the listener delivers want; with write, B commits a
	// version every 200 ms meanwhile.
	hear := func(want string, write bool, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for deadline := start.Add(within); time.Now().Before(deadline); {
			if write {
				n++
				if _, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/n" + strconv.Itoa(n), Content: "x"}); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case id := <-heard:
				if id == want {
					return time.Since(start)
				}
			case <-time.After(200 * time.Millisecond):
			}
		}
		t.Fatalf("the listener did not deliver %q within %v", want, within)
		return 0
	}
	hear(st.ID, true, 10*time.Second)
	fp.silence()
	if d := hear("", false, 6*time.Second); d > 4*time.Second {
		t.Errorf("the listener noticed its silent connection after %v", d)
	}
	fp.heal()
	hear(st.ID, true, 10*time.Second)
}
