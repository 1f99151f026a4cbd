package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
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
