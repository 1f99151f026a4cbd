package postgres

import (
	"context"
	"testing"
	"time"
)

// watched returns gates whose waits the test sees: a writer that finds its
// store's gate held sends the store's ID on the returned channel before it
// waits, and then waits for its turn only (the gateWait timer is left out:
// a wait ends with the turn or the context).
func watched() (*storeGates, <-chan string) {
	waiting := make(chan string, 8)
	g := &storeGates{expire: func(storeID string) <-chan time.Time {
		waiting <- storeID
		return nil
	}}
	return g, waiting
}

// enterLater enters storeID's gate on another goroutine; the channel gets
// its leave function once it is in (or gave up waiting).
func enterLater(g *storeGates, storeID string) <-chan func() {
	got := make(chan func(), 1)
	go func() { got <- g.enter(context.Background(), storeID) }()
	return got
}

// stillWaiting fails t unless the writer behind got found its gate held
// and waits (watched's channel says so) instead of entering.
func stillWaiting(t *testing.T, got <-chan func(), waiting <-chan string, why string) {
	t.Helper()
	select {
	case <-got:
		t.Fatal(why)
	case <-waiting:
	}
}

func TestStoreGates(t *testing.T) {
	t.Parallel()
	t.Run("one transaction at a time per store, in turn", func(t *testing.T) {
		t.Parallel()
		g, waiting := watched()
		leave := g.enter(context.Background(), "s1")
		got := enterLater(g, "s1")
		stillWaiting(t, got, waiting, "a second transaction entered a store's gate while the first held it")
		leave()
		leave() // leaving twice is leaving once
		second := <-got
		if n := g.len(); n != 1 {
			t.Fatalf("gates in use = %d with the second holder inside, want 1", n)
		}
		third := enterLater(g, "s1")
		stillWaiting(t, third, waiting, "a third transaction entered while the second held the gate")
		second()
		(<-third)()
		if n := g.len(); n != 0 {
			t.Errorf("gates in use = %d once every transaction left, want 0", n)
		}
	})
	t.Run("other stores do not wait", func(t *testing.T) {
		t.Parallel()
		g, waiting := watched()
		a := g.enter(context.Background(), "a")
		select {
		case b := <-enterLater(g, "b"):
			b()
		case id := <-waiting:
			t.Fatalf("a transaction of store b waited at gate %q while store a's was held", id)
		}
		a()
	})
	t.Run("a done context goes on without the gate", func(t *testing.T) {
		t.Parallel()
		g, waiting := watched()
		a := g.enter(context.Background(), "s")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		g.enter(ctx, "s")() // a no-op leave: it never had the gate
		select {            // the wait it gave up (enter reports it before it waits)
		case <-waiting:
		default:
		}
		// The holder still has it: a new transaction waits.
		got := enterLater(g, "s")
		stillWaiting(t, got, waiting, "the gate was free while its holder was inside")
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
