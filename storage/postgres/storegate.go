package postgres

import (
	"context"
	"sync"
	"time"
)

// storeGates queue this process's writers of one store before they take a
// pooled connection: DB.Write of a context marked by
// storage.WithWriteStore (core's writes to a store's memories) waits its
// turn at the store's gate first. Every write to a store locks the store's
// row (its counters, version seq and hash chain), so a store's writes run
// one at a time whatever the gates do; what a gate changes is where the
// others wait: in Go, holding nothing, instead of each in a backend of its
// own, in an open transaction, queued on the row (BenchmarkStoreRowContention,
// docs/perf/postgres.md).
//
// A gate is never what makes a write correct: the row lock still
// serializes writers, across processes and nodes too. A writer at a gate
// holds no connection and no lock, and the gate's holder waits at no
// other gate, so no wait for a gate is part of a deadlock. After gateWait
// a writer goes on without its turn (to the row lock, as without gates),
// so that a queue longer than that costs what it cost before, no more.
type storeGates struct {
	mu    sync.Mutex
	gates map[string]*storeGate
	// expire, when set (in tests), stands in for the gateWait timer: enter
	// calls it once a writer finds the gate held and must wait, and gives
	// up waiting when the channel it returns delivers.
	expire func(storeID string) <-chan time.Time
}

type storeGate struct {
	turn  chan struct{} // holds a token while a transaction has the gate
	users int           // transactions holding or waiting for it (under storeGates.mu)
}

// gateWait bounds how long a writer waits at a store's gate before it goes
// on to the store's row lock without its turn.
const gateWait = time.Second

// enter waits for the gate of storeID, for at most gateWait or until ctx
// is done, and returns the function that leaves it (a no-op when the wait
// ended without the gate).
func (g *storeGates) enter(ctx context.Context, storeID string) func() {
	g.mu.Lock()
	if g.gates == nil {
		g.gates = map[string]*storeGate{}
	}
	gt := g.gates[storeID]
	if gt == nil {
		gt = &storeGate{turn: make(chan struct{}, 1)}
		g.gates[storeID] = gt
	}
	gt.users++
	g.mu.Unlock()
	done := func(held bool) {
		if held {
			<-gt.turn
		}
		g.mu.Lock()
		gt.users--
		if gt.users == 0 {
			delete(g.gates, storeID)
		}
		g.mu.Unlock()
	}
	select {
	case gt.turn <- struct{}{}:
		return sync.OnceFunc(func() { done(true) })
	default:
	}
	var expired <-chan time.Time
	if g.expire != nil {
		expired = g.expire(storeID)
	} else {
		t := time.NewTimer(gateWait)
		defer t.Stop()
		expired = t.C
	}
	select {
	case gt.turn <- struct{}{}:
		return sync.OnceFunc(func() { done(true) })
	case <-expired:
	case <-ctx.Done():
	}
	done(false)
	return func() {}
}

// len is how many stores have a gate in use (for tests).
func (g *storeGates) len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.gates)
}
