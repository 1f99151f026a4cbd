// Package storagetest holds Trove's storage conformance suites, run by every
// driver from its own tests: RunDriver checks the storage.Driver / storage.Tx
// contracts method by method; RunCore (core.go) checks the service rules
// over a driver. Only tests import it.
package storagetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// RunDriver runs the driver-level conformance suite: every storage.Tx
// method's contract in storage/storage.go and the Read/Write semantics of
// storage.Driver (rollback of one Write's error only, cancelled contexts,
// concurrent Writes, snapshot reads).
//
// open must return a new, empty, fully migrated driver for each call and
// arrange for it to be closed with t.Cleanup. Every subtest opens its own.
func RunDriver(t *testing.T, open func(t *testing.T) storage.Driver) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, d storage.Driver)
	}{
		{"StoreRoundTrip", drvTestStoreRoundTrip},
		{"StoreList", drvTestStoreList},
		{"StoreDeleteCascades", drvTestStoreDelete},
		{"MemoryCRUD", drvTestMemoryCRUD},
		{"MemoryPointRead", drvTestMemoryPointRead},
		{"MemoryFindOverlap", drvTestFindOverlap},
		{"MemoryList", drvTestMemoryList},
		{"VersionRoundTrip", drvTestVersionRoundTrip},
		{"VersionList", drvTestVersionList},
		{"VersionRedact", drvTestVersionRedact},
		{"VersionDeleteExpired", drvTestDeleteExpired},
		{"Keys", drvTestKeys},
		{"Sessions", drvTestSessions},
		{"WriteReturnsFnErrorAndRollsBack", drvTestWriteFnError},
		{"WriteErrorIsolation", drvTestWriteIsolation},
		{"WriteCancelledContext", drvTestWriteCancelled},
		{"ConcurrentWritesAllLand", drvTestConcurrentWrites},
		{"ReadSnapshot", drvTestReadSnapshot},
		{"ReadIsReadOnly", drvTestReadOnly},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// drvBase is the suite's fixed clock origin, with microsecond precision (the
// precision every driver keeps).
var drvBase = time.Date(2026, 3, 15, 10, 0, 0, 123456000, time.UTC)

// drvAt returns drvBase plus n seconds.
func drvAt(n int) time.Time { return drvBase.Add(time.Duration(n) * time.Second) }

func drvTimePtr(t time.Time) *time.Time { return &t }
func drvStrPtr(s string) *string        { return &s }
func drvIntPtr(n int) *int              { return &n }

func drvSHA(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func drvHash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// drvWrite runs fn in a Write and fails the test on error.
func drvWrite(t *testing.T, d storage.Driver, fn func(ctx context.Context, tx storage.Tx) error) {
	t.Helper()
	ctx := context.Background()
	if err := d.Write(ctx, func(tx storage.Tx) error { return fn(ctx, tx) }); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// drvRead runs fn in a Read and fails the test on error.
func drvRead(t *testing.T, d storage.Driver, fn func(ctx context.Context, tx storage.Tx) error) {
	t.Helper()
	ctx := context.Background()
	if err := d.Read(ctx, func(tx storage.Tx) error { return fn(ctx, tx) }); err != nil {
		t.Fatalf("Read: %v", err)
	}
}

// drvWantCode fails unless err carries code.
func drvWantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := trove.ErrorCode(err); got != code {
		t.Errorf("%s: error code %q (err %v), want %q", what, got, err, code)
	}
}

// drvNewStore returns a store of workspace ws created at `at`.
func drvNewStore(ws string, at time.Time) *trove.Store {
	return &trove.Store{
		ID: trove.NewID(trove.PrefixStore, at), WorkspaceID: ws, Name: "store", Metadata: map[string]string{},
		CreatedAt: at, UpdatedAt: at,
	}
}

// drvNewMemory returns a memory and its created version.
func drvNewMemory(storeID, path, content string, at time.Time) (*trove.Memory, *trove.MemoryVersion) {
	m := &trove.Memory{
		ID: trove.NewID(trove.PrefixMemory, at), StoreID: storeID, Path: path, Content: drvStrPtr(content),
		SizeBytes: len(content), SHA256: drvSHA(content), VersionID: trove.NewID(trove.PrefixVersion, at),
		CreatedAt: at, UpdatedAt: at,
	}
	v := &trove.MemoryVersion{
		ID: m.VersionID, StoreID: storeID, MemoryID: m.ID, Operation: trove.OpCreated,
		Path: drvStrPtr(path), Content: drvStrPtr(content), SizeBytes: drvIntPtr(len(content)),
		SHA256: drvStrPtr(drvSHA(content)), CreatedBy: &trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_test"},
		CreatedAt: at,
	}
	return m, v
}

// drvInsertStore inserts a store in its own Write.
func drvInsertStore(t *testing.T, d storage.Driver, s *trove.Store) *trove.Store {
	t.Helper()
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.StoreInsert(ctx, s) })
	return s
}

// drvInsertMemory inserts a memory with its created version in one Write.
func drvInsertMemory(t *testing.T, d storage.Driver, storeID, path, content string, at time.Time) (*trove.Memory, *trove.MemoryVersion) {
	t.Helper()
	m, v := drvNewMemory(storeID, path, content, at)
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.MemoryInsert(ctx, m); err != nil {
			return err
		}
		return tx.VersionInsert(ctx, v)
	})
	return m, v
}

// drvWithoutContent returns a copy of m as a basic view returns it.
func drvWithoutContent(m trove.Memory) trove.Memory {
	m.Content = nil
	return m
}

// drvPages lists every item through keyset pages of size limit, with before
// set from the previous page's last item, and fails if it does not end.
func drvPages[T any](t *testing.T, limit int, list func(before *storage.Position, limit int) []T, pos func(T) storage.Position) []T {
	t.Helper()
	var all []T
	var before *storage.Position
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("paging does not end")
		}
		page := list(before, limit)
		if len(page) > limit {
			t.Fatalf("page %d has %d items, limit %d", i, len(page), limit)
		}
		all = append(all, page...)
		if len(page) < limit {
			return all
		}
		p := pos(page[len(page)-1])
		before = &p
	}
}

// drvDescending sorts by (created_at, id) descending, the order of every
// list but memories and keys.
func drvDescending[T any](xs []T, key func(T) (time.Time, string)) {
	sort.SliceStable(xs, func(i, j int) bool {
		ti, ii := key(xs[i])
		tj, ij := key(xs[j])
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return ii > ij
	})
}

// ---- stores ----

func drvTestStoreRoundTrip(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	zone := time.FixedZone("UTC+2", 2*3600)
	full := &trove.Store{
		ID: trove.NewID(trove.PrefixStore, drvBase), WorkspaceID: "wrkspc_a", Name: "Notes ✓", Description: "about",
		Metadata:  map[string]string{"k": "v", "é": "ü\n"},
		CreatedAt: drvAt(0).In(zone), UpdatedAt: drvAt(1).In(zone), ArchivedAt: drvTimePtr(drvAt(2).In(zone)),
	}
	bare := &trove.Store{ID: trove.NewID(trove.PrefixStore, drvBase), WorkspaceID: "wrkspc_a", Name: "bare",
		CreatedAt: drvAt(3), UpdatedAt: drvAt(3)}
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.StoreInsert(ctx, full); err != nil {
			return err
		}
		return tx.StoreInsert(ctx, bare)
	})

	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.StoreGet(ctx, "wrkspc_a", full.ID)
		if err != nil {
			t.Fatalf("StoreGet: %v", err)
		}
		if diff := cmp.Diff(full, got); diff != "" {
			t.Errorf("StoreGet (-want +got):\n%s", diff)
		}
		for name, tm := range map[string]time.Time{"CreatedAt": got.CreatedAt, "UpdatedAt": got.UpdatedAt, "ArchivedAt": *got.ArchivedAt} {
			if tm.Location() != time.UTC {
				t.Errorf("%s is in %v, want UTC", name, tm.Location())
			}
		}
		got, err = tx.StoreGet(ctx, "wrkspc_a", bare.ID)
		if err != nil {
			t.Fatalf("StoreGet bare: %v", err)
		}
		if got.Metadata == nil || len(got.Metadata) != 0 || got.Description != "" || got.ArchivedAt != nil {
			t.Errorf("bare store: metadata %#v description %q archived %v; want empty non-nil map, \"\", nil",
				got.Metadata, got.Description, got.ArchivedAt)
		}
		_, err = tx.StoreGet(ctx, "wrkspc_b", full.ID)
		drvWantCode(t, "StoreGet from another workspace", err, trove.ENOTFOUND)
		_, err = tx.StoreGet(ctx, "wrkspc_a", "memstore_missing")
		drvWantCode(t, "StoreGet unknown", err, trove.ENOTFOUND)
		return nil
	})

	// StoreLock behaves as StoreGet.
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.StoreLock(ctx, "wrkspc_a", full.ID)
		if err != nil {
			t.Fatalf("StoreLock: %v", err)
		}
		if diff := cmp.Diff(full, got); diff != "" {
			t.Errorf("StoreLock (-want +got):\n%s", diff)
		}
		_, err = tx.StoreLock(ctx, "wrkspc_b", full.ID)
		drvWantCode(t, "StoreLock from another workspace", err, trove.ENOTFOUND)
		_, err = tx.StoreLock(ctx, "wrkspc_a", "memstore_missing")
		drvWantCode(t, "StoreLock unknown", err, trove.ENOTFOUND)
		return nil
	})

	// StoreUpdate replaces the mutable fields only.
	upd := *bare
	upd.Name, upd.Description = "renamed", "now described"
	upd.Metadata = map[string]string{"a": "1"}
	upd.UpdatedAt, upd.ArchivedAt = drvAt(10), drvTimePtr(drvAt(11))
	upd.CreatedAt = drvAt(99) // must not be written
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.StoreUpdate(ctx, &upd) })
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.StoreGet(ctx, "wrkspc_a", bare.ID)
		if err != nil {
			t.Fatalf("StoreGet after update: %v", err)
		}
		want := upd
		want.CreatedAt = bare.CreatedAt
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("after StoreUpdate (-want +got):\n%s", diff)
		}
		return nil
	})
	err := d.Write(ctx, func(tx storage.Tx) error {
		return tx.StoreUpdate(ctx, &trove.Store{ID: "memstore_missing", Name: "x", UpdatedAt: drvAt(1)})
	})
	drvWantCode(t, "StoreUpdate unknown", err, trove.ENOTFOUND)
}

func drvTestStoreList(t *testing.T, d storage.Driver) {
	var all []trove.Store // wrkspc_a, archived included
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error {
		add := func(ws string, at time.Time, archived bool) error {
			s := drvNewStore(ws, at)
			if archived {
				s.ArchivedAt = drvTimePtr(at.Add(time.Hour))
			}
			if ws == "wrkspc_a" {
				all = append(all, *s)
			}
			return tx.StoreInsert(ctx, s)
		}
		// Three stores share a created_at (the ID breaks the tie), one is
		// archived, and another workspace interleaves.
		for _, c := range []struct {
			ws       string
			at       int
			archived bool
		}{
			{"wrkspc_a", 5, false}, {"wrkspc_a", 1, false}, {"wrkspc_b", 3, false}, {"wrkspc_a", 3, false},
			{"wrkspc_a", 3, true}, {"wrkspc_a", 3, false}, {"wrkspc_a", 7, false}, {"wrkspc_b", 7, false},
			{"wrkspc_a", 9, true},
		} {
			if err := add(c.ws, drvAt(c.at), c.archived); err != nil {
				return err
			}
		}
		return nil
	})
	drvDescending(all, func(s trove.Store) (time.Time, string) { return s.CreatedAt, s.ID })
	live := slices.DeleteFunc(slices.Clone(all), func(s trove.Store) bool { return s.ArchivedAt != nil })
	ids := func(ss []trove.Store) []string {
		out := []string{}
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	between := func(ss []trove.Store, lo, hi int) []trove.Store {
		return slices.DeleteFunc(slices.Clone(ss), func(s trove.Store) bool {
			return s.CreatedAt.Before(drvAt(lo)) || s.CreatedAt.After(drvAt(hi))
		})
	}

	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		list := func(p storage.StoreListParams) []trove.Store {
			t.Helper()
			got, err := tx.StoreList(ctx, p)
			if err != nil {
				t.Fatalf("StoreList(%+v): %v", p, err)
			}
			return got
		}
		got := list(storage.StoreListParams{WorkspaceID: "wrkspc_a", IncludeArchived: true})
		if diff := cmp.Diff(all, got); diff != "" {
			t.Errorf("StoreList all (-want +got):\n%s", diff)
		}
		for _, c := range []struct {
			name string
			p    storage.StoreListParams
			want []trove.Store
		}{
			{"live only", storage.StoreListParams{WorkspaceID: "wrkspc_a"}, live},
			{"limit", storage.StoreListParams{WorkspaceID: "wrkspc_a", IncludeArchived: true, Limit: 2}, all[:2]},
			{"created range inclusive", storage.StoreListParams{WorkspaceID: "wrkspc_a", IncludeArchived: true,
				CreatedAt: trove.TimeRange{GTE: drvTimePtr(drvAt(3)), LTE: drvTimePtr(drvAt(7))}}, between(all, 3, 7)},
			{"gte only", storage.StoreListParams{WorkspaceID: "wrkspc_a",
				CreatedAt: trove.TimeRange{GTE: drvTimePtr(drvAt(5))}}, between(live, 5, 100)},
			{"lte only", storage.StoreListParams{WorkspaceID: "wrkspc_a",
				CreatedAt: trove.TimeRange{LTE: drvTimePtr(drvAt(3))}}, between(live, 0, 3)},
			{"before a tie", storage.StoreListParams{WorkspaceID: "wrkspc_a", IncludeArchived: true,
				Before: &storage.Position{CreatedAt: all[3].CreatedAt, ID: all[3].ID}}, all[4:]},
			{"other workspace", storage.StoreListParams{WorkspaceID: "wrkspc_c"}, nil},
		} {
			if diff := cmp.Diff(ids(c.want), ids(list(c.p))); diff != "" {
				t.Errorf("StoreList %s (-want +got):\n%s", c.name, diff)
			}
		}
		if got := list(storage.StoreListParams{WorkspaceID: "wrkspc_b"}); len(got) != 2 {
			t.Errorf("StoreList wrkspc_b: %d stores, want 2", len(got))
		}
		for _, limit := range []int{1, 2, 3} {
			for _, archived := range []bool{false, true} {
				got := drvPages(t, limit, func(before *storage.Position, limit int) []trove.Store {
					return list(storage.StoreListParams{WorkspaceID: "wrkspc_a", IncludeArchived: archived, Before: before, Limit: limit})
				}, func(s trove.Store) storage.Position { return storage.Position{CreatedAt: s.CreatedAt, ID: s.ID} })
				want := live
				if archived {
					want = all
				}
				if diff := cmp.Diff(ids(want), ids(got)); diff != "" {
					t.Errorf("StoreList paged by %d (archived %v) (-want +got):\n%s", limit, archived, diff)
				}
			}
		}
		return nil
	})
}

func drvTestStoreDelete(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	a := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	b := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(1)))
	ma, va := drvInsertMemory(t, d, a.ID, "/x", "in a", drvAt(2))
	mb, vb := drvInsertMemory(t, d, b.ID, "/x", "in b", drvAt(3))
	// A deleted memory's versions go with the store too.
	ma2, va2 := drvInsertMemory(t, d, a.ID, "/gone", "gone", drvAt(4))
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryDelete(ctx, a.ID, ma2.ID) })

	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.StoreDelete(ctx, a.ID) })
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.StoreGet(ctx, "wrkspc_a", a.ID)
		drvWantCode(t, "StoreGet deleted", err, trove.ENOTFOUND)
		_, err = tx.MemoryGet(ctx, a.ID, ma.ID, false)
		drvWantCode(t, "MemoryGet of deleted store", err, trove.ENOTFOUND)
		for _, v := range []*trove.MemoryVersion{va, va2} {
			_, err = tx.VersionGet(ctx, a.ID, v.ID, false)
			drvWantCode(t, "VersionGet of deleted store", err, trove.ENOTFOUND)
		}
		if vs, err := tx.VersionList(ctx, storage.VersionListParams{StoreID: a.ID}); err != nil || len(vs) != 0 {
			t.Errorf("VersionList of deleted store = %d versions, %v; want none", len(vs), err)
		}
		if vs, err := tx.VersionList(ctx, storage.VersionListParams{MemoryID: ma2.ID}); err != nil || len(vs) != 0 {
			t.Errorf("VersionList of a deleted store's memory = %d versions, %v; want none", len(vs), err)
		}
		if n, err := tx.MemoryCount(ctx, a.ID); err != nil || n != 0 {
			t.Errorf("MemoryCount of deleted store = %d, %v; want 0", n, err)
		}
		// The other store is untouched.
		if _, err := tx.StoreGet(ctx, "wrkspc_a", b.ID); err != nil {
			t.Errorf("StoreGet other store: %v", err)
		}
		if _, err := tx.MemoryGet(ctx, b.ID, mb.ID, true); err != nil {
			t.Errorf("MemoryGet other store: %v", err)
		}
		if _, err := tx.VersionGet(ctx, b.ID, vb.ID, true); err != nil {
			t.Errorf("VersionGet other store: %v", err)
		}
		return nil
	})
	err := d.Write(ctx, func(tx storage.Tx) error { return tx.StoreDelete(ctx, a.ID) })
	drvWantCode(t, "StoreDelete twice", err, trove.ENOTFOUND)
}

// ---- memories ----

// drvTestMemoryPointRead: Driver.MemoryGet returns what Tx.MemoryGet does,
// with and without content, and the same ENOTFOUND for a memory of another
// store, an unknown ID and a deleted memory; a cancelled context fails it.
func drvTestMemoryPointRead(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	other := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	m, _ := drvInsertMemory(t, d, s.ID, "/notes/todo.md", "line1\r\n\u00e9", drvAt(1))
	gone, _ := drvInsertMemory(t, d, s.ID, "/gone.md", "x", drvAt(2))
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryDelete(ctx, s.ID, gone.ID) })

	got, err := d.MemoryGet(ctx, s.ID, m.ID, true)
	if err != nil {
		t.Fatalf("MemoryGet: %v", err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("MemoryGet full (-want +got):\n%s", diff)
	}
	got, err = d.MemoryGet(ctx, s.ID, m.ID, false)
	if err != nil {
		t.Fatalf("MemoryGet basic: %v", err)
	}
	if diff := cmp.Diff(drvWithoutContent(*m), *got); diff != "" {
		t.Errorf("MemoryGet basic (-want +got):\n%s", diff)
	}
	for _, c := range []struct{ what, store, id string }{
		{"from another store", other.ID, m.ID},
		{"unknown", s.ID, "mem_missing"},
		{"deleted", s.ID, gone.ID},
	} {
		got, err := d.MemoryGet(ctx, c.store, c.id, true)
		drvWantCode(t, "MemoryGet "+c.what, err, trove.ENOTFOUND)
		if got != nil {
			t.Errorf("MemoryGet %s = %+v, want nil", c.what, got)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.MemoryGet(cctx, s.ID, m.ID, true); err == nil {
		t.Error("MemoryGet with a cancelled context succeeded")
	}
}

func drvTestMemoryCRUD(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	other := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	// Content is kept byte for byte: CRLF, a BOM, trailing blanks, non-ASCII.
	tricky := "line1\r\nline2\n\ufeffBOM\t trailing  \n\u00e9 e\u0301 \U0001F600\r"
	m1, _ := drvInsertMemory(t, d, s.ID, "/notes/todo.md", tricky, drvAt(1))
	m2, _ := drvInsertMemory(t, d, s.ID, "/empty", "", drvAt(2))

	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, m := range []*trove.Memory{m1, m2} {
			got, err := tx.MemoryGet(ctx, s.ID, m.ID, true)
			if err != nil {
				t.Fatalf("MemoryGet %s: %v", m.Path, err)
			}
			if diff := cmp.Diff(m, got); diff != "" {
				t.Errorf("MemoryGet full (-want +got):\n%s", diff)
			}
			got, err = tx.MemoryGet(ctx, s.ID, m.ID, false)
			if err != nil {
				t.Fatalf("MemoryGet basic %s: %v", m.Path, err)
			}
			if diff := cmp.Diff(drvWithoutContent(*m), *got); diff != "" {
				t.Errorf("MemoryGet basic (-want +got):\n%s", diff)
			}
			got, err = tx.MemoryGetByPath(ctx, s.ID, m.Path, true)
			if err != nil {
				t.Fatalf("MemoryGetByPath %s: %v", m.Path, err)
			}
			if diff := cmp.Diff(m, got); diff != "" {
				t.Errorf("MemoryGetByPath (-want +got):\n%s", diff)
			}
			got, err = tx.MemoryGetByPath(ctx, s.ID, m.Path, false)
			if err != nil || got.Content != nil {
				t.Errorf("MemoryGetByPath basic: content %v, err %v; want nil content", got, err)
			}
		}
		_, err := tx.MemoryGet(ctx, other.ID, m1.ID, true)
		drvWantCode(t, "MemoryGet from another store", err, trove.ENOTFOUND)
		_, err = tx.MemoryGet(ctx, s.ID, "mem_missing", true)
		drvWantCode(t, "MemoryGet unknown", err, trove.ENOTFOUND)
		_, err = tx.MemoryGetByPath(ctx, other.ID, m1.Path, false)
		drvWantCode(t, "MemoryGetByPath in another store", err, trove.ENOTFOUND)
		_, err = tx.MemoryGetByPath(ctx, s.ID, "/notes", false)
		drvWantCode(t, "MemoryGetByPath of a directory", err, trove.ENOTFOUND)
		_, err = tx.MemoryGetByPath(ctx, s.ID, "/Notes/todo.md", false)
		drvWantCode(t, "MemoryGetByPath is case-sensitive", err, trove.ENOTFOUND)
		if n, err := tx.MemoryCount(ctx, s.ID); err != nil || n != 2 {
			t.Errorf("MemoryCount = %d, %v; want 2", n, err)
		}
		if n, err := tx.MemoryCount(ctx, other.ID); err != nil || n != 0 {
			t.Errorf("MemoryCount other store = %d, %v; want 0", n, err)
		}
		return nil
	})

	// A second memory at a used path is EPATHCONFLICT; the same path in
	// another store is fine.
	dup, _ := drvNewMemory(s.ID, m1.Path, "dup", drvAt(3))
	err := d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryInsert(ctx, dup) })
	drvWantCode(t, "MemoryInsert at a used path", err, trove.EPATHCONFLICT)
	elsewhere, _ := drvNewMemory(other.ID, m1.Path, "elsewhere", drvAt(3))
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryInsert(ctx, elsewhere) })
	// MemoryCount counts exactly what is live: not the refused duplicate,
	// not an insert whose Write failed, and 0 for an unknown store.
	rolledBack, _ := drvNewMemory(s.ID, "/rolled/back.md", "x", drvAt(3))
	errFn := errors.New("fn failed")
	if err := d.Write(ctx, func(tx storage.Tx) error {
		if err := tx.MemoryInsert(ctx, rolledBack); err != nil {
			return err
		}
		if n, err := tx.MemoryCount(ctx, s.ID); err != nil || n != 3 {
			t.Errorf("MemoryCount inside the inserting Write = %d, %v; want 3", n, err)
		}
		return errFn
	}); !errors.Is(err, errFn) {
		t.Errorf("Write = %v, want the fn's error", err)
	}
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, c := range []struct {
			store string
			want  int
		}{{s.ID, 2}, {other.ID, 1}, {"memstore_unknown", 0}} {
			if n, err := tx.MemoryCount(ctx, c.store); err != nil || n != c.want {
				t.Errorf("MemoryCount(%s) after a refused and a rolled-back insert = %d, %v; want %d", c.store, n, err, c.want)
			}
		}
		return nil
	})

	// MemoryUpdate replaces path, content, size, sha, version and updated_at.
	upd := *m1
	upd.Path, upd.Content = "/notes/done.md", drvStrPtr("done")
	upd.SizeBytes, upd.SHA256 = 4, drvSHA("done")
	upd.VersionID, upd.UpdatedAt = trove.NewID(trove.PrefixVersion, drvAt(4)), drvAt(4)
	upd.CreatedAt = drvAt(50) // must not be written
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryUpdate(ctx, &upd) })
	want := upd
	want.CreatedAt = m1.CreatedAt
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.MemoryGet(ctx, s.ID, m1.ID, true)
		if err != nil {
			t.Fatalf("MemoryGet after update: %v", err)
		}
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("after MemoryUpdate (-want +got):\n%s", diff)
		}
		_, err = tx.MemoryGetByPath(ctx, s.ID, m1.Path, false)
		drvWantCode(t, "MemoryGetByPath of the old path", err, trove.ENOTFOUND)
		if _, err := tx.MemoryGetByPath(ctx, s.ID, upd.Path, false); err != nil {
			t.Errorf("MemoryGetByPath of the new path: %v", err)
		}
		return nil
	})

	// Renaming onto another memory's path is EPATHCONFLICT and changes nothing.
	clash := want
	clash.Path, clash.UpdatedAt = m2.Path, drvAt(5)
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryUpdate(ctx, &clash) })
	drvWantCode(t, "MemoryUpdate onto a used path", err, trove.EPATHCONFLICT)
	missing := want
	missing.ID = "mem_missing"
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryUpdate(ctx, &missing) })
	drvWantCode(t, "MemoryUpdate unknown", err, trove.ENOTFOUND)
	wrongStore := want
	wrongStore.StoreID = other.ID
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryUpdate(ctx, &wrongStore) })
	drvWantCode(t, "MemoryUpdate in another store", err, trove.ENOTFOUND)
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.MemoryGet(ctx, s.ID, m1.ID, true)
		if err != nil {
			t.Fatalf("MemoryGet: %v", err)
		}
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("after failed updates (-want +got):\n%s", diff)
		}
		return nil
	})

	// MemoryDelete removes the live memory, keeps its versions and frees the
	// path.
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryDelete(ctx, other.ID, m2.ID) })
	drvWantCode(t, "MemoryDelete in another store", err, trove.ENOTFOUND)
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.MemoryDelete(ctx, s.ID, m2.ID) })
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryDelete(ctx, s.ID, m2.ID) })
	drvWantCode(t, "MemoryDelete twice", err, trove.ENOTFOUND)
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.MemoryGet(ctx, s.ID, m2.ID, false)
		drvWantCode(t, "MemoryGet deleted", err, trove.ENOTFOUND)
		if _, err := tx.VersionGet(ctx, s.ID, m2.VersionID, false); err != nil {
			t.Errorf("VersionGet of a deleted memory's version: %v", err)
		}
		if n, err := tx.MemoryCount(ctx, s.ID); err != nil || n != 1 {
			t.Errorf("MemoryCount after delete = %d, %v; want 1", n, err)
		}
		return nil
	})
	drvInsertMemory(t, d, s.ID, m2.Path, "reborn", drvAt(6))
}

func drvTestFindOverlap(t *testing.T, d storage.Driver) {
	s := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	other := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	byPath := map[string]*trove.Memory{}
	for i, p := range []string{"/a/b", "/ab", "/a0", "/a.b", "/x/y/z", "/é/ü"} {
		m, _ := drvInsertMemory(t, d, s.ID, p, p, drvAt(i))
		byPath[p] = m
	}
	drvInsertMemory(t, d, other.ID, "/q", "other store", drvAt(9))
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, c := range []struct {
			path, exclude string
			want          []string // acceptable answers; none means nil
		}{
			{path: "/a/b", want: []string{"/a/b"}},                      // same path
			{path: "/a", want: []string{"/a/b"}},                        // descendant
			{path: "/a/b/c", want: []string{"/a/b"}},                    // ancestor
			{path: "/a/b/c/d/e", want: []string{"/a/b"}},                // distant ancestor
			{path: "/ab/c", want: []string{"/ab"}},                      // ancestor, not /a
			{path: "/x", want: []string{"/x/y/z"}},                      // distant descendant
			{path: "/x/y", want: []string{"/x/y/z"}},                    // descendant
			{path: "/x/y/z/w", want: []string{"/x/y/z"}},                // ancestor
			{path: "/é", want: []string{"/é/ü"}},                        // non-ASCII descendant
			{path: "/a/bc"},                                             // /a/b is no ancestor of /a/bc
			{path: "/a/b0"},                                             // nor of /a/b0
			{path: "/a-"},                                               // '-' sorts before '/'
			{path: "/x/yy"},                                             // sibling with a longer name
			{path: "/x/y0"},                                             // '0' is '/'+1
			{path: "/b"},                                                // unrelated
			{path: "/q"},                                                // only in another store
			{path: "/a/b", exclude: "self"},                             // the memory itself is excluded
			{path: "/a/b/c", exclude: "self"},                           // its own old path is excluded
			{path: "/ab", exclude: "/ab"},                               // rename to itself
			{path: "/a", exclude: "/a/b"},                               // only descendant excluded
			{path: "/a.b", exclude: "other", want: []string{"/a.b"}},    // exclusion of another ID
			{path: "/x/y/z", exclude: "/a/b", want: []string{"/x/y/z"}}, // exclusion of an unrelated ID
		} {
			exclude := ""
			switch c.exclude {
			case "":
			case "self":
				exclude = byPath["/a/b"].ID
			case "other":
				exclude = "mem_other"
			default:
				exclude = byPath[c.exclude].ID
			}
			got, err := tx.MemoryFindOverlap(ctx, s.ID, c.path, exclude)
			if err != nil {
				t.Errorf("MemoryFindOverlap(%q, exclude %s): %v", c.path, c.exclude, err)
				continue
			}
			switch {
			case len(c.want) == 0 && got != nil:
				t.Errorf("MemoryFindOverlap(%q, exclude %s) = %q, want none", c.path, c.exclude, got.Path)
			case len(c.want) > 0 && got == nil:
				t.Errorf("MemoryFindOverlap(%q, exclude %s) = none, want %q", c.path, c.exclude, c.want)
			case len(c.want) > 0 && !slices.Contains(c.want, got.Path):
				t.Errorf("MemoryFindOverlap(%q, exclude %s) = %q, want %q", c.path, c.exclude, got.Path, c.want)
			case got != nil && got.ID != byPath[got.Path].ID:
				t.Errorf("MemoryFindOverlap(%q) returned ID %s for %q, want %s", c.path, got.ID, got.Path, byPath[got.Path].ID)
			}
		}
		return nil
	})
}

func drvTestMemoryList(t *testing.T, d storage.Driver) {
	s := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	other := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	// Bytes around '/' ('-', '.', '0'), case, and multi-byte characters,
	// which sort after every ASCII byte bytewise (not in a locale order).
	paths := []string{
		"/a/x", "/a/y/z", "/a0", "/a.b", "/a-c", "/ab/c", "/a/é", "/a/\U0001F600", "/a/\U0001F601",
		"/a/\uFFFD", "/B", "/b", "/~", "/a/x y", "/a/X", "/a/x.md", "/Z/a",
	}
	contents := map[string]string{}
	mems := map[string]trove.Memory{}
	for i, p := range paths {
		content := fmt.Sprintf("content of %s", p)
		m, _ := drvInsertMemory(t, d, s.ID, p, content, drvAt(i))
		contents[p] = content
		mems[p] = *m
	}
	drvInsertMemory(t, d, other.ID, "/a/x", "other store", drvAt(1))
	sorted := slices.Clone(paths)
	slices.Sort(sorted) // bytewise
	match := func(prefix, from string) []string {
		out := []string{}
		for _, p := range sorted {
			if strings.HasPrefix(p, prefix) && p >= from {
				out = append(out, p)
			}
		}
		return out
	}
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		list := func(p storage.MemoryListParams) []trove.Memory {
			t.Helper()
			p.StoreID = s.ID
			got, err := tx.MemoryList(ctx, p)
			if err != nil {
				t.Fatalf("MemoryList(%+v): %v", p, err)
			}
			return got
		}
		pathsOf := func(ms []trove.Memory) []string {
			out := []string{}
			for _, m := range ms {
				out = append(out, m.Path)
			}
			return out
		}
		for _, c := range []struct {
			prefix, from string
			limit        int
		}{
			{},
			{prefix: "/a/"},
			{prefix: "/a"},
			{prefix: "/a/x"},
			{prefix: "/a/y/"},
			{prefix: "/a/\U0001F600"},
			{prefix: "/a/\u00e9"},
			{prefix: "/B"},
			{prefix: "/zz/"},
			{prefix: "/~"},
			{from: "/a0"},
			{from: "/a/x y"},
			{prefix: "/a/", from: "/a/x"},
			{prefix: "/a/", from: "/a/x.md"},
			{prefix: "/a/", from: "/a"},
			{prefix: "/a/", from: "/b"},
			{prefix: "/a/", limit: 3},
			{prefix: "/a/", from: "/a/y", limit: 2},
			{limit: 1},
		} {
			want := match(c.prefix, c.from)
			if c.limit > 0 && len(want) > c.limit {
				want = want[:c.limit]
			}
			got := list(storage.MemoryListParams{Prefix: c.prefix, From: c.from, Limit: c.limit})
			if diff := cmp.Diff(want, pathsOf(got)); diff != "" {
				t.Errorf("MemoryList(prefix %q, from %q, limit %d) (-want +got):\n%s", c.prefix, c.from, c.limit, diff)
			}
		}
		// Items are whole memories; content only when asked for.
		full := list(storage.MemoryListParams{Prefix: "/a/", WithContent: true})
		basic := list(storage.MemoryListParams{Prefix: "/a/"})
		for i := range full {
			want := mems[full[i].Path]
			if diff := cmp.Diff(want, full[i]); diff != "" {
				t.Errorf("MemoryList with content, %s (-want +got):\n%s", want.Path, diff)
			}
			if diff := cmp.Diff(drvWithoutContent(want), basic[i]); diff != "" {
				t.Errorf("MemoryList basic, %s (-want +got):\n%s", want.Path, diff)
			}
		}
		// Paging with From = the first path of the next page (fetched as one
		// extra item) yields everything once.
		var paged []string
		from := ""
		for range len(paths) + 1 {
			page := list(storage.MemoryListParams{From: from, Limit: 5})
			if len(page) < 5 {
				paged = append(paged, pathsOf(page)...)
				break
			}
			paged = append(paged, pathsOf(page[:4])...)
			from = page[4].Path
		}
		if diff := cmp.Diff(sorted, paged); diff != "" {
			t.Errorf("MemoryList paged (-want +got):\n%s", diff)
		}
		return nil
	})
}

// ---- versions ----

func drvTestVersionRoundTrip(t *testing.T, d storage.Driver) {
	s := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	other := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	memID := trove.NewID(trove.PrefixMemory, drvAt(0))
	mk := func(op trove.Operation, at int, path string, content *string, by *trove.Actor) *trove.MemoryVersion {
		v := &trove.MemoryVersion{ID: trove.NewID(trove.PrefixVersion, drvAt(at)), StoreID: s.ID, MemoryID: memID,
			Operation: op, Path: drvStrPtr(path), Content: content, CreatedBy: by, CreatedAt: drvAt(at)}
		if content != nil {
			v.SizeBytes, v.SHA256 = drvIntPtr(len(*content)), drvStrPtr(drvSHA(*content))
		}
		return v
	}
	versions := []*trove.MemoryVersion{
		mk(trove.OpCreated, 1, "/p", drvStrPtr("one\r\n"), &trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_1"}),
		mk(trove.OpModified, 2, "/q", drvStrPtr(""), &trove.Actor{Type: trove.ActorSession, SessionID: "sesn_1"}),
		mk(trove.OpModified, 3, "/q", drvStrPtr("three"), &trove.Actor{Type: trove.ActorUser, UserID: "user_1"}),
		mk(trove.OpDeleted, 4, "/q", nil, &trove.Actor{Type: trove.ActorServiceAccount, ServiceAccountID: "svac_1"}),
		mk(trove.OpCreated, 5, "/r", drvStrPtr("no actor"), nil),
	}
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, v := range versions {
			if err := tx.VersionInsert(ctx, v); err != nil {
				return err
			}
		}
		return nil
	})
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, v := range versions {
			got, err := tx.VersionGet(ctx, s.ID, v.ID, true)
			if err != nil {
				t.Fatalf("VersionGet %s: %v", v.Operation, err)
			}
			if diff := cmp.Diff(v, got); diff != "" {
				t.Errorf("VersionGet full, %s (-want +got):\n%s", v.Operation, diff)
			}
			if got.CreatedAt.Location() != time.UTC {
				t.Errorf("VersionGet: CreatedAt in %v, want UTC", got.CreatedAt.Location())
			}
			got, err = tx.VersionGet(ctx, s.ID, v.ID, false)
			if err != nil {
				t.Fatalf("VersionGet basic: %v", err)
			}
			want := *v
			want.Content = nil
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("VersionGet basic, %s (-want +got):\n%s", v.Operation, diff)
			}
		}
		_, err := tx.VersionGet(ctx, other.ID, versions[0].ID, false)
		drvWantCode(t, "VersionGet from another store", err, trove.ENOTFOUND)
		_, err = tx.VersionGet(ctx, s.ID, "memver_missing", false)
		drvWantCode(t, "VersionGet unknown", err, trove.ENOTFOUND)
		return nil
	})
}

func drvTestVersionList(t *testing.T, d storage.Driver) {
	s := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	other := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	m1, m2 := trove.NewID(trove.PrefixMemory, drvAt(0)), trove.NewID(trove.PrefixMemory, drvAt(0))
	actors := []*trove.Actor{
		{Type: trove.ActorAPI, APIKeyID: "apikey_1"},
		{Type: trove.ActorSession, SessionID: "sesn_1"},
		{Type: trove.ActorServiceAccount, ServiceAccountID: "svac_1"},
		{Type: trove.ActorSession, SessionID: "sesn_2"},
		{Type: trove.ActorUser, UserID: "user_1"},
		nil,
	}
	ops := []trove.Operation{trove.OpCreated, trove.OpModified, trove.OpModified, trove.OpDeleted}
	var all []trove.MemoryVersion // of s, with content
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error {
		for i := range 18 {
			at := drvAt(i / 3) // three versions per second: ties on created_at
			for _, store := range []string{s.ID, other.ID} {
				mem := m1
				if i%2 == 1 {
					mem = m2
				}
				if store == other.ID {
					mem = "mem_other"
				}
				op := ops[i%len(ops)]
				v := trove.MemoryVersion{ID: trove.NewID(trove.PrefixVersion, at), StoreID: store, MemoryID: mem,
					Operation: op, Path: drvStrPtr(fmt.Sprintf("/v%d", i)), CreatedBy: actors[i%len(actors)], CreatedAt: at}
				if op != trove.OpDeleted {
					c := fmt.Sprintf("content %d", i)
					v.Content, v.SizeBytes, v.SHA256 = &c, drvIntPtr(len(c)), drvStrPtr(drvSHA(c))
				}
				if err := tx.VersionInsert(ctx, &v); err != nil {
					return err
				}
				if store == s.ID {
					all = append(all, v)
				}
			}
		}
		return nil
	})
	drvDescending(all, func(v trove.MemoryVersion) (time.Time, string) { return v.CreatedAt, v.ID })
	filter := func(keep func(v trove.MemoryVersion) bool) []string {
		out := []string{}
		for _, v := range all {
			if keep(v) {
				out = append(out, v.ID)
			}
		}
		return out
	}
	by := func(typ trove.ActorType, id string) func(v trove.MemoryVersion) bool {
		return func(v trove.MemoryVersion) bool {
			if v.CreatedBy == nil || v.CreatedBy.Type != typ {
				return false
			}
			switch typ {
			case trove.ActorSession:
				return v.CreatedBy.SessionID == id
			case trove.ActorAPI:
				return v.CreatedBy.APIKeyID == id
			}
			return v.CreatedBy.ServiceAccountID == id
		}
	}
	ids := func(vs []trove.MemoryVersion) []string {
		out := []string{}
		for _, v := range vs {
			out = append(out, v.ID)
		}
		return out
	}
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		list := func(p storage.VersionListParams) []trove.MemoryVersion {
			t.Helper()
			got, err := tx.VersionList(ctx, p)
			if err != nil {
				t.Fatalf("VersionList(%+v): %v", p, err)
			}
			return got
		}
		got := list(storage.VersionListParams{StoreID: s.ID, WithContent: true})
		if diff := cmp.Diff(all, got); diff != "" {
			t.Errorf("VersionList with content (-want +got):\n%s", diff)
		}
		for i, v := range list(storage.VersionListParams{StoreID: s.ID}) {
			want := all[i]
			want.Content = nil
			if diff := cmp.Diff(want, v); diff != "" {
				t.Errorf("VersionList basic (-want +got):\n%s", diff)
			}
		}
		rng := trove.TimeRange{GTE: drvTimePtr(drvAt(1)), LTE: drvTimePtr(drvAt(3))}
		inRange := func(v trove.MemoryVersion) bool {
			return !v.CreatedAt.Before(drvAt(1)) && !v.CreatedAt.After(drvAt(3))
		}
		for _, c := range []struct {
			name string
			p    storage.VersionListParams
			want []string
		}{
			{"memory", storage.VersionListParams{MemoryID: m1}, filter(func(v trove.MemoryVersion) bool { return v.MemoryID == m1 })},
			{"session", storage.VersionListParams{SessionID: "sesn_1"}, filter(by(trove.ActorSession, "sesn_1"))},
			{"api key", storage.VersionListParams{APIKeyID: "apikey_1"}, filter(by(trove.ActorAPI, "apikey_1"))},
			{"service account", storage.VersionListParams{ServiceAccountID: "svac_1"}, filter(by(trove.ActorServiceAccount, "svac_1"))},
			{"unknown session", storage.VersionListParams{SessionID: "sesn_none"}, []string{}},
			{"session id as api key", storage.VersionListParams{APIKeyID: "sesn_1"}, []string{}},
			{"operation", storage.VersionListParams{Operation: trove.OpModified},
				filter(func(v trove.MemoryVersion) bool { return v.Operation == trove.OpModified })},
			{"created range inclusive", storage.VersionListParams{CreatedAt: rng}, filter(inRange)},
			{"memory and operation", storage.VersionListParams{MemoryID: m2, Operation: trove.OpDeleted},
				filter(func(v trove.MemoryVersion) bool { return v.MemoryID == m2 && v.Operation == trove.OpDeleted })},
			{"session and range", storage.VersionListParams{SessionID: "sesn_2", CreatedAt: rng},
				filter(func(v trove.MemoryVersion) bool { return by(trove.ActorSession, "sesn_2")(v) && inRange(v) })},
			{"limit", storage.VersionListParams{Limit: 4}, ids(all[:4])},
			{"before a tie", storage.VersionListParams{Before: &storage.Position{CreatedAt: all[4].CreatedAt, ID: all[4].ID}}, ids(all[5:])},
			{"memory of another store", storage.VersionListParams{MemoryID: "mem_other"}, []string{}},
		} {
			c.p.StoreID = s.ID
			if diff := cmp.Diff(c.want, ids(list(c.p))); diff != "" {
				t.Errorf("VersionList %s (-want +got):\n%s", c.name, diff)
			}
		}
		for _, c := range []struct {
			p    storage.VersionListParams
			want []string
		}{
			{storage.VersionListParams{StoreID: s.ID}, ids(all)},
			{storage.VersionListParams{StoreID: s.ID, MemoryID: m2}, filter(func(v trove.MemoryVersion) bool { return v.MemoryID == m2 })},
			{storage.VersionListParams{StoreID: s.ID, Operation: trove.OpModified},
				filter(func(v trove.MemoryVersion) bool { return v.Operation == trove.OpModified })},
		} {
			for _, limit := range []int{1, 4, 5} {
				got := drvPages(t, limit, func(before *storage.Position, limit int) []trove.MemoryVersion {
					p := c.p
					p.Before, p.Limit = before, limit
					return list(p)
				}, func(v trove.MemoryVersion) storage.Position {
					return storage.Position{CreatedAt: v.CreatedAt, ID: v.ID}
				})
				if diff := cmp.Diff(c.want, ids(got)); diff != "" {
					t.Errorf("VersionList %+v paged by %d (-want +got):\n%s", c.p, limit, diff)
				}
			}
		}
		return nil
	})
}

func drvTestVersionRedact(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	other := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	m, v1 := drvInsertMemory(t, d, s.ID, "/secret", "password=hunter2", drvAt(1))
	v2 := &trove.MemoryVersion{ID: trove.NewID(trove.PrefixVersion, drvAt(2)), StoreID: s.ID, MemoryID: m.ID,
		Operation: trove.OpModified, Path: drvStrPtr("/secret"), Content: drvStrPtr("clean"),
		SizeBytes: drvIntPtr(5), SHA256: drvStrPtr(drvSHA("clean")),
		CreatedBy: &trove.Actor{Type: trove.ActorSession, SessionID: "sesn_1"}, CreatedAt: drvAt(2)}
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.VersionInsert(ctx, v2) })

	by := trove.Actor{Type: trove.ActorUser, UserID: "user_admin"}
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error {
		return tx.VersionRedact(ctx, s.ID, v1.ID, drvAt(10), by)
	})
	want := *v1
	want.Path, want.Content, want.SizeBytes, want.SHA256 = nil, nil, nil, nil
	want.RedactedAt, want.RedactedBy = drvTimePtr(drvAt(10)), &by
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, withContent := range []bool{true, false} {
			got, err := tx.VersionGet(ctx, s.ID, v1.ID, withContent)
			if err != nil {
				t.Fatalf("VersionGet redacted: %v", err)
			}
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("redacted version, content %v (-want +got):\n%s", withContent, diff)
			}
		}
		got, err := tx.VersionList(ctx, storage.VersionListParams{StoreID: s.ID, WithContent: true})
		if err != nil {
			t.Fatalf("VersionList: %v", err)
		}
		if diff := cmp.Diff([]trove.MemoryVersion{*v2, want}, got); diff != "" {
			t.Errorf("VersionList after redaction (-want +got):\n%s", diff)
		}
		// The memory itself is untouched.
		if got, err := tx.MemoryGet(ctx, s.ID, m.ID, true); err != nil || *got.Content != *m.Content {
			t.Errorf("MemoryGet after redacting a version: %v, %v", got, err)
		}
		return nil
	})
	err := d.Write(ctx, func(tx storage.Tx) error { return tx.VersionRedact(ctx, other.ID, v2.ID, drvAt(11), by) })
	drvWantCode(t, "VersionRedact from another store", err, trove.ENOTFOUND)
	err = d.Write(ctx, func(tx storage.Tx) error { return tx.VersionRedact(ctx, s.ID, "memver_missing", drvAt(11), by) })
	drvWantCode(t, "VersionRedact unknown", err, trove.ENOTFOUND)
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.VersionGet(ctx, s.ID, v2.ID, true)
		if err != nil {
			t.Fatalf("VersionGet: %v", err)
		}
		if diff := cmp.Diff(v2, got); diff != "" {
			t.Errorf("version after a failed redaction (-want +got):\n%s", diff)
		}
		return nil
	})
}

func drvTestDeleteExpired(t *testing.T, d storage.Driver) {
	s := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	other := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	cutoff := drvAt(100)
	version := func(storeID, memID string, at time.Time, op trove.Operation) *trove.MemoryVersion {
		v := &trove.MemoryVersion{ID: trove.NewID(trove.PrefixVersion, at), StoreID: storeID, MemoryID: memID,
			Operation: op, Path: drvStrPtr("/p"), CreatedAt: at}
		if op != trove.OpDeleted {
			v.Content, v.SizeBytes, v.SHA256 = drvStrPtr("c"), drvIntPtr(1), drvStrPtr(drvSHA("c"))
		}
		return v
	}
	// live: an old memory whose current version is old (kept) and whose
	// previous version is old (deleted).
	live, liveV1 := drvInsertMemory(t, d, s.ID, "/live", "v1", drvAt(1))
	liveV2 := version(s.ID, live.ID, drvAt(2), trove.OpModified)
	// gone: a deleted memory; its old versions all go, the deletion's too.
	gone, goneV1 := drvInsertMemory(t, d, s.ID, "/gone", "v1", drvAt(3))
	goneV2 := version(s.ID, gone.ID, drvAt(4), trove.OpDeleted)
	// fresh: versions at and after the cutoff stay; one just before goes.
	freshOld := version(s.ID, "mem_fresh", cutoff.Add(-time.Microsecond), trove.OpCreated)
	freshAt := version(s.ID, "mem_fresh", cutoff, trove.OpModified)
	freshNew := version(s.ID, "mem_fresh", drvAt(200), trove.OpModified)
	// another store's old, non-current version goes too.
	otherMem, otherV1 := drvInsertMemory(t, d, other.ID, "/o", "o1", drvAt(5))
	otherV2 := version(other.ID, otherMem.ID, drvAt(6), trove.OpModified)
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, v := range []*trove.MemoryVersion{liveV2, goneV2, freshOld, freshAt, freshNew, otherV2} {
			if err := tx.VersionInsert(ctx, v); err != nil {
				return err
			}
		}
		// The memories now point at their newest version; gone is deleted.
		for _, u := range []struct {
			m *trove.Memory
			v *trove.MemoryVersion
		}{{live, liveV2}, {otherMem, otherV2}} {
			m := *u.m
			m.VersionID, m.UpdatedAt = u.v.ID, u.v.CreatedAt
			if err := tx.MemoryUpdate(ctx, &m); err != nil {
				return err
			}
		}
		return tx.MemoryDelete(ctx, s.ID, gone.ID)
	})
	var n int
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) (err error) {
		n, err = tx.VersionDeleteExpired(ctx, cutoff)
		return err
	})
	deleted := []*trove.MemoryVersion{liveV1, goneV1, goneV2, freshOld, otherV1}
	kept := []*trove.MemoryVersion{liveV2, freshAt, freshNew, otherV2}
	if n != len(deleted) {
		t.Errorf("VersionDeleteExpired deleted %d, want %d", n, len(deleted))
	}
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, v := range deleted {
			_, err := tx.VersionGet(ctx, v.StoreID, v.ID, false)
			drvWantCode(t, fmt.Sprintf("VersionGet of expired %s of %s at %v", v.Operation, v.MemoryID, v.CreatedAt), err, trove.ENOTFOUND)
		}
		for _, v := range kept {
			if _, err := tx.VersionGet(ctx, v.StoreID, v.ID, false); err != nil {
				t.Errorf("VersionGet of kept %s of %s at %v: %v", v.Operation, v.MemoryID, v.CreatedAt, err)
			}
		}
		if _, err := tx.MemoryGet(ctx, s.ID, live.ID, true); err != nil {
			t.Errorf("live memory: %v", err)
		}
		return nil
	})
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) (err error) {
		n, err = tx.VersionDeleteExpired(ctx, cutoff)
		return err
	})
	if n != 0 {
		t.Errorf("second VersionDeleteExpired deleted %d, want 0", n)
	}
}

// ---- keys ----

func drvTestKeys(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	mk := func(ws string, at int) *trove.APIKey {
		return &trove.APIKey{ID: trove.NewID(trove.PrefixAPIKey, drvAt(at)), WorkspaceID: ws, Name: "key " + ws,
			Hint: fmt.Sprintf("…%04d", at), CreatedAt: drvAt(at)}
	}
	k1, k2, k3 := mk("wrkspc_a", 1), mk("wrkspc_b", 2), mk("wrkspc_a", 3)
	k4 := mk("wrkspc_a", 3) // same created_at as k3: ID order
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, k := range []*trove.APIKey{k4, k3, k1, k2} { // inserted out of order
			if err := tx.KeyInsert(ctx, k, drvHash("secret "+k.ID)); err != nil {
				return err
			}
		}
		return nil
	})
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.KeyGetByHash(ctx, drvHash("secret "+k1.ID))
		if err != nil {
			t.Fatalf("KeyGetByHash: %v", err)
		}
		if diff := cmp.Diff(k1, got); diff != "" {
			t.Errorf("KeyGetByHash (-want +got):\n%s", diff)
		}
		_, err = tx.KeyGetByHash(ctx, drvHash("wrong secret"))
		drvWantCode(t, "KeyGetByHash unknown", err, trove.ENOTFOUND)
		for _, c := range []struct {
			ws   string
			want []trove.APIKey
		}{
			{"wrkspc_a", []trove.APIKey{*k1, *k3, *k4}},
			{"", []trove.APIKey{*k1, *k2, *k3, *k4}},
			{"wrkspc_none", nil},
		} {
			got, err := tx.KeyList(ctx, c.ws)
			if err != nil {
				t.Fatalf("KeyList(%q): %v", c.ws, err)
			}
			if diff := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("KeyList(%q) (-want +got):\n%s", c.ws, diff)
			}
		}
		return nil
	})
	// The secret hash is unique.
	dup := mk("wrkspc_a", 4)
	if err := d.Write(ctx, func(tx storage.Tx) error { return tx.KeyInsert(ctx, dup, drvHash("secret "+k1.ID)) }); err == nil {
		t.Error("KeyInsert with a used secret hash succeeded")
	}
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.KeyRevoke(ctx, k1.ID, drvAt(20)) })
	err := d.Write(ctx, func(tx storage.Tx) error { return tx.KeyRevoke(ctx, "apikey_missing", drvAt(20)) })
	drvWantCode(t, "KeyRevoke unknown", err, trove.ENOTFOUND)
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.KeyGetByHash(ctx, drvHash("secret "+k1.ID))
		if err != nil {
			t.Fatalf("KeyGetByHash of a revoked key: %v", err)
		}
		want := *k1
		want.RevokedAt = drvTimePtr(drvAt(20))
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("revoked key (-want +got):\n%s", diff)
		}
		if got, err := tx.KeyGetByHash(ctx, drvHash("secret "+k3.ID)); err != nil || got.RevokedAt != nil {
			t.Errorf("other key after a revoke: %+v, %v; want not revoked", got, err)
		}
		return nil
	})
}

// ---- sessions ----

func drvTestSessions(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	attach := func(id, name string, access trove.Access) trove.SessionStore {
		return trove.SessionStore{StoreID: id, Access: access, Name: name, Description: "about " + name,
			Instructions: "use " + name, MountPath: "/mnt/memory/" + trove.Slug(name)}
	}
	// Attachment order is kept, whatever the IDs' order.
	sa, sb, sc := "memstore_b", "memstore_c", "memstore_a"
	mk := func(ws string, at int, stores ...trove.SessionStore) *trove.Session {
		return &trove.Session{ID: trove.NewID(trove.PrefixSession, drvAt(at)), WorkspaceID: ws, Stores: stores,
			CreatedBy: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_1"}, CreatedAt: drvAt(at)}
	}
	s1 := mk("wrkspc_a", 1, attach(sa, "User Prefs", trove.AccessReadWrite), attach(sb, "Team", trove.AccessReadOnly),
		attach(sc, "Z last", trove.AccessReadWrite))
	s2 := mk("wrkspc_a", 2)
	s3 := mk("wrkspc_b", 2, attach(sa, "User Prefs", trove.AccessReadOnly))
	s4 := mk("wrkspc_a", 1, attach(sa, "Prefs", trove.AccessReadOnly)) // ties with s1
	s4.CreatedBy = trove.Actor{Type: trove.ActorUser, UserID: "user_1"}
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, s := range []*trove.Session{s1, s2, s3, s4} {
			if err := tx.SessionInsert(ctx, s, drvHash("token "+s.ID)); err != nil {
				return err
			}
		}
		return nil
	})
	opts := cmpopts.EquateEmpty()
	ids := func(ss []trove.Session) []string {
		out := []string{}
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		for _, s := range []*trove.Session{s1, s2, s4} {
			got, err := tx.SessionGet(ctx, "wrkspc_a", s.ID)
			if err != nil {
				t.Fatalf("SessionGet: %v", err)
			}
			if diff := cmp.Diff(s, got, opts); diff != "" {
				t.Errorf("SessionGet (-want +got):\n%s", diff)
			}
			got, err = tx.SessionGetByTokenHash(ctx, drvHash("token "+s.ID))
			if err != nil {
				t.Fatalf("SessionGetByTokenHash: %v", err)
			}
			if diff := cmp.Diff(s, got, opts); diff != "" {
				t.Errorf("SessionGetByTokenHash (-want +got):\n%s", diff)
			}
		}
		_, err := tx.SessionGet(ctx, "wrkspc_b", s1.ID)
		drvWantCode(t, "SessionGet from another workspace", err, trove.ENOTFOUND)
		_, err = tx.SessionGet(ctx, "wrkspc_a", "sesn_missing")
		drvWantCode(t, "SessionGet unknown", err, trove.ENOTFOUND)
		_, err = tx.SessionGetByTokenHash(ctx, drvHash("wrong token"))
		drvWantCode(t, "SessionGetByTokenHash unknown", err, trove.ENOTFOUND)

		wsA := []trove.Session{*s1, *s2, *s4}
		drvDescending(wsA, func(s trove.Session) (time.Time, string) { return s.CreatedAt, s.ID })
		got, err := tx.SessionList(ctx, storage.SessionListParams{WorkspaceID: "wrkspc_a"})
		if err != nil {
			t.Fatalf("SessionList: %v", err)
		}
		if diff := cmp.Diff(wsA, got, opts); diff != "" {
			t.Errorf("SessionList (-want +got):\n%s", diff)
		}
		withA := slices.DeleteFunc(slices.Clone(wsA), func(s trove.Session) bool {
			return !slices.ContainsFunc(s.Stores, func(st trove.SessionStore) bool { return st.StoreID == sa })
		})
		for _, c := range []struct {
			name string
			p    storage.SessionListParams
			want []trove.Session
		}{
			{"by store", storage.SessionListParams{WorkspaceID: "wrkspc_a", StoreID: sa}, withA},
			{"by store in another workspace", storage.SessionListParams{WorkspaceID: "wrkspc_b", StoreID: sa}, []trove.Session{*s3}},
			{"by unattached store", storage.SessionListParams{WorkspaceID: "wrkspc_a", StoreID: "memstore_none"}, nil},
			{"limit", storage.SessionListParams{WorkspaceID: "wrkspc_a", Limit: 1}, wsA[:1]},
			{"other workspace", storage.SessionListParams{WorkspaceID: "wrkspc_c"}, nil},
		} {
			got, err := tx.SessionList(ctx, c.p)
			if err != nil {
				t.Fatalf("SessionList %s: %v", c.name, err)
			}
			if diff := cmp.Diff(c.want, got, opts); diff != "" {
				t.Errorf("SessionList %s (-want +got):\n%s", c.name, diff)
			}
		}
		for _, storeID := range []string{"", sa} {
			paged := drvPages(t, 1, func(before *storage.Position, limit int) []trove.Session {
				got, err := tx.SessionList(ctx, storage.SessionListParams{WorkspaceID: "wrkspc_a", StoreID: storeID, Before: before, Limit: limit})
				if err != nil {
					t.Fatalf("SessionList: %v", err)
				}
				return got
			}, func(s trove.Session) storage.Position { return storage.Position{CreatedAt: s.CreatedAt, ID: s.ID} })
			want := wsA
			if storeID != "" {
				want = withA
			}
			if diff := cmp.Diff(ids(want), ids(paged)); diff != "" {
				t.Errorf("SessionList paged, store %q (-want +got):\n%s", storeID, diff)
			}
		}
		return nil
	})

	// SessionEnd sets ended_at once; ENOTFOUND for an unknown session.
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.SessionEnd(ctx, s1.ID, drvAt(30)) })
	drvWrite(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.SessionEnd(ctx, s1.ID, drvAt(40)) })
	err := d.Write(ctx, func(tx storage.Tx) error { return tx.SessionEnd(ctx, "sesn_missing", drvAt(30)) })
	drvWantCode(t, "SessionEnd unknown", err, trove.ENOTFOUND)
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.SessionGet(ctx, "wrkspc_a", s1.ID)
		if err != nil {
			t.Fatalf("SessionGet: %v", err)
		}
		if got.EndedAt == nil || !got.EndedAt.Equal(drvAt(30)) {
			t.Errorf("EndedAt = %v, want %v (the first SessionEnd)", got.EndedAt, drvAt(30))
		}
		if got, err := tx.SessionGet(ctx, "wrkspc_a", s2.ID); err != nil || got.EndedAt != nil {
			t.Errorf("other session: %+v, %v; want not ended", got, err)
		}
		return nil
	})
}

// ---- Read and Write semantics ----

func drvTestWriteFnError(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	m, _ := drvInsertMemory(t, d, s.ID, "/keep", "original", drvAt(1))

	sentinel := errors.New("fn failed")
	fresh := drvNewStore("wrkspc_a", drvAt(2))
	err := d.Write(ctx, func(tx storage.Tx) error {
		if err := tx.StoreInsert(ctx, fresh); err != nil {
			return err
		}
		upd := *m
		upd.Content, upd.SizeBytes, upd.SHA256 = drvStrPtr("changed"), 7, drvSHA("changed")
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
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.StoreGet(ctx, "wrkspc_a", fresh.ID)
		drvWantCode(t, "StoreGet of a rolled-back insert", err, trove.ENOTFOUND)
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

func drvTestWriteIsolation(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	const n = 16
	stores := make([]*trove.Store, n)
	errs := make([]error, n)
	mine := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		stores[i] = drvNewStore("wrkspc_a", drvAt(i))
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
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		for i := range n {
			_, err := tx.StoreGet(ctx, "wrkspc_a", stores[i].ID)
			if i%2 == 1 {
				if !errors.Is(errs[i], mine[i]) {
					t.Errorf("failing writer %d got %v, want its own error", i, errs[i])
				}
				drvWantCode(t, fmt.Sprintf("store of failing writer %d", i), err, trove.ENOTFOUND)
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

func drvTestWriteCancelled(t *testing.T, d storage.Driver) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := drvNewStore("wrkspc_a", drvAt(0))
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
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.StoreGet(ctx, "wrkspc_a", s.ID)
		drvWantCode(t, "StoreGet after a cancelled Write", err, trove.ENOTFOUND)
		return nil
	})
	// The driver still works.
	drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(1)))
}

func drvTestConcurrentWrites(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
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
				m, v := drvNewMemory(s.ID, fmt.Sprintf("/w%02d/m%02d", w, i), "x", drvAt(w*each+i))
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
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
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

func drvTestReadSnapshot(t *testing.T, d storage.Driver) {
	s := drvInsertStore(t, d, drvNewStore("wrkspc_a", drvAt(0)))
	drvInsertMemory(t, d, s.ID, "/first", "1", drvAt(1))
	runs := 0
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
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
			m, v := drvNewMemory(s.ID, path, "2", drvAt(1+runs))
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
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		if n, err := tx.MemoryCount(ctx, s.ID); err != nil || n != 1+runs {
			t.Errorf("MemoryCount in a new Read = %d, %v; want %d (the first memory and one per run)", n, err, 1+runs)
		}
		return nil
	})
}

func drvTestReadOnly(t *testing.T, d storage.Driver) {
	ctx := context.Background()
	s := drvNewStore("wrkspc_a", drvAt(0))
	err := d.Read(ctx, func(tx storage.Tx) error { return tx.StoreInsert(ctx, s) })
	if err == nil {
		t.Error("StoreInsert inside Read succeeded")
	}
	drvRead(t, d, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.StoreGet(ctx, "wrkspc_a", s.ID)
		drvWantCode(t, "StoreGet of a store inserted in a Read", err, trove.ENOTFOUND)
		return nil
	})
}
