package storagetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// Tests of the search index's freshness: what a driver that indexes outside
// the write transaction (storage.SearchReader) must still guarantee, and
// any driver does.

// findIDs searches query over workspace "wrkspc_a" through storage.ReadSearch
// and returns the hits' memory IDs in order.
func findIDs(ctx context.Context, d storage.Driver, query string) ([]string, error) {
	q, err := trove.ParseSearchQuery(query)
	if err != nil {
		return nil, err
	}
	hits, err := trySearch(ctx, d, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: q, Limit: 10})
	ids := []string{}
	for _, h := range hits {
		ids = append(ids, h.Memory.ID)
	}
	return ids, err
}

// testMemorySearchReadYourWrites: under concurrent writers, a search begun
// after a Write returned finds what it wrote — the writer's own search and
// another goroutine's, told of the write only once it returned — and never
// finds text that a returned Write replaced, deleted or redacted.
func testMemorySearchReadYourWrites(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	const writers, each = 8, 12
	ctx := context.Background()
	type written struct{ word, id string }
	acked := make(chan written, writers*each)
	var searchers sync.WaitGroup
	for range 2 { // other goroutines search what the writers acknowledged
		searchers.Add(1)
		go func() {
			defer searchers.Done()
			for w := range acked {
				got, err := findIDs(ctx, d, w.word)
				if err != nil {
					t.Errorf("search %q: %v", w.word, err)
					continue
				}
				if diff := cmp.Diff([]string{w.id}, got); diff != "" {
					t.Errorf("search %q begun after its Write returned (-want +got):\n%s", w.word, diff)
				}
			}
		}()
	}
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := func(word string, ids ...string) bool {
				if ids == nil {
					ids = []string{}
				}
				got, err := findIDs(ctx, d, word)
				if err != nil {
					t.Errorf("search %q: %v", word, err)
					return false
				}
				if diff := cmp.Diff(ids, got); diff != "" {
					t.Errorf("search %q (-want +got):\n%s", word, diff)
					return false
				}
				return true
			}
			for i := range each {
				n := g*each + i
				when := secs(10 + n)
				kept, created, updated := fmt.Sprintf("kept%dq%d", g, i), fmt.Sprintf("made%dq%d", g, i), fmt.Sprintf("edit%dq%d", g, i)
				// One memory that stays, searched by the other goroutines.
				k, kv := newMemory(s.ID, fmt.Sprintf("/k/%d/%d.md", g, i), "keep "+kept, when)
				// One that is created, updated (its first version then
				// redacted) and, every other time, deleted.
				m, v := newMemory(s.ID, fmt.Sprintf("/m/%d/%d.md", g, i), "note "+created, when)
				if err := d.Write(ctx, func(tx storage.Tx) error {
					for _, x := range []struct {
						m *trove.Memory
						v *trove.MemoryVersion
					}{{k, kv}, {m, v}} {
						if err := tx.MemoryInsert(ctx, x.m); err != nil {
							return err
						}
						if err := tx.VersionInsert(ctx, x.v); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					t.Errorf("insert: %v", err)
					return
				}
				acked <- written{kept, k.ID}
				if !want(created, m.ID) {
					return
				}
				m2 := *m
				m2.Content, m2.SizeBytes, m2.SHA256 = strPtr("note "+updated), len("note "+updated), sha("note "+updated)
				m2.VersionID, m2.UpdatedAt = trove.NewID(trove.PrefixVersion, when), when
				v2 := &trove.MemoryVersion{ID: m2.VersionID, StoreID: s.ID, MemoryID: m.ID, Operation: trove.OpModified,
					Path: strPtr(m.Path), Content: m2.Content, SizeBytes: intPtr(m2.SizeBytes), SHA256: strPtr(m2.SHA256),
					CreatedBy: &trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_test"}, CreatedAt: when}
				if err := d.Write(ctx, func(tx storage.Tx) error {
					if err := tx.MemoryUpdate(ctx, &m2); err != nil {
						return err
					}
					if err := tx.VersionInsert(ctx, v2); err != nil {
						return err
					}
					return tx.VersionRedact(ctx, s.ID, v.ID, when, trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_test"})
				}); err != nil {
					t.Errorf("update: %v", err)
					return
				}
				if !want(updated, m.ID) || !want(created) {
					return
				}
				if i%2 == 1 {
					if err := d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryDelete(ctx, s.ID, m.ID) }); err != nil {
						t.Errorf("delete: %v", err)
						return
					}
					if !want(updated) {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(acked)
	searchers.Wait()
}

// testMemorySearchInWrite: MemorySearch in a Write sees the index in step
// with the Write's own changes (and the group's before it).
func testMemorySearchInWrite(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	old, _ := insertMemory(t, d, s.ID, "/old.md", "oscar", secs(1))
	ctx := context.Background()
	m, v := newMemory(s.ID, "/new.md", "papa", secs(2))
	var got [2][]string
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		if err := tx.MemoryInsert(ctx, m); err != nil {
			return err
		}
		if err := tx.VersionInsert(ctx, v); err != nil {
			return err
		}
		if err := tx.MemoryDelete(ctx, s.ID, old.ID); err != nil {
			return err
		}
		for i, q := range []string{"papa", "oscar"} {
			hits, err := tx.MemorySearch(ctx, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: mustQuery(t, q), Limit: 10})
			if err != nil {
				return err
			}
			got[i] = hitPaths(hits)
		}
		return nil
	})
	if diff := cmp.Diff([2][]string{{"/new.md"}, {}}, got); diff != "" {
		t.Errorf("searches in the Write (-want +got):\n%s", diff)
	}
	if ids, err := findIDs(ctx, d, "papa"); err != nil || len(ids) != 1 {
		t.Errorf("after the Write: %v, %v", ids, err)
	}
}

// RunSearchReopen checks that a driver's search index survives a crash:
// memories written, changed and deleted, then the driver closed as it is
// (a driver that indexes outside the write transaction may still have
// writes to index: reopen must open it so that it does not catch up on its
// own), then opened again; every search must find exactly the live
// memories. reopen(t, nil) opens a new empty database; reopen(t, d) closes
// d abruptly (no catch-up) and opens the same database again.
func RunSearchReopen(t *testing.T, reopen func(t *testing.T, d storage.Driver) storage.Driver) {
	t.Helper()
	d := reopen(t, nil)
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	var ids []string
	for i := range 30 {
		m, _ := insertMemory(t, d, s.ID, fmt.Sprintf("/r/%d.md", i), fmt.Sprintf("romeo word%d", i), secs(1+i))
		ids = append(ids, m.ID)
	}
	// Change one, delete another, after the inserts.
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		m, err := tx.MemoryGet(ctx, s.ID, ids[0], true)
		if err != nil {
			return err
		}
		m.Content, m.SizeBytes, m.SHA256 = strPtr("sierra"), 6, sha("sierra")
		if err := tx.MemoryUpdate(ctx, m); err != nil {
			return err
		}
		return tx.MemoryDelete(ctx, s.ID, ids[1])
	})
	d = reopen(t, d)
	ctx := context.Background()
	for _, c := range []struct {
		query string
		want  int
	}{{"romeo", 28}, {"sierra", 1}, {`"word0"`, 0}, {`"word1"`, 0}, {`"word29"`, 1}} {
		q := mustQuery(t, c.query)
		hits, err := trySearch(ctx, d, storage.MemorySearchParams{WorkspaceID: "wrkspc_a", Query: q, Limit: 100})
		if err != nil {
			t.Fatalf("search %q after reopen: %v", c.query, err)
		}
		if len(hits) != c.want {
			t.Errorf("search %q after reopen: %d hits %v, want %d", c.query, len(hits), hitPaths(hits), c.want)
		}
	}
}
