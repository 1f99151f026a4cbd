package postgres

import (
	"context"
	"testing"
	"time"
)

// enterLater enters storeID's gate on another goroutine; the channel gets
// its leave function once it is in (or gave up waiting).
func enterLater(g *storeGates, storeID string) <-chan func() {
	got := make(chan func(), 1)
	go func() { got <- g.enter(context.Background(), storeID) }()
	return got
}

// stillWaiting fails t if got delivers within 20 ms: a transaction entered
// a gate another one holds.
func stillWaiting(t *testing.T, got <-chan func(), why string) {
	t.Helper()
	select {
	case <-got:
		t.Fatal(why)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestStoreGates(t *testing.T) {
	t.Parallel()
	t.Run("one transaction at a time per store, in turn", func(t *testing.T) {
		t.Parallel()
		var g storeGates
		leave := g.enter(context.Background(), "s1")
		got := enterLater(&g, "s1")
		stillWaiting(t, got, "a second transaction entered a store's gate while the first held it")
		leave()
		leave() // leaving twice is leaving once
		second := <-got
		if n := g.len(); n != 1 {
			t.Fatalf("gates in use = %d with the second holder inside, want 1", n)
		}
		third := enterLater(&g, "s1")
		second()
		(<-third)()
		if n := g.len(); n != 0 {
			t.Errorf("gates in use = %d once every transaction left, want 0", n)
		}
	})
	t.Run("other stores do not wait", func(t *testing.T) {
		t.Parallel()
		var g storeGates
		a := g.enter(context.Background(), "a")
		done := enterLater(&g, "b")
		select {
		case b := <-done:
			b()
		case <-time.After(gateWait / 2):
			t.Fatal("a store's gate waited on another store's")
		}
		a()
	})
	t.Run("a done context goes on without the gate", func(t *testing.T) {
		t.Parallel()
		var g storeGates
		a := g.enter(context.Background(), "s")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start := time.Now()
		g.enter(ctx, "s")() // a no-op leave: it never had the gate
		if d := time.Since(start); d > gateWait/2 {
			t.Errorf("enter with a done context took %v", d)
		}
		// The holder still has it: a new transaction waits.
		got := enterLater(&g, "s")
		stillWaiting(t, got, "the gate was free while its holder was inside")
		a()
		(<-got)()
		if n := g.len(); n != 0 {
			t.Errorf("gates in use = %d, want 0", n)
		}
	})
	t.Run("after gateWait a transaction goes on without the gate", func(t *testing.T) {
		t.Parallel()
		var g storeGates
		a := g.enter(context.Background(), "s")
		start := time.Now()
		g.enter(context.Background(), "s")()
		if d := time.Since(start); d < gateWait {
			t.Errorf("gave up the wait after %v, before gateWait (%v)", d, gateWait)
		}
		a()
		if n := g.len(); n != 0 {
			t.Errorf("gates in use = %d, want 0", n)
		}
	})
}
