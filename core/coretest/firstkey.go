package coretest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage"
)

// testEnsureFirstKey: EnsureFirstKey on one node creates a key only in a
// database without any key (revoked ones count), returns the oldest key
// otherwise, and has CreateKey's rules.
func testEnsureFirstKey(t *testing.T, open Opener) {
	d := open(t)
	t.Cleanup(func() { d.Close() })
	svc := core.New(d, core.Options{Now: newClock(t0, time.Millisecond).Now})
	bg := context.Background()
	session := trove.WithPrincipal(bg, &trove.Principal{WorkspaceID: wsA, Actor: trove.Actor{Type: trove.ActorSession, SessionID: "sesn_x"}, Session: &trove.SessionScope{}})
	listKeys := func(t *testing.T) []trove.APIKey {
		t.Helper()
		ks, err := svc.ListKeys(bg, "")
		if err != nil {
			t.Fatalf("ListKeys: %v", err)
		}
		return ks
	}

	for _, c := range []struct {
		name           string
		ctx            context.Context
		workspace, key string
		code           string
	}{
		{"EmptyWorkspace", bg, " ", "default", trove.EINVALID},
		{"ControlCharacterInName", bg, wsA, "de\x00fault", trove.EINVALID},
		{"SessionPrincipal", session, wsA, "default", trove.EFORBIDDEN},
	} {
		t.Run("Refused/"+c.name, func(t *testing.T) {
			k, secret, created, err := svc.EnsureFirstKey(c.ctx, c.workspace, c.key)
			wantCode(t, "EnsureFirstKey", err, c.code)
			if k != nil || secret != "" || created {
				t.Errorf("refused EnsureFirstKey returned %+v, %q, %v", k, secret, created)
			}
		})
	}
	if ks := listKeys(t); len(ks) != 0 {
		t.Fatalf("keys after refused calls: %+v", ks)
	}

	first, secret, created, err := svc.EnsureFirstKey(bg, wsA, "default")
	if err != nil || !created {
		t.Fatalf("EnsureFirstKey on an empty database = %+v, created %v, %v; want a created key", first, created, err)
	}
	p, err := svc.Authenticate(bg, secret)
	if err != nil {
		t.Fatalf("Authenticate with the first key's secret: %v", err)
	}
	if diff := cmp.Diff(&trove.Principal{WorkspaceID: wsA, Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: first.ID}}, p); diff != "" {
		t.Errorf("first key's principal (-want +got):\n%s", diff)
	}
	if first.WorkspaceID != wsA || first.Name != "default" || first.RevokedAt != nil {
		t.Errorf("first key = %+v", first)
	}
	if diff := cmp.Diff([]trove.APIKey{*first}, listKeys(t)); diff != "" {
		t.Errorf("keys after the first (-want +got):\n%s", diff)
	}

	// Any key, of any workspace, revoked or not, means there is a first
	// key already.
	again := func(t *testing.T, ctx context.Context, ws string, want *trove.APIKey) {
		t.Helper()
		k, secret, created, err := svc.EnsureFirstKey(ctx, ws, "another")
		if err != nil || created || secret != "" {
			t.Fatalf("EnsureFirstKey with a key = %q, created %v, %v; want nothing created", secret, created, err)
		}
		if diff := cmp.Diff(want, k); diff != "" {
			t.Errorf("key returned (-want +got):\n%s", diff)
		}
	}
	t.Run("SecondCall", func(t *testing.T) { again(t, bg, wsB, first) })
	if err := svc.RevokeKey(bg, first.ID); err != nil {
		t.Fatal(err)
	}
	revoked := listKeys(t)[0]
	t.Run("RevokedKey", func(t *testing.T) { again(t, bg, wsA, &revoked) })

	// An API-key principal sees its own workspace only.
	kb, secretB, err := svc.CreateKey(bg, wsB, "b")
	if err != nil {
		t.Fatal(err)
	}
	pb, err := svc.Authenticate(bg, secretB)
	if err != nil {
		t.Fatal(err)
	}
	ctxB := trove.WithPrincipal(bg, pb)
	t.Run("KeyPrincipalOwnWorkspace", func(t *testing.T) { again(t, ctxB, wsB, kb) })
	t.Run("KeyPrincipalOtherWorkspace", func(t *testing.T) {
		_, _, _, err := svc.EnsureFirstKey(ctxB, wsA, "another")
		wantCode(t, "EnsureFirstKey for another workspace", err, trove.EFORBIDDEN)
	})
	if ks := listKeys(t); len(ks) != 2 {
		t.Errorf("keys at the end = %+v, want the first and b", ks)
	}
}

// Nodes opens several drivers over one database, as several nodes
// (processes) sharing it would have: each its own connections or pool.
type Nodes struct {
	// Open opens n drivers over one fresh, empty, migrated database and
	// arranges for them to be closed when the test ends.
	Open func(t *testing.T, n int) []storage.Driver
	// ConcurrentWrites says that Writes of separate drivers run at the same
	// time (PostgreSQL). False when the database takes one writer at a time
	// (SQLite): a Write's function waiting there for another driver's
	// Write would wait forever.
	ConcurrentWrites bool
}

// nodeTests is the multi-node suite.
var nodeTests = []struct {
	name string
	fn   func(t *testing.T, nodes Nodes)
}{
	{"FirstKeyConcurrent", testFirstKeyConcurrent},
}

// RunNodes is the multi-node part of core's suite: rules that must hold
// when several core.Services, one per node, share one database. Every test
// opens its own database, so the tests run in parallel.
func RunNodes(t *testing.T, nodes Nodes) {
	t.Helper()
	for _, tc := range nodeTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, nodes)
		})
	}
}

// testFirstKeyConcurrent: nodes starting together on an empty database
// each call EnsureFirstKey; exactly one key is created, and every other
// node is returned that key.
//
// To make the race certain rather than likely, every node's driver holds
// each node at a gate until every node has reached it (or its call has
// ended): right after reading the keys outside a Write (a check that could
// not be one decision with the insert: all would find none), and, where
// Writes of separate drivers run at the same time, at the first key
// operation of its Write, so that all the Writes are open together before
// any of them checks.
func testFirstKeyConcurrent(t *testing.T, nodes Nodes) {
	const n = 8
	drivers := nodes.Open(t, n)
	if len(drivers) != n {
		t.Fatalf("Nodes.Open returned %d drivers, want %d", len(drivers), n)
	}
	g := newGate(n)
	svcs := make([]*core.Service, n)
	for i, d := range drivers {
		svcs[i] = core.New(gatedDriver{Driver: d, gate: g, node: i, inWrite: nodes.ConcurrentWrites}, core.Options{})
	}
	type result struct {
		key     *trove.APIKey
		secret  string
		created bool
		err     error
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, svc := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer g.arrive(i) // a call that ended holds no one at the gate
			<-start
			var r result
			r.key, r.secret, r.created, r.err = svc.EnsureFirstKey(context.Background(), wsA, fmt.Sprintf("node %d", i))
			results[i] = r
		}()
	}
	close(start)
	wg.Wait()

	var creators []int
	for i, r := range results {
		if r.err != nil {
			t.Errorf("node %d: %v", i, r.err)
		}
		if r.created {
			creators = append(creators, i)
		}
	}
	if len(creators) != 1 {
		t.Fatalf("nodes %v created a first key; want exactly one", creators)
	}
	c := creators[0]
	first := results[c].key
	for i, r := range results {
		if i == c || r.err != nil {
			continue
		}
		if diff := cmp.Diff(first, r.key); r.secret != "" || diff != "" {
			t.Errorf("node %d: secret %q and key (-creator's +got):\n%s", i, r.secret, diff)
		}
	}
	other := svcs[(c+1)%n]
	if p, err := other.Authenticate(context.Background(), results[c].secret); err != nil || p.Actor.APIKeyID != first.ID {
		t.Errorf("the first key's secret on another node: %+v, %v", p, err)
	}
	ks, err := other.ListKeys(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]trove.APIKey{*first}, ks); diff != "" {
		t.Errorf("keys in the database (-want +got):\n%s", diff)
	}
}

// gate holds each of n nodes, once, until every node has arrived.
type gate struct {
	n       int
	mu      sync.Mutex
	arrived map[int]bool
	all     chan struct{} // closed when the n-th node arrives
}

func newGate(n int) *gate {
	return &gate{n: n, arrived: map[int]bool{}, all: make(chan struct{})}
}

// arrive records node's arrival and waits for every other node's. A node's
// later arrivals do not wait.
func (g *gate) arrive(node int) {
	g.mu.Lock()
	first := !g.arrived[node]
	g.arrived[node] = true
	if first && len(g.arrived) == g.n {
		close(g.all)
	}
	g.mu.Unlock()
	if first {
		<-g.all
	}
}

// gatedDriver is one node's driver with the gate in its key operations:
// after a KeyList in a Read, and, when inWrite, before the first of
// KeysLock, KeyList and KeyInsert in a Write.
type gatedDriver struct {
	storage.Driver
	gate    *gate
	node    int
	inWrite bool
}

func (d gatedDriver) Read(ctx context.Context, fn func(storage.Tx) error) error {
	return d.Driver.Read(ctx, func(tx storage.Tx) error { return fn(gatedReadTx{tx, d}) })
}

func (d gatedDriver) Write(ctx context.Context, fn func(storage.Tx) error) error {
	if !d.inWrite {
		return d.Driver.Write(ctx, fn)
	}
	return d.Driver.Write(ctx, func(tx storage.Tx) error { return fn(gatedWriteTx{tx, d}) })
}

type gatedReadTx struct {
	storage.Tx
	d gatedDriver
}

func (t gatedReadTx) KeyList(ctx context.Context, ws string) ([]trove.APIKey, error) {
	ks, err := t.Tx.KeyList(ctx, ws)
	t.d.gate.arrive(t.d.node)
	return ks, err
}

type gatedWriteTx struct {
	storage.Tx
	d gatedDriver
}

func (t gatedWriteTx) KeysLock(ctx context.Context) error {
	t.d.gate.arrive(t.d.node)
	return t.Tx.KeysLock(ctx)
}

func (t gatedWriteTx) KeyList(ctx context.Context, ws string) ([]trove.APIKey, error) {
	t.d.gate.arrive(t.d.node)
	return t.Tx.KeyList(ctx, ws)
}

func (t gatedWriteTx) KeyInsert(ctx context.Context, k *trove.APIKey, secretHash []byte) error {
	t.d.gate.arrive(t.d.node)
	return t.Tx.KeyInsert(ctx, k, secretHash)
}
