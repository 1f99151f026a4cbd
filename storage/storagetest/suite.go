// Package storagetest is the driver-level conformance suite of the storage
// port: RunDriver checks the storage.Driver and storage.Tx contracts of
// storage/storage.go method by method, one file per noun (stores, memories,
// versions, keys, sessions) plus the Read/Write semantics (transactions.go).
// Every driver runs it from its own tests. Only tests import it.
package storagetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// RunDriver runs the driver-level conformance suite: every storage.Tx
// method's contract in storage/storage.go and the Read/Write semantics of
// storage.Driver (rollback of one Write's error only, cancelled contexts,
// concurrent Writes, snapshot reads).
//
// open must return a new, empty, fully migrated driver for each call and
// arrange for it to be closed with t.Cleanup; it must be safe to call
// concurrently. Every subtest opens its own driver, so the subtests run in
// parallel.
func RunDriver(t *testing.T, open func(t *testing.T) storage.Driver) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, d storage.Driver)
	}{
		{"StoreRoundTrip", testStoreRoundTrip},
		{"StoreList", testStoreList},
		{"StoreDeleteCascades", testStoreDelete},
		{"MemoryCRUD", testMemoryCRUD},
		{"MemoryPointRead", testMemoryPointRead},
		{"MemoryFindOverlap", testFindOverlap},
		{"MemoryList", testMemoryList},
		{"VersionRoundTrip", testVersionRoundTrip},
		{"VersionList", testVersionList},
		{"VersionRedact", testVersionRedact},
		{"VersionDeleteExpired", testDeleteExpired},
		{"VersionSeq", testVersionSeq},
		{"VersionSeqConcurrent", testVersionSeqConcurrent},
		{"VersionChain", testVersionChain},
		{"VersionAsOf", testVersionAsOf},
		{"VersionAsOfLongHistory", testVersionAsOfLongHistory},
		{"MemoryInsertBatch", testMemoryInsertBatch},
		{"StoreStats", testStoreStats},
		{"Keys", testKeys},
		{"KeysLock", testKeysLock},
		{"Sessions", testSessions},
		{"Events", testEvents},
		{"ManagedSessions", testManagedSessions},
		{"DreamRoundTrip", testDreamRoundTrip},
		{"DreamList", testDreamList},
		{"DreamJobs", testDreamJobs},
		{"ConsoleSessions", testConsoleSessions},
		{"Jobs", testJobs},
		{"JobDefer", testJobDefer},
		{"Webhooks", testWebhooks},
		{"Deliveries", testDeliveries},
		{"DeliveryPrune", testDeliveryPrune},
		{"WriteReturnsFnErrorAndRollsBack", testWriteFnError},
		{"WriteErrorIsolation", testWriteIsolation},
		{"WriteCancelledContext", testWriteCancelled},
		{"ConcurrentWritesAllLand", testConcurrentWrites},
		{"ReadSnapshot", testReadSnapshot},
		{"ReadIsReadOnly", testReadOnly},
		{"MemorySearchMatching", testMemorySearchMatching},
		{"MemorySearchRanking", testMemorySearchRanking},
		{"MemorySearchScope", testMemorySearchScope},
		{"MemorySearchInStep", testMemorySearchInStep},
		{"MemorySearchReadYourWrites", testMemorySearchReadYourWrites},
		{"MemorySearchInWrite", testMemorySearchInWrite},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// base is the suite's fixed clock origin, with microsecond precision (the
// precision every driver keeps).
var base = time.Date(2026, 3, 15, 10, 0, 0, 123456000, time.UTC)

// secs returns base plus n seconds.
func secs(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }

func timePtr(t time.Time) *time.Time { return &t }

func strPtr(s string) *string { return &s }

func intPtr(n int) *int { return &n }

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// write runs fn in a Write and fails the test on error.
func write(t *testing.T, d storage.Driver, fn func(ctx context.Context, tx storage.Tx) error) {
	t.Helper()
	ctx := context.Background()
	if err := d.Write(ctx, func(tx storage.Tx) error { return fn(ctx, tx) }); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// read runs fn in a Read and fails the test on error.
func read(t *testing.T, d storage.Driver, fn func(ctx context.Context, tx storage.Tx) error) {
	t.Helper()
	ctx := context.Background()
	if err := d.Read(ctx, func(tx storage.Tx) error { return fn(ctx, tx) }); err != nil {
		t.Fatalf("Read: %v", err)
	}
}

// wantCode fails unless err carries code.
func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := trove.ErrorCode(err); got != code {
		t.Errorf("%s: error code %q (err %v), want %q", what, got, err, code)
	}
}

// newStore returns a store of workspace ws created at when.
func newStore(ws string, when time.Time) *trove.Store {
	return &trove.Store{
		ID: trove.NewID(trove.PrefixStore, when), WorkspaceID: ws, Name: "store", Metadata: map[string]string{},
		CreatedAt: when, UpdatedAt: when,
	}
}

// newMemory returns a memory and its created version.
func newMemory(storeID, path, content string, when time.Time) (*trove.Memory, *trove.MemoryVersion) {
	m := &trove.Memory{
		ID: trove.NewID(trove.PrefixMemory, when), StoreID: storeID, Path: path, Content: strPtr(content),
		SizeBytes: len(content), SHA256: sha(content), VersionID: trove.NewID(trove.PrefixVersion, when),
		CreatedAt: when, UpdatedAt: when,
	}
	v := &trove.MemoryVersion{
		ID: m.VersionID, StoreID: storeID, MemoryID: m.ID, Operation: trove.OpCreated,
		Path: strPtr(path), Content: strPtr(content), SizeBytes: intPtr(len(content)),
		SHA256: strPtr(sha(content)), CreatedBy: &trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_test"},
		CreatedAt: when,
	}
	return m, v
}

// insertStore inserts a store in its own Write.
func insertStore(t *testing.T, d storage.Driver, s *trove.Store) *trove.Store {
	t.Helper()
	write(t, d, func(ctx context.Context, tx storage.Tx) error { return tx.StoreInsert(ctx, s) })
	return s
}

// insertMemory inserts a memory with its created version in one Write.
func insertMemory(t *testing.T, d storage.Driver, storeID, path, content string, when time.Time) (*trove.Memory, *trove.MemoryVersion) {
	t.Helper()
	m, v := newMemory(storeID, path, content, when)
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.MemoryInsert(ctx, m); err != nil {
			return err
		}
		return tx.VersionInsert(ctx, v)
	})
	return m, v
}

// pages lists every item through keyset pages of size limit, with before
// set from the previous page's last item, and fails if it does not end.
func pages[T any](t *testing.T, limit int, list func(before *storage.Position, limit int) []T, pos func(T) storage.Position) []T {
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

// descending sorts by (created_at, id) descending, the order of every
// list but memories and keys.
func descending[T any](xs []T, key func(T) (time.Time, string)) {
	sort.SliceStable(xs, func(i, j int) bool {
		ti, ii := key(xs[i])
		tj, ij := key(xs[j])
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return ii > ij
	})
}
