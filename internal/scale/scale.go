// Package scale builds a workspace at a fraction of the hosted limits
// (issue 24) through a driver's bulk paths, for the scale measurements in
// its test files (docs/perf/scale.md). Only tests import it; deps_test.go
// checks that the trove binary does not link it.
//
// Scale 1.0 (100 %) is the hosted limits: 100 stores × 10,000 memories
// (1 M memories, sizes drawn from a log-normal distribution up to 100 kB)
// plus one store with a 250,000-version history. Scale 0.01 (1 %) is one
// store of 10,000 memories and a 2,500-version history; in between the
// store count and the history grow linearly, while each store keeps
// 10,000 memories, so a per-store call sees the same store at every scale
// and a bigger database around it.
package scale

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage"
)

const (
	// MemoriesPerStore is every bulk store's size (the hosted limit).
	MemoriesPerStore = 10000
	// FullStores and FullVersions are the 100 % workspace.
	FullStores   = 100
	FullVersions = 250000
	// HistoryMemories is how many memories the history store's versions
	// are spread over (scaled down with BuildSized's perStore).
	HistoryMemories = 1000
	// MaxSize bounds a memory's content (the hosted content limit).
	MaxSize = 102400
	// batch is how many memories or versions one bulk transaction writes.
	batch = 2000
)

// Workspace is what Build made.
type Workspace struct {
	Scale     float64
	Stores    []string // the bulk stores, each of MemoriesPerStore memories
	History   string   // the store with the long history
	HistoryN  int      // versions written to it (creates included)
	Memories  int      // memories written to the bulk stores
	Bytes     int64    // their content bytes
	Paths     []string // the first bulk store's memory paths, in write order
	MemoryIDs []string // and their IDs
	HistIDs   []string // the history store's memory IDs
	Took      time.Duration
}

// Sizes draws memory sizes: log-normal with a median of 1 KiB (σ = 1,
// mean ≈ 1.7 kB: most notes short, a long tail of documents), clipped to
// [16, MaxSize] bytes.
type Sizes struct{ r *rand.Rand }

// NewSizes returns the size distribution from a fixed seed.
func NewSizes(seed uint64) *Sizes { return &Sizes{r: rand.New(rand.NewPCG(seed, 7))} }

// Next returns the next size.
func (s *Sizes) Next() int {
	n := int(math.Exp(math.Log(1024) + s.r.NormFloat64()))
	return min(max(n, 16), MaxSize)
}

// text returns n bytes of ASCII words, different for each (i, n).
func text(i, n int) string {
	var b strings.Builder
	b.Grow(n)
	fmt.Fprintf(&b, "memory %d\n", i)
	words := []string{"alpha ", "bravo ", "charlie ", "delta ", "echo ", "foxtrot ", "golf ", "hotel ", "india ", "juliet "}
	for k := i; b.Len() < n; k = k*31 + 7 {
		b.WriteString(words[(k&0x7fffffff)%len(words)])
	}
	return b.String()[:n]
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// Path is the path of memory i of a bulk store: 100 top directories of 10
// subdirectories of 10 memories.
func Path(i int) string { return fmt.Sprintf("/d%02d/s%d/m%05d.md", i%100, (i/100)%10, i) }

// Build writes the workspace at scale f (0 < f <= 1) for the principal in
// ctx: its stores through svc (the store limit applies), their memories
// and the history through d's bulk paths (storage.Tx.MemoryInsertBatch,
// MemoryUpdate and VersionInsert, batch rows per transaction), so the
// counters, the search index and the hash chain are those of ordinary
// writes. progress, when not nil, is told after each transaction.
func Build(ctx context.Context, d storage.Driver, svc *core.Service, f float64, progress func(string)) (*Workspace, error) {
	return BuildSized(ctx, d, svc, f, MemoriesPerStore, progress)
}

// BuildSized is Build with perStore memories in each bulk store instead of
// MemoriesPerStore (a quick check of the harness itself).
func BuildSized(ctx context.Context, d storage.Driver, svc *core.Service, f float64, perStore int, progress func(string)) (*Workspace, error) {
	start := time.Now()
	pr := trove.PrincipalFrom(ctx)
	if pr == nil {
		return nil, fmt.Errorf("scale: no principal in ctx")
	}
	w := &Workspace{Scale: f}
	nStores := max(1, int(math.Round(FullStores*f)))
	histMems := max(20, HistoryMemories*perStore/MemoriesPerStore)
	w.HistoryN = max(2*histMems, int(math.Round(FullVersions*f*float64(perStore)/MemoriesPerStore)))
	sizes := NewSizes(1)
	actor := pr.Actor
	now := time.Now().UTC().Truncate(time.Microsecond)
	for s := range nStores {
		st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: fmt.Sprintf("bulk-%03d", s)})
		if err != nil {
			return nil, err
		}
		w.Stores = append(w.Stores, st.ID)
		for lo := 0; lo < perStore; lo += batch {
			var ms []*trove.Memory
			var vs []*trove.MemoryVersion
			for i := lo; i < min(lo+batch, perStore); i++ {
				c := text(s*perStore+i, sizes.Next())
				m := &trove.Memory{ID: trove.NewID(trove.PrefixMemory, now), StoreID: st.ID, Path: Path(i), Content: &c,
					SizeBytes: len(c), SHA256: sha(c), VersionID: trove.NewID(trove.PrefixVersion, now), CreatedAt: now, UpdatedAt: now}
				v := &trove.MemoryVersion{ID: m.VersionID, StoreID: st.ID, MemoryID: m.ID, Operation: trove.OpCreated, Path: &m.Path,
					Content: &c, SizeBytes: &m.SizeBytes, SHA256: &m.SHA256, CreatedBy: &actor, CreatedAt: now}
				ms, vs = append(ms, m), append(vs, v)
				w.Memories++
				w.Bytes += int64(len(c))
				if s == 0 {
					w.Paths, w.MemoryIDs = append(w.Paths, m.Path), append(w.MemoryIDs, m.ID)
				}
			}
			if err := d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryInsertBatch(ctx, ms, vs) }); err != nil {
				return nil, fmt.Errorf("scale: store %d, memories from %d: %w", s, lo, err)
			}
			if progress != nil {
				progress(fmt.Sprintf("store %d/%d: %d memories", s+1, nStores, min(lo+batch, perStore)))
			}
		}
	}
	if err := w.buildHistory(ctx, d, svc, histMems, actor, now); err != nil {
		return nil, err
	}
	w.Took = time.Since(start)
	return w, nil
}

// buildHistory writes the history store: histMems memories of
// about 1 KiB, then updates round-robin until the store holds HistoryN
// (at least twice histMems)
// versions, each version a second after the previous one (so moments in
// time are distinct).
func (w *Workspace) buildHistory(ctx context.Context, d storage.Driver, svc *core.Service, histMems int, actor trove.Actor, now time.Time) error {
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "history"})
	if err != nil {
		return err
	}
	w.History = st.ID
	t := now.Add(-time.Duration(w.HistoryN) * time.Second)
	ms := make([]*trove.Memory, histMems)
	var vs []*trove.MemoryVersion
	for i := range ms {
		c := text(-i-1, 1024)
		m := &trove.Memory{ID: trove.NewID(trove.PrefixMemory, t), StoreID: st.ID, Path: fmt.Sprintf("/h%02d/n%04d.md", i%20, i), Content: &c,
			SizeBytes: len(c), SHA256: sha(c), VersionID: trove.NewID(trove.PrefixVersion, t), CreatedAt: t, UpdatedAt: t}
		ms[i] = m
		vs = append(vs, &trove.MemoryVersion{ID: m.VersionID, StoreID: st.ID, MemoryID: m.ID, Operation: trove.OpCreated, Path: &m.Path,
			Content: &c, SizeBytes: &m.SizeBytes, SHA256: &m.SHA256, CreatedBy: &actor, CreatedAt: t})
		w.HistIDs = append(w.HistIDs, m.ID)
	}
	if err := d.Write(ctx, func(tx storage.Tx) error { return tx.MemoryInsertBatch(ctx, ms, vs) }); err != nil {
		return err
	}
	for lo := histMems; lo < w.HistoryN; lo += batch {
		err := d.Write(ctx, func(tx storage.Tx) error {
			for k := lo; k < min(lo+batch, w.HistoryN); k++ {
				at := t.Add(time.Duration(k) * time.Second)
				m := *ms[k%histMems]
				c := text(k, 1024)
				m.Content, m.SizeBytes, m.SHA256 = &c, len(c), sha(c)
				m.VersionID, m.UpdatedAt = trove.NewID(trove.PrefixVersion, at), at
				if err := tx.MemoryUpdate(ctx, &m); err != nil {
					return err
				}
				if err := tx.VersionInsert(ctx, &trove.MemoryVersion{ID: m.VersionID, StoreID: st.ID, MemoryID: m.ID, Operation: trove.OpModified,
					Path: &m.Path, Content: &c, SizeBytes: &m.SizeBytes, SHA256: &m.SHA256, CreatedBy: &actor, CreatedAt: at}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("scale: history from %d: %w", lo, err)
		}
	}
	return nil
}
