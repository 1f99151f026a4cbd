package coretest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
)

// The store and workspace limits of issue 24 (core/limits.go): stores per
// workspace, content bytes per store, versions per store, each refused
// with EINVALID (the hosted API's 400 invalid_request_error), checked
// against the counters the driver keeps (trove.StoreStats).

// stats reads a store's counters through the service.
func (e *env) stats(t *testing.T, storeID string) trove.StoreStats {
	t.Helper()
	st, err := e.svc.StoreStats(e.ctx, storeID)
	if err != nil {
		t.Fatalf("StoreStats(%s): %v", storeID, err)
	}
	return *st
}

// wantStats checks a store's memory, byte and version counters.
func (e *env) wantStats(t *testing.T, what, storeID string, memories int, bytes, versions int64) {
	t.Helper()
	got := e.stats(t, storeID)
	want := trove.StoreStats{MemoryCount: memories, ContentBytes: bytes, VersionCount: versions}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(trove.StoreStats{}, "StoreID", "MaxMemories", "MaxBytes", "MaxVersions")); diff != "" {
		t.Fatalf("%s: StoreStats (-want +got):\n%s", what, diff)
	}
}

func testStoreCountLimit(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{MaxStoresPerWorkspace: 3})
	a := e.store(t, "a")
	e.store(t, "b")
	c := e.store(t, "c")
	_, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "d"})
	wantCode(t, "CreateStore(at the limit)", err, trove.EINVALID)
	if !strings.Contains(trove.ErrorMessage(err), "limit of 3 memory stores") {
		t.Errorf("message %q does not name the limit", trove.ErrorMessage(err))
	}
	_, err = e.svc.ForkStore(e.ctx, a.ID, trove.ForkStoreParams{Name: "fork"})
	wantCode(t, "ForkStore(at the limit)", err, trove.EINVALID)
	// An archived store still counts; the limit is per workspace.
	if _, err := e.svc.ArchiveStore(e.ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "d"})
	wantCode(t, "CreateStore(archived store counted)", err, trove.EINVALID)
	for i := range 3 {
		if _, err := e.svc.CreateStore(e.ctxB, trove.CreateStoreParams{Name: fmt.Sprintf("b%d", i)}); err != nil {
			t.Fatalf("CreateStore in another workspace: %v", err)
		}
	}
	// A deleted store frees its place.
	if err := e.svc.DeleteStore(e.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	d := e.store(t, "d")
	_, err = e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "e"})
	wantCode(t, "CreateStore(at the limit again)", err, trove.EINVALID)
	if err := e.svc.DeleteStore(e.ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ForkStore(e.ctx, c.ID, trove.ForkStoreParams{Name: "fork"}); err != nil {
		t.Fatalf("ForkStore into the freed place: %v", err)
	}
}

func testStoreBytesLimit(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{MaxStoreBytes: 100})
	s := e.store(t, "S")
	a := e.memory(t, s.ID, "/a", strings.Repeat("a", 60))
	_, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/b", Content: strings.Repeat("b", 41)})
	wantCode(t, "CreateMemory(past the byte limit)", err, trove.EINVALID)
	if !strings.Contains(trove.ErrorMessage(err), "limit of 100 bytes") {
		t.Errorf("message %q does not name the limit", trove.ErrorMessage(err))
	}
	b := e.memory(t, s.ID, "/b", strings.Repeat("b", 40)) // exactly at the limit
	e.wantStats(t, "at the limit", s.ID, 2, 100, 2)
	_, err = e.svc.UpdateMemory(e.ctx, s.ID, a.ID, trove.UpdateMemoryParams{Content: ptr(strings.Repeat("a", 61))})
	wantCode(t, "UpdateMemory(growing past the limit)", err, trove.EINVALID)
	// Same size, a rename, an empty memory and a shrink all stay allowed.
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, a.ID, trove.UpdateMemoryParams{Content: ptr(strings.Repeat("A", 60))}); err != nil {
		t.Fatalf("same-size update at the limit: %v", err)
	}
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, a.ID, trove.UpdateMemoryParams{Path: ptr("/a2")}); err != nil {
		t.Fatalf("rename at the limit: %v", err)
	}
	e.memory(t, s.ID, "/empty", "")
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, b.ID, trove.UpdateMemoryParams{Content: ptr("b")}); err != nil {
		t.Fatalf("shrink at the limit: %v", err)
	}
	e.wantStats(t, "after the shrink", s.ID, 3, 61, 6)
	e.memory(t, s.ID, "/c", strings.Repeat("c", 39))
	if err := e.svc.DeleteMemory(e.ctx, s.ID, b.ID, ""); err != nil {
		t.Fatal(err)
	}
	e.memory(t, s.ID, "/d", "d")
	e.wantStats(t, "after a delete", s.ID, 4, 100, 9)
	// The limit is per store.
	o := e.store(t, "O")
	e.memory(t, o.ID, "/o", strings.Repeat("o", 100))
	// A fork of a store over a lowered limit is refused, not truncated.
	low := core.New(e.db, core.Options{Limits: trove.Limits{MaxStoreBytes: 50}, Now: e.clock.Now})
	_, err = low.ForkStore(e.ctx, s.ID, trove.ForkStoreParams{Name: "fork"})
	wantCode(t, "ForkStore(more content than a store may hold)", err, trove.EINVALID)
}

func testVersionLimit(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{MaxVersionsPerStore: 6})
	s := e.store(t, "S")
	a := e.memory(t, s.ID, "/d/a", "1")
	b := e.memory(t, s.ID, "/d/b", "1")
	for i := range 3 {
		if _, err := e.svc.UpdateMemory(e.ctx, s.ID, a.ID, trove.UpdateMemoryParams{Content: ptr(fmt.Sprint(i + 2))}); err != nil {
			t.Fatal(err)
		}
	}
	e.wantStats(t, "five versions", s.ID, 2, 2, 5)
	// A directory rename adds two versions: one too many.
	_, err := e.svc.RenameDirectory(e.ctx, s.ID, trove.RenameDirectoryParams{From: "/d", To: "/e"})
	wantCode(t, "RenameDirectory(past the version limit)", err, trove.EINVALID)
	e.memory(t, s.ID, "/c", "1") // the sixth
	_, err = e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/x", Content: "x"})
	wantCode(t, "CreateMemory(at the version limit)", err, trove.EINVALID)
	if !strings.Contains(trove.ErrorMessage(err), "limit of 6 memory versions") {
		t.Errorf("message %q does not name the limit", trove.ErrorMessage(err))
	}
	_, err = e.svc.UpdateMemory(e.ctx, s.ID, a.ID, trove.UpdateMemoryParams{Content: ptr("x")})
	wantCode(t, "UpdateMemory(at the version limit)", err, trove.EINVALID)
	// A no-op update writes no version, so it is not refused.
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, a.ID, trove.UpdateMemoryParams{Content: ptr("4")}); err != nil {
		t.Fatalf("no-op update at the version limit: %v", err)
	}
	// Redaction adds no version; deleting stays possible at the limit.
	vs := e.allVersions(t, s.ID, trove.ListVersionsParams{MemoryID: a.ID})
	if _, err := e.svc.RedactVersion(e.ctx, s.ID, vs[len(vs)-1].ID); err != nil {
		t.Fatalf("RedactVersion at the limit: %v", err)
	}
	if err := e.svc.DeleteMemory(e.ctx, s.ID, b.ID, ""); err != nil {
		t.Fatalf("DeleteMemory at the version limit: %v", err)
	}
	e.wantStats(t, "a delete past the limit", s.ID, 2, 2, 7)
	// Retention frees room: every version but the live memories' current
	// ones is past it.
	e.clock.Advance(e.svc.Limits().VersionRetention + time.Hour)
	n, err := e.svc.PurgeExpiredVersions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Fatalf("PurgeExpiredVersions deleted %d versions, want 5", n)
	}
	e.wantStats(t, "after retention", s.ID, 2, 2, 2)
	e.memory(t, s.ID, "/x", "x")
}

// testStoreStats checks the counters after every kind of write, and that a
// refused write leaves them as they were.
func testStoreStats(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	e.wantStats(t, "empty", s.ID, 0, 0, 0)
	a := e.memory(t, s.ID, "/d/a", "hello")       // 5
	b := e.memory(t, s.ID, "/d/b", "héllo wörld") // 13
	e.memory(t, s.ID, "/c", "")
	e.wantStats(t, "three creates", s.ID, 3, 18, 3)
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, a.ID, trove.UpdateMemoryParams{Content: ptr("hello, world")}); err != nil {
		t.Fatal(err)
	}
	e.wantStats(t, "a growing update", s.ID, 3, 25, 4)
	_, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/d/a", Content: "dup"})
	wantCode(t, "CreateMemory(taken path)", err, trove.EPATHCONFLICT)
	e.wantStats(t, "a refused create", s.ID, 3, 25, 4)
	if _, err := e.svc.RenameDirectory(e.ctx, s.ID, trove.RenameDirectoryParams{From: "/d", To: "/e"}); err != nil {
		t.Fatal(err)
	}
	e.wantStats(t, "a directory rename", s.ID, 3, 25, 6)
	f, err := e.svc.ForkStore(e.ctx, s.ID, trove.ForkStoreParams{Name: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	e.wantStats(t, "the fork", f.Store.ID, 3, 25, 3)
	if err := e.svc.DeleteMemory(e.ctx, s.ID, b.ID, ""); err != nil {
		t.Fatal(err)
	}
	e.wantStats(t, "a delete", s.ID, 2, 12, 7)
	if _, err := e.svc.DeleteDirectory(e.ctx, s.ID, trove.DeleteDirectoryParams{Path: "/e"}); err != nil {
		t.Fatal(err)
	}
	e.wantStats(t, "a directory delete", s.ID, 1, 0, 8)
	e.wantStats(t, "the fork after the source changed", f.Store.ID, 3, 25, 3)
	// Another workspace cannot read them.
	_, err = e.svc.StoreStats(e.ctxB, s.ID)
	wantCode(t, "StoreStats(other workspace)", err, trove.ENOTFOUND)
	_, err = e.svc.StoreStats(e.ctx, "memstore_missing")
	wantCode(t, "StoreStats(unknown store)", err, trove.ENOTFOUND)
	st := e.stats(t, s.ID)
	if l := e.svc.Limits(); st.MaxMemories != l.MaxMemoriesPerStore || st.MaxBytes != int64(l.MaxStoreBytes) || st.MaxVersions != int64(l.MaxVersionsPerStore) || st.StoreID != s.ID {
		t.Errorf("StoreStats limits = %+v, want the service's %+v", st, l)
	}
	// A deleted store's counters are gone with it; the workspace's place too.
	if err := e.svc.DeleteStore(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.StoreStats(e.ctx, s.ID)
	wantCode(t, "StoreStats(deleted store)", err, trove.ENOTFOUND)
}

// testConcurrentStoreLimits races writers to each limit: exactly the
// allowed number of writes succeed, the others get EINVALID, and the
// counters end exactly at the limit (never past it).
func testConcurrentStoreLimits(t *testing.T, open Opener) {
	const workers = 12
	race := func(t *testing.T, n int, do func(w, i int) error) int {
		t.Helper()
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok := 0
		errs := make(chan error, workers*n)
		for w := range workers {
			wg.Go(func() {
				for i := range n {
					err := do(w, i)
					switch trove.ErrorCode(err) {
					case "":
						mu.Lock()
						ok++
						mu.Unlock()
					case trove.EINVALID:
					default:
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("unexpected error: %v", err)
		}
		return ok
	}
	t.Run("stores", func(t *testing.T) {
		e := newEnv(t, open, trove.Limits{MaxStoresPerWorkspace: 7})
		ok := race(t, 2, func(w, i int) error {
			_, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: fmt.Sprintf("s%d-%d", w, i)})
			return err
		})
		all, err := trove.AllItems(e.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.Store], error) {
			return e.svc.ListStores(ctx, trove.ListStoresParams{Limit: 100, Cursor: cursor, IncludeArchived: true})
		})
		if err != nil {
			t.Fatal(err)
		}
		if ok != 7 || len(all) != 7 {
			t.Fatalf("%d creates succeeded and %d stores exist; the limit is 7", ok, len(all))
		}
	})
	t.Run("bytes", func(t *testing.T) {
		e := newEnv(t, open, trove.Limits{MaxStoreBytes: 50})
		s := e.store(t, "S")
		ok := race(t, 2, func(w, i int) error {
			_, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/w%d/m%d", w, i), Content: "0123456789"})
			return err
		})
		if ok != 5 {
			t.Fatalf("%d creates of 10 bytes succeeded under a 50-byte limit, want 5", ok)
		}
		e.wantStats(t, "after the race", s.ID, 5, 50, 5)
	})
	t.Run("versions", func(t *testing.T) {
		e := newEnv(t, open, trove.Limits{MaxVersionsPerStore: 9})
		s := e.store(t, "S")
		m := e.memory(t, s.ID, "/shared", "start")
		ok := race(t, 2, func(w, i int) error {
			if i == 0 {
				_, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: ptr(fmt.Sprintf("w%d", w))})
				return err
			}
			_, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/w%d", w), Content: "x"})
			return err
		})
		// A racing update may find the content already equal (a no-op, no
		// version), so count what the history holds.
		got := e.stats(t, s.ID)
		if got.VersionCount != 9 {
			t.Fatalf("%d writes succeeded, the store holds %d versions; want exactly the limit 9", ok, got.VersionCount)
		}
		if n := len(e.allVersions(t, s.ID, trove.ListVersionsParams{})); n != 9 {
			t.Fatalf("the history lists %d versions, the counter says 9", n)
		}
	})
}
