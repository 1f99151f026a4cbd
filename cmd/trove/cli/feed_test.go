package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// TestFeedAcrossServerRestarts: a client following a store's change feed
// over server-sent events from a real `trove serve` process keeps every
// change exactly once, in order, while the server is stopped gracefully
// (its streams must end, or the stop would hang), restarted, killed with
// SIGKILL and restarted again on the same address.
func TestFeedAcrossServerRestarts(t *testing.T) {
	t.Parallel()
	bin := buildTrove(t)
	data := t.TempDir()
	cmd, url := startServeProcessAt(t, bin, data, "127.0.0.1:0")
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	addr := strings.TrimPrefix(url, "http://")
	b, err := os.ReadFile(filepath.Join(data, "api_key"))
	if err != nil {
		t.Fatal(err)
	}
	c := httpapi.NewClient(url, strings.TrimSpace(string(b)), httpapi.WithMaxRetries(5))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st, err := c.CreateStore(ctx, trove.CreateStoreParams{Name: "feed"})
	if err != nil {
		t.Fatal(err)
	}

	const perPhase, phases = 20, 3
	got := make(chan int64, perPhase*phases)
	connected := make(chan bool, 100)
	followed := make(chan error, 1)
	go func() {
		followed <- c.FollowChanges(ctx, st.ID, 0, func(ch trove.Change) error {
			got <- ch.Seq
			return nil
		}, func(up bool) { connected <- up })
	}()
	waitUp := func() {
		t.Helper()
		for {
			select {
			case up := <-connected:
				if up {
					return
				}
			case err := <-followed:
				t.Fatalf("FollowChanges ended: %v", err)
			case <-ctx.Done():
				t.Fatal("the follower did not reconnect")
			}
		}
	}
	waitUp()
	var seen []int64
	collect := func(n int) {
		t.Helper()
		for len(seen) < n {
			select {
			case s := <-got:
				seen = append(seen, s)
			case <-ctx.Done():
				t.Fatalf("only %d of %d changes arrived: %v", len(seen), n, seen)
			}
		}
	}
	for phase := range phases {
		for i := range perPhase {
			if _, err := c.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/p%d/m%02d", phase, i), Content: "x"}); err != nil {
				t.Fatalf("phase %d write %d: %v", phase, i, err)
			}
		}
		collect((phase + 1) * perPhase)
		if phase == phases-1 {
			break
		}
		if phase == 0 {
			// Graceful stop with a stream open: it must not wait for it.
			stopped := time.Now()
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("serve exited with %v", err)
			}
			if d := time.Since(stopped); d > 5*time.Second {
				t.Errorf("graceful stop with a change stream open took %v", d)
			}
		} else {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
		}
		cmd, _ = startServeProcessAt(t, bin, data, addr)
		waitUp()
	}
	for i, s := range seen {
		if s != int64(i+1) {
			t.Fatalf("position %d has seq %d: lost, repeated or reordered: %v", i, s, seen)
		}
	}
	cancel()
	if err := <-followed; !errors.Is(err, context.Canceled) {
		t.Fatalf("FollowChanges after cancel: %v", err)
	}
}
