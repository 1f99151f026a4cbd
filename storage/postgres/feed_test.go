package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/postgres"
)

// TestFeedTwoNodes: two core.Services, each over its own driver (two nodes)
// on one schema, with polling effectively off (an hour): a waiter on one
// node is woken by the other node's commits through LISTEN/NOTIFY alone,
// and a follower on node B that alternates WaitChanges and ListChanges
// while both nodes write sees every change exactly once, in Seq order.
func TestFeedTwoNodes(t *testing.T) {
	t.Parallel()
	url, schema := testURL(t), newSchema(t)
	dbA := openDBOn(t, url, schema, postgres.Options{})
	dbB := openDBOn(t, url, schema, postgres.Options{})
	opts := core.Options{ChangePoll: time.Hour}
	a, b := core.New(dbA, opts), core.New(dbB, opts)
	_, secret, err := a.CreateKey(context.Background(), "wrkspc_feed", "feed")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pr, err := a.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	ctx = trove.WithPrincipal(ctx, pr)
	st, err := a.CreateStore(ctx, trove.CreateStoreParams{Name: "feed"})
	if err != nil {
		t.Fatal(err)
	}

	// Node B's listener must be up before node A writes: wait until an
	// unrelated write on A is heard on B.
	warm, err := a.CreateStore(ctx, trove.CreateStoreParams{Name: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		wctx, wcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		done := make(chan error, 1)
		go func() { _, err := b.WaitChanges(wctx, warm.ID, int64(i)); done <- err }()
		if _, err := a.CreateMemory(ctx, warm.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/w%d", i), Content: "w"}); err != nil {
			t.Fatal(err)
		}
		err := <-done
		wcancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("node B never heard node A")
		}
	}

	// One wake-up across nodes, timed.
	waited := make(chan error, 1)
	go func() { _, err := b.WaitChanges(ctx, st.ID, 0); waited <- err }()
	start := time.Now()
	if _, err := a.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/first", Content: "1"}); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("WaitChanges on node B: %v", err)
	}
	t.Logf("cross-node wake-up: %v", time.Since(start))

	// Both nodes write while a follower on B reads everything.
	const perNode = 60
	var wg sync.WaitGroup
	for n, svc := range []*core.Service{a, b} {
		wg.Go(func() {
			for i := range perNode {
				if _, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/n%d/m%03d", n, i), Content: "x"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	const total = 1 + 2*perNode
	seen := map[int64]bool{}
	var cursor int64
	var order []int64
	for len(seen) < total {
		if _, err := b.WaitChanges(ctx, st.ID, cursor); err != nil {
			t.Fatalf("follower WaitChanges(%d) with %d seen: %v", cursor, len(seen), err)
		}
		page, err := b.ListChanges(ctx, st.ID, trove.ListChangesParams{After: cursor, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.Changes {
			if seen[c.Seq] {
				t.Fatalf("change %d delivered twice", c.Seq)
			}
			seen[c.Seq] = true
			order = append(order, c.Seq)
		}
		cursor = page.Cursor
	}
	wg.Wait()
	for i, s := range order {
		if s != int64(i+1) {
			t.Fatalf("change %d at position %d: the feed skipped or reordered (%v)", s, i, order)
		}
	}
}

// TestFeedTwoServeNodes: two `trove serve` processes on one schema; writes
// go through both, alternately, while one follower streams from each node
// (server-sent events through httpapi.Client): each sees every change
// exactly once, in Seq order, whichever node committed it.
func TestFeedTwoServeNodes(t *testing.T) {
	t.Parallel()
	testURL(t)
	nodes := serveCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	clients := []*httpapi.Client{httpapi.NewClient(nodes[0].base, nodes[0].key), httpapi.NewClient(nodes[1].base, nodes[1].key)}
	st, err := clients[0].CreateStore(ctx, trove.CreateStoreParams{Name: "feed"})
	if err != nil {
		t.Fatal(err)
	}
	const total = 80
	type seen struct {
		node int
		seqs []int64
		err  error
	}
	results := make(chan seen, 2)
	up := make(chan struct{}, 10)
	for n, c := range clients {
		go func() {
			var s []int64
			done := errors.New("done")
			err := c.FollowChanges(ctx, st.ID, 0, func(ch trove.Change) error {
				s = append(s, ch.Seq)
				if len(s) == total {
					return done
				}
				return nil
			}, func(ok bool) {
				if ok {
					up <- struct{}{}
				}
			})
			if err == done {
				err = nil
			}
			results <- seen{n, s, err}
		}()
	}
	<-up
	<-up
	start := time.Now()
	for i := range total {
		if _, err := clients[i%2].CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/m%03d", i), Content: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("follower on node %d: %v after %d changes", r.node, r.err, len(r.seqs))
		}
		for i, s := range r.seqs {
			if s != int64(i+1) {
				t.Fatalf("node %d: position %d has seq %d: %v", r.node, i, s, r.seqs)
			}
		}
	}
	t.Logf("%d writes through two nodes, both followers complete after %v", total, time.Since(start))
}
