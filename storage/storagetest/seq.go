package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ---- version sequence numbers ----

// seqVersion is a modification version of memID in storeID at second at.
func seqVersion(storeID, memID string, at int) *trove.MemoryVersion {
	return &trove.MemoryVersion{ID: trove.NewID(trove.PrefixVersion, secs(at)), StoreID: storeID, MemoryID: memID,
		Operation: trove.OpModified, Path: strPtr("/p"), Content: strPtr("c"), SizeBytes: intPtr(1),
		SHA256: strPtr(sha("c")), CreatedAt: secs(at)}
}

func seqsOf(vs []trove.MemoryVersion) []int64 {
	out := []int64{}
	for _, v := range vs {
		out = append(out, v.Seq)
	}
	return out
}

// testVersionSeq checks the numbering contract of VersionInsert, VersionScan
// and StoreSeq: 1, 2, 3… per store in insertion order, independent across
// stores, unaffected by a rolled-back write, never reused after retention
// deletes the newest version.
func testVersionSeq(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	other := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		if n, err := tx.StoreSeq(ctx, s.ID); err != nil || n != 0 {
			t.Errorf("StoreSeq of a new store = %d, %v; want 0", n, err)
		}
		_, err := tx.StoreSeq(ctx, "memstore_missing")
		wantCode(t, "StoreSeq unknown store", err, trove.ENOTFOUND)
		return nil
	})

	// Versions created at decreasing times still number in insertion order.
	var got []int64
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for i := range 3 {
			v := seqVersion(s.ID, "mem_a", 10-i)
			if err := tx.VersionInsert(ctx, v); err != nil {
				return err
			}
			got = append(got, v.Seq)
		}
		v := seqVersion(other.ID, "mem_b", 1)
		if err := tx.VersionInsert(ctx, v); err != nil {
			return err
		}
		got = append(got, v.Seq)
		return nil
	})
	if diff := cmp.Diff([]int64{1, 2, 3, 1}, got); diff != "" {
		t.Errorf("Seq set by VersionInsert (-want +got):\n%s", diff)
	}

	// A write that fails after taking a number gives it back.
	errBoom := errors.New("boom")
	err := d.Write(context.Background(), func(tx storage.Tx) error {
		if err := tx.VersionInsert(context.Background(), seqVersion(s.ID, "mem_a", 20)); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Write = %v, want the fn's error", err)
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		v := seqVersion(s.ID, "mem_a", 21)
		if err := tx.VersionInsert(ctx, v); err != nil {
			return err
		}
		if v.Seq != 4 {
			t.Errorf("Seq after a rolled-back write = %d, want 4", v.Seq)
		}
		return nil
	})
	err = d.Write(context.Background(), func(tx storage.Tx) error {
		return tx.VersionInsert(context.Background(), seqVersion("memstore_missing", "mem_c", 22))
	})
	wantCode(t, "VersionInsert into an unknown store", err, trove.ENOTFOUND)

	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, tc := range []struct {
			name string
			p    storage.VersionScanParams
			want []int64
		}{
			{"all", storage.VersionScanParams{}, []int64{1, 2, 3, 4}},
			{"after", storage.VersionScanParams{AfterSeq: 2}, []int64{3, 4}},
			{"up to", storage.VersionScanParams{UpToSeq: 2}, []int64{1, 2}},
			{"window", storage.VersionScanParams{AfterSeq: 1, UpToSeq: 3}, []int64{2, 3}},
			{"limit", storage.VersionScanParams{AfterSeq: 1, Limit: 2}, []int64{2, 3}},
			{"past the end", storage.VersionScanParams{AfterSeq: 4}, []int64{}},
		} {
			p := tc.p
			p.StoreID = s.ID
			vs, err := tx.VersionScan(ctx, p)
			if err != nil {
				t.Fatalf("VersionScan %s: %v", tc.name, err)
			}
			if diff := cmp.Diff(tc.want, seqsOf(vs)); diff != "" {
				t.Errorf("VersionScan %s (-want +got):\n%s", tc.name, diff)
			}
		}
		vs, err := tx.VersionScan(ctx, storage.VersionScanParams{StoreID: s.ID, AfterSeq: 3, WithContent: true})
		if err != nil || len(vs) != 1 || vs[0].Content == nil || *vs[0].Content != "c" {
			t.Errorf("VersionScan WithContent = %+v, %v; want version 4 with its content", vs, err)
		}
		vs, err = tx.VersionScan(ctx, storage.VersionScanParams{StoreID: s.ID, AfterSeq: 3})
		if err != nil || len(vs) != 1 || vs[0].Content != nil {
			t.Errorf("VersionScan without content = %+v, %v; want version 4 without content", vs, err)
		}
		if n, err := tx.StoreSeq(ctx, s.ID); err != nil || n != 4 {
			t.Errorf("StoreSeq = %d, %v; want 4", n, err)
		}
		return nil
	})

	// Retention deletes every version (none is a live memory's current
	// one); numbers go on from where they were.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if _, err := tx.VersionDeleteExpired(ctx, secs(1000)); err != nil {
			return err
		}
		v := seqVersion(s.ID, "mem_a", 1001)
		if err := tx.VersionInsert(ctx, v); err != nil {
			return err
		}
		if v.Seq != 5 {
			t.Errorf("Seq after retention emptied the store's history = %d, want 5", v.Seq)
		}
		return nil
	})
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		if n, err := tx.StoreSeq(ctx, s.ID); err != nil || n != 5 {
			t.Errorf("StoreSeq after retention = %d, %v; want 5", n, err)
		}
		return nil
	})
}

// testVersionSeqConcurrent checks that concurrent writers to one store get
// every number exactly once, and that a reader polling the store's history
// never sees a number before all the numbers below it (commit order).
func testVersionSeqConcurrent(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	const writers, each = 8, 8
	var wg sync.WaitGroup
	errs := make(chan error, writers*each+1)
	stop := make(chan struct{})
	var readerWG sync.WaitGroup
	readerWG.Add(1)
	go func() { // the reader: whatever prefix it sees must have no hole
		defer readerWG.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			err := d.Read(ctx, func(tx storage.Tx) error {
				vs, err := tx.VersionScan(ctx, storage.VersionScanParams{StoreID: s.ID})
				if err != nil {
					return err
				}
				for i, v := range vs {
					if v.Seq != int64(i+1) {
						return fmt.Errorf("reader saw seqs %v: a hole before %d", seqsOf(vs), v.Seq)
					}
				}
				return nil
			})
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				errs <- d.Write(ctx, func(tx storage.Tx) error {
					if _, err := tx.StoreLock(ctx, s.WorkspaceID, s.ID); err != nil {
						return err
					}
					return tx.VersionInsert(ctx, seqVersion(s.ID, fmt.Sprintf("mem_%d", w), w*each+i))
				})
			}
		}()
	}
	wg.Wait()
	close(stop)
	readerWG.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		vs, err := tx.VersionScan(ctx, storage.VersionScanParams{StoreID: s.ID})
		if err != nil {
			return err
		}
		want := []int64{}
		for i := range writers * each {
			want = append(want, int64(i+1))
		}
		if diff := cmp.Diff(want, seqsOf(vs)); diff != "" {
			t.Errorf("seqs after concurrent writes (-want +got):\n%s", diff)
		}
		return nil
	})
}
