package vfs_test

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/vfs"
)

// TestFollow: with the refresh bound at an hour, Follow applies remote
// changes to the listing, names exactly the entries they touched, and
// stays quiet about the mount's own writes.
func TestFollow(t *testing.T) {
	be := backend(t)
	ctx := be.Ctx
	st, err := be.Services.CreateStore(ctx, trove.CreateStoreParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := be.Services.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/a.md", Content: "a"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := vfs.New(ctx, vfs.Config{Services: be.Services, Stores: []vfs.StoreConfig{{StoreID: st.ID, Name: "s"}}, Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !v.CanFollow() {
		t.Fatal("core offers the feed; CanFollow is false")
	}
	var mu sync.Mutex
	var names []string
	changed := make(chan struct{}, 100)
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- v.Follow(fctx, func(n string) {
			mu.Lock()
			names = append(names, n)
			mu.Unlock()
			changed <- struct{}{}
		})
	}()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Follow: %v", err)
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); !v.Live(); {
		if time.Now().After(deadline) {
			t.Fatal("Follow did not go live")
		}
	}
	if _, err := v.Stat(ctx, "s/a.md"); err != nil { // loads the listing
		t.Fatal(err)
	}
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := names
		names = nil
		return out
	}
	take() // the "" of going live
	// waitNames waits until every name in want has been reported: one
	// change may be reported in more than one call of the callback.
	waitNames := func(want ...string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			mu.Lock()
			ok := true
			for _, w := range want {
				ok = ok && slices.Contains(names, w)
			}
			mu.Unlock()
			if ok {
				return
			}
			select {
			case <-changed:
			case <-timeout:
				t.Fatalf("no change named %q; got %q", want, take())
			}
		}
	}

	if _, err := be.Services.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/d/new.md", Content: "n"}); err != nil {
		t.Fatal(err)
	}
	waitNames("s/d/new.md", "s/d")
	if got := sorted(take()); !slices.Equal(got, []string{"s/d", "s/d/new.md"}) {
		t.Errorf("a create named %q, want the file and its new directory", got)
	}
	if at, err := v.Stat(ctx, "s/d/new.md"); err != nil || at.Size != 1 {
		t.Fatalf("the created file: %+v %v", at, err)
	}

	if _, err := be.Services.UpdateMemory(ctx, st.ID, a.ID, trove.UpdateMemoryParams{Path: ptr("/b.md"), Content: ptr("bb")}); err != nil {
		t.Fatal(err)
	}
	waitNames("s/a.md", "s/b.md")
	if got := sorted(take()); !slices.Equal(got, []string{"s/a.md", "s/b.md"}) {
		t.Errorf("a rename with an edit named %q, want the old and new names", got)
	}
	if _, err := v.Stat(ctx, "s/a.md"); !errors.Is(err, vfs.ErrNotExist) {
		t.Errorf("the old name after a remote rename: %v", err)
	}
	if at, err := v.Stat(ctx, "s/b.md"); err != nil || at.Size != 2 {
		t.Errorf("the new name after a remote rename: %+v %v", at, err)
	}

	// The mount's own write: its change is already listed, so no name;
	// the remote write after it proves the feed went past it.
	h, err := v.Open(ctx, "s/own.md", os.O_WRONLY|os.O_CREATE)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteAt(ctx, []byte("mine"), 0); err != nil {
		t.Fatal(err)
	}
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	h.Release()
	if _, err := be.Services.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/after.md", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	waitNames("s/after.md")
	if got := take(); !slices.Equal(got, []string{"s/after.md"}) {
		t.Errorf("after the mount's own write: %q, want only the remote create", got)
	}
}

func ptr[T any](v T) *T { return &v }

// sorted returns names in order: one change's names may be reported in
// more than one call, so their order is not part of the contract.
func sorted(names []string) []string { return slices.Sorted(slices.Values(names)) }

// gatedFeed is core whose change listings, once hold is set, wait until
// gate is closed: the test decides when the feed delivers.
type gatedFeed struct {
	trove.Services
	gate chan struct{}
	hold atomic.Bool
}

func (g *gatedFeed) ListChanges(ctx context.Context, storeID string, p trove.ListChangesParams) (*trove.ChangeBatch, error) {
	if g.hold.Load() {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Services.(trove.ChangeService).ListChanges(ctx, storeID, p)
}

func (g *gatedFeed) WaitChanges(ctx context.Context, storeID string, after int64) (int64, error) {
	return g.Services.(trove.ChangeService).WaitChanges(ctx, storeID, after)
}

// TestFollowAfterRead: a remote edit whose new content a read fetched
// before the feed delivered it (the read updates the listing) is still
// named when the feed delivers it: whoever cached the file's old size and
// time from the listing must hear of it. Likewise a remote delete found by
// a read.
func TestFollowAfterRead(t *testing.T) {
	be := backend(t)
	ctx := be.Ctx
	st, err := be.Services.CreateStore(ctx, trove.CreateStoreParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := be.Services.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/d/a.md", Content: "a"})
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedFeed{Services: be.Services, gate: make(chan struct{})}
	v, err := vfs.New(ctx, vfs.Config{Services: g, Stores: []vfs.StoreConfig{{StoreID: st.ID, Name: "s"}}, Refresh: time.Hour, CacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	names := make(chan string, 100)
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- v.Follow(fctx, func(n string) { names <- n }) }()
	defer func() {
		cancel()
		<-done
	}()
	if n := <-names; n != "" {
		t.Fatalf("first name %q, want the \"\" of going live", n)
	}
	g.hold.Store(true)
	if _, err := v.Stat(ctx, "s/d/a.md"); err != nil { // loads the listing
		t.Fatal(err)
	}
	read := func() (string, error) {
		h, err := v.Open(ctx, "s/d/a.md", os.O_RDONLY)
		if err != nil {
			return "", err
		}
		defer h.Release()
		b := make([]byte, 100)
		c, err := h.ReadAt(ctx, b, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		return string(b[:c]), nil
	}
	if _, err := be.Services.UpdateMemory(ctx, st.ID, a.ID, trove.UpdateMemoryParams{Content: ptr("a, edited")}); err != nil {
		t.Fatal(err)
	}
	if s, err := read(); err != nil || s != "a, edited" {
		t.Fatalf("read after the remote edit: %q %v", s, err)
	}
	if err := be.Services.DeleteMemory(ctx, st.ID, a.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := read(); !errors.Is(err, vfs.ErrNotExist) {
		t.Fatalf("read after the remote delete: %v, want ErrNotExist", err)
	}
	close(g.gate) // the feed delivers the edit and the delete now
	var got []string
	for !slices.Contains(got, "s/d/a.md") || !slices.Contains(got, "s/d") {
		select {
		case n := <-names:
			got = append(got, n)
		case <-time.After(10 * time.Second):
			t.Fatalf("the feed named %q, want s/d/a.md and s/d", got)
		}
	}
}
