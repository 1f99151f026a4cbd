package vfs_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
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
