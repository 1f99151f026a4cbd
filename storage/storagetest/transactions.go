package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- Read and Write semantics ----

func testWriteFnError(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	m, _ := insertMemory(t, d, s.ID, "/keep", "original", secs(1))

	sentinel := errors.New("fn failed")
	fresh := newStore("wrkspc_a", secs(2))
	err := d.Write(ctx, func(tx storage.Tx) error {
		if err := tx.StoreInsert(ctx, fresh); err != nil {
			return err
		}
		upd := *m
		upd.Content, upd.SizeBytes, upd.SHA256 = strPtr("changed"), 7, sha("changed")
		if err := tx.MemoryUpdate(ctx, &upd); err != nil {
			return err
		}
		// A Write sees its own changes.
		if _, err := tx.StoreGet(ctx, "wrkspc_a", fresh.ID); err != nil {
			t.Errorf("StoreGet of a store inserted in the same Write: %v", err)
		}
		if got, err := tx.MemoryGet(ctx, s.ID, m.ID, true); err != nil || *got.Content != "changed" {
			t.Errorf("MemoryGet in the same Write: %v, %v; want the new content", got, err)
		}
		return fmt.Errorf("wrapped: %w", sentinel)
	})
	if !errors.Is(err, sentinel) {
		t.Errorf("Write returned %v, want fn's error", err)
	}
	coded := trove.Errorf(trove.EPRECONDITION, "precondition failed")
	err = d.Write(ctx, func(tx storage.Tx) error { return coded })
	if !errors.Is(err, coded) || trove.ErrorCode(err) != trove.EPRECONDITION {
		t.Errorf("Write returned %v, want fn's *trove.Error", err)
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.StoreGet(ctx, "wrkspc_a", fresh.ID)
		wantCode(t, "StoreGet of a rolled-back insert", err, trove.ENOTFOUND)
		got, err := tx.MemoryGet(ctx, s.ID, m.ID, true)
		if err != nil {
			t.Fatalf("MemoryGet: %v", err)
		}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Errorf("memory after a rolled-back update (-want +got):\n%s", diff)
		}
		return nil
	})
}

func testWriteIsolation(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	const n = 16
	stores := make([]*trove.Store, n)
	errs := make([]error, n)
	mine := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		stores[i] = newStore("wrkspc_a", secs(i))
		mine[i] = fmt.Errorf("writer %d fails", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = d.Write(ctx, func(tx storage.Tx) error {
				if err := tx.StoreInsert(ctx, stores[i]); err != nil {
					return err
				}
				if i%2 == 1 {
					return mine[i]
				}
				return nil
			})
		}()
	}
	close(start)
	wg.Wait()
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for i := range n {
			_, err := tx.StoreGet(ctx, "wrkspc_a", stores[i].ID)
			if i%2 == 1 {
				if !errors.Is(errs[i], mine[i]) {
					t.Errorf("failing writer %d got %v, want its own error", i, errs[i])
				}
				wantCode(t, fmt.Sprintf("store of failing writer %d", i), err, trove.ENOTFOUND)
			} else {
				if errs[i] != nil {
					t.Errorf("writer %d got %v, want nil", i, errs[i])
				}
				if err != nil {
					t.Errorf("store of writer %d: %v", i, err)
				}
			}
		}
		return nil
	})
}

func testWriteCancelled(t *testing.T, d storage.Driver) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := newStore("wrkspc_a", secs(0))
	ran := false
	err := d.Write(ctx, func(tx storage.Tx) error {
		ran = true
		return tx.StoreInsert(ctx, s)
	})
	if err == nil {
		t.Error("Write with a cancelled context succeeded")
	}
	if ran {
		t.Error("Write with a cancelled context ran fn")
	}
	if err := d.Read(ctx, func(tx storage.Tx) error { return nil }); err == nil {
		t.Error("Read with a cancelled context succeeded")
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.StoreGet(ctx, "wrkspc_a", s.ID)
		wantCode(t, "StoreGet after a cancelled Write", err, trove.ENOTFOUND)
		return nil
	})
	// The driver still works.
	insertStore(t, d, newStore("wrkspc_a", secs(1)))
}

func testConcurrentWrites(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	const writers, each = 16, 8
	errs := make(chan error, writers*each)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range each {
				m, v := newMemory(s.ID, fmt.Sprintf("/w%02d/m%02d", w, i), "x", secs(w*each+i))
				errs <- d.Write(ctx, func(tx storage.Tx) error {
					if err := tx.MemoryInsert(ctx, m); err != nil {
						return err
					}
					return tx.VersionInsert(ctx, v)
				})
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Write: %v", err)
		}
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		if n, err := tx.MemoryCount(ctx, s.ID); err != nil || n != writers*each {
			t.Errorf("MemoryCount = %d, %v; want %d", n, err, writers*each)
		}
		vs, err := tx.VersionList(ctx, storage.VersionListParams{StoreID: s.ID})
		if err != nil || len(vs) != writers*each {
			t.Errorf("VersionList = %d versions, %v; want %d", len(vs), err, writers*each)
		}
		ms, err := tx.MemoryList(ctx, storage.MemoryListParams{StoreID: s.ID})
		if err != nil {
			t.Fatalf("MemoryList: %v", err)
		}
		for i, m := range ms {
			if want := fmt.Sprintf("/w%02d/m%02d", i/each, i%each); m.Path != want {
				t.Errorf("memory %d is %s, want %s", i, m.Path, want)
				break
			}
		}
		return nil
	})
}

func testReadSnapshot(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	insertMemory(t, d, s.ID, "/first", "1", secs(1))
	runs := 0
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		// fn may run more than once (storage.Driver.Read); every run
		// commits a memory of its own between its two statements, and
		// the last run's statements must agree.
		runs++
		before, err := tx.MemoryCount(ctx, s.ID)
		if err != nil {
			t.Fatalf("MemoryCount: %v", err)
		}
		// A Write commits while this Read is open; a Read must not block it.
		path := fmt.Sprintf("/second-%d", runs)
		done := make(chan error, 1)
		go func() {
			m, v := newMemory(s.ID, path, "2", secs(1+runs))
			done <- d.Write(ctx, func(tx storage.Tx) error {
				if err := tx.MemoryInsert(ctx, m); err != nil {
					return err
				}
				return tx.VersionInsert(ctx, v)
			})
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Write during a Read: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a Write waited for an open Read for 20s")
		}
		after, err := tx.MemoryCount(ctx, s.ID)
		if err != nil {
			t.Fatalf("MemoryCount: %v", err)
		}
		if after != before {
			t.Errorf("MemoryCount changed from %d to %d inside one Read: not a snapshot", before, after)
		}
		if _, err := tx.MemoryGetByPath(ctx, s.ID, path, false); trove.ErrorCode(err) != trove.ENOTFOUND {
			t.Errorf("a Read saw a memory committed after it started (err %v)", err)
		}
		return nil
	})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		if n, err := tx.MemoryCount(ctx, s.ID); err != nil || n != 1+runs {
			t.Errorf("MemoryCount in a new Read = %d, %v; want %d (the first memory and one per run)", n, err, 1+runs)
		}
		return nil
	})
}

func testReadOnly(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := newStore("wrkspc_a", secs(0))
	err := d.Read(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, s) })
	if err == nil {
		t.Error("StoreInsert inside Read succeeded")
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.StoreGet(ctx, "wrkspc_a", s.ID)
		wantCode(t, "StoreGet of a store inserted in a Read", err, trove.ENOTFOUND)
		return nil
	})
}
