package vfs

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storetree"
)

// CanFollow reports whether the services offer the change feed
// (trove.ChangeService), so that Follow can keep the listings current.
func (f *FS) CanFollow() bool {
	_, ok := f.svc.(trove.ChangeService)
	return ok
}

// Live reports whether the change feed of every store is connected now:
// the listings then follow every change within the feed's latency, and a
// caller caching what the FS returns (the kernel) may keep it until
// Follow's onChange says otherwise.
func (f *FS) Live() bool {
	if len(f.stores) == 0 {
		return false
	}
	for _, s := range f.stores {
		if !s.live.Load() {
			return false
		}
	}
	return true
}

// Follow follows every store's change feed until ctx ends, and returns
// ctx's error (ErrNotSupported at once when the services have no feed; a
// store's feed that ends for good, e.g. the store was deleted, is logged
// and left). While a store's feed is connected its listing is not reloaded
// by age (Config.Refresh): each change is applied as it arrives (one
// GetMemory of the changed memory, unless the listing already shows the
// change, as for this mount's own writes), and onChange, when not nil, is
// called with the name of each entry whose content, attributes or
// existence changed: the file's old and new names, and the names of the
// directories above them when the file appeared, moved or went (they may
// have appeared or gone with it). onChange("") means anything may have changed: it is
// called when a feed connects (again), since changes made while it was
// down were seen by the reloads only. onChange runs on Follow's
// goroutines, without the FS's locks; it may call the FS.
func (f *FS) Follow(ctx context.Context, onChange func(name string)) error {
	cs, ok := f.svc.(trove.ChangeService)
	if !ok {
		return ErrNotSupported
	}
	if onChange == nil {
		onChange = func(string) {}
	}
	ctx = f.ctx(ctx)
	var wg sync.WaitGroup
	for _, s := range f.stores {
		wg.Go(func() { s.follow(ctx, cs, onChange) })
	}
	wg.Wait()
	return ctx.Err()
}

// name is the FS name of rel in this store.
func (s *store) name(rel string) string {
	if s.f.flat {
		return rel
	}
	if rel == "" {
		return s.slug
	}
	return s.slug + "/" + rel
}

func (s *store) follow(ctx context.Context, cs trove.ChangeService, onChange func(string)) {
	defer s.live.Store(false)
	head, err := storetree.FeedHead(ctx, cs, s.id)
	if err != nil {
		if ctx.Err() == nil {
			s.f.log.Warn("vfs: no change feed; listings refresh by age", "store", s.id, "err", err)
		}
		return
	}
	err = storetree.Follow(ctx, cs, s.id, head, func(c trove.Change) error {
		for _, n := range s.applyChange(ctx, c) {
			onChange(n)
		}
		return nil
	}, func(up bool) {
		if up {
			// Whatever the listing learnt while the feed was down
			// came from reloads nobody was told about.
			s.mu.Lock()
			s.invalidate()
			s.mu.Unlock()
			onChange("")
			s.live.Store(true)
			return
		}
		s.live.Store(false)
	})
	if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		s.f.log.Warn("vfs: the change feed ended; listings refresh by age", "store", s.id, "err", err)
	}
}

// learn records that reading memory id's content (listed at rel) brought
// its listing entry up to date, or dropped it, before the change feed told
// of the change: when the feed's event comes, the listing shows it already,
// yet the callers of Follow, which may cache what they saw before the read
// (the kernel: the old size and time), were never told. It is called
// with the listing's lock held (storetree.Tree.GetNoting), so that
// applyChange, which reads the listing before what was learnt, never sees
// the new entry without it.
func (s *store) learn(id, rel string) { s.learnt.Store(id, rel) }

// applyChange brings the listing up to date with c and returns the FS
// names whose entries changed (nil when the listing showed c already, as
// after this mount's own writes, unless a read learnt it first: see learn).
func (s *store) applyChange(ctx context.Context, c trove.Change) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded {
		return nil // the next operation lists the store afresh
	}
	if c.Redacted {
		// A redacted version is no memory's current one: nothing to show.
		return nil
	}
	// The listing first, then what reads learnt: a read that brought the
	// entry up to date learnt it before the listing showed it (see
	// store.learn), so an entry found up to date here comes with what was
	// learnt.
	old, known := s.t.CachedByID(c.MemoryID)
	// Names a read learnt without telling: the one the memory was listed
	// at before, with the directories above it.
	var out []string
	v, learnt := s.learnt.LoadAndDelete(c.MemoryID)
	if learnt {
		out = s.withParents(out, v.(string))
	}
	switch {
	case c.Operation == trove.OpDeleted && !known:
		return out
	case c.Operation != trove.OpDeleted && known && old.Path == c.Path && old.SHA256 == c.SHA256:
		// This mount's own write, or a change already listed.
		if learnt && old.Path != memPath(v.(string)) {
			out = s.withParents(out, strings.TrimPrefix(old.Path, "/"))
		}
		return out
	}
	// The change may be older than what the store holds now: read the
	// memory's current state rather than trusting c.
	m, err := s.t.Get(ctx, c.MemoryID, trove.ViewBasic)
	if err != nil && trove.ErrorCode(err) != trove.ENOTFOUND {
		// Unknown state: reload at the next operation.
		s.invalidate()
		return []string{""}
	}
	if known {
		rel := strings.TrimPrefix(old.Path, "/")
		out = append(out, s.name(rel))
		if m == nil || m.Path != old.Path {
			for d := parentOf(rel); d != ""; d = parentOf(d) {
				out = append(out, s.name(d)) // a directory that may be gone
			}
		}
	}
	if m != nil && (!known || m.Path != old.Path || m.SHA256 != old.SHA256) {
		out = s.withParents(out, strings.TrimPrefix(m.Path, "/"))
	}
	return out
}

// withParents appends the FS names of rel and of the directories above it
// to out.
func (s *store) withParents(out []string, rel string) []string {
	out = append(out, s.name(rel))
	for d := parentOf(rel); d != ""; d = parentOf(d) {
		out = append(out, s.name(d))
	}
	return out
}
