// Package storetree is the one place that sees a memory store as a file
// tree. Every adapter that shows a store as files (the memory tool's store
// backend, the FUSE tree, the sync engine's remote side, MCP search) reaches
// the store through a Tree, which talks to it only through trove.Services,
// so it works unchanged over a local core.Service or a remote
// httpapi.Client.
//
// # Paths
//
// A Tree speaks memory paths: "/a/b.md" is a file, a directory is written
// like a memory path ("/a"), and "/" is the root. MemPath and Rel convert
// from and to the relative names ("a/b.md", "" for the root) file-system
// adapters use; Parent, Base, Join, Prefix, IsBelow and Ancestors are the
// path arithmetic, alike for both forms.
//
// # The index
//
// A Tree keeps an index of path ⇄ memory (the basic view: ID, hash, size,
// times; never content) kept coherent by what the store returns: every write
// made through the Tree updates it with the memory the write returned, every
// listing and read made through it records what it saw, and a read that
// finds a memory elsewhere than the index said moves the entry. The index is
// a hint for everything but what the Tree wrote itself: other writers change
// the store behind it. Lookup checks the hint with one read by ID, and on a
// miss lists the parent directory once. Reload replaces the index with a
// complete listing of the store, for callers (the FUSE tree) that work from
// a snapshot refreshed on their own schedule; Complete then reports true
// until the next Reset.
//
// # Directories
//
// The store holds no directories: a directory exists while a memory lies
// below it (an implied directory). A Tree also remembers directories its
// caller made or emptied (mkdir, the parent of a deleted or moved-away
// memory) until the caller forgets them: remembered-empty directories live
// only in this Tree's memory, hold no data and are lost with the process.
//
// RenameDir and DeleteDir change every memory below a directory. When the
// services implement trove.DirectoryService they run as one transaction
// (all or nothing, with one version per memory); when they do not, or the
// server answers that it lacks the endpoints (errors.ErrUnsupported), they
// run one memory at a time: a concurrent reader may see the change half
// done, a failed rename moves back the memories it had moved (best effort),
// and a failed delete leaves the memories not reached yet.
//
// # Local names
//
// LocalProblem says when a store path cannot be a local file path (a segment
// over MaxNameBytes bytes); ConflictName names conflict copies that always
// fit, and IsConflictCopyOf recognises them.
//
// A Tree is safe for concurrent use. Its methods return the store's errors
// (*trove.Error) unchanged, except where documented.
package storetree

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/trovehq/trove"
)

// Tree is one store seen as a file tree. Create it with New.
type Tree struct {
	svc     trove.Services
	storeID string
	limits  trove.Limits

	mu       sync.Mutex
	byPath   map[string]trove.Memory // memory path → memory (no content)
	byID     map[string]string       // memory ID → memory path
	dirCount map[string]int          // directory → indexed memories below it
	sorted   []string                // sorted keys of byPath; nil when stale
	complete bool                    // byPath holds the whole store (Reload)
	empty    map[string]bool         // remembered-empty directories
}

// New returns a Tree over the store storeID reached through svc; limits
// gives the page sizes and path limits (the zero value means
// trove.DefaultLimits()). It does not contact the store.
func New(svc trove.Services, storeID string, limits trove.Limits) *Tree {
	if limits.MaxPathBytes == 0 {
		limits = trove.DefaultLimits()
	}
	t := &Tree{svc: svc, storeID: storeID, limits: limits}
	t.Reset()
	return t
}

// StoreID returns the store the Tree is bound to.
func (t *Tree) StoreID() string { return t.storeID }

// Services returns the services the Tree talks to.
func (t *Tree) Services() trove.Services { return t.svc }

// Limits returns the limits the Tree works with.
func (t *Tree) Limits() trove.Limits { return t.limits }

// ValidPath checks p against the store's path rules (trove.ValidatePath
// with the Tree's limits).
func (t *Tree) ValidPath(p string) error {
	return trove.ValidatePath(p, t.limits.MaxPathBytes, t.limits.MaxPathSegments)
}

// Reset empties the index (not the remembered directories).
func (t *Tree) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resetLocked()
	if t.empty == nil {
		t.empty = map[string]bool{}
	}
}

func (t *Tree) resetLocked() {
	t.byPath = map[string]trove.Memory{}
	t.byID = map[string]string{}
	t.dirCount = map[string]int{}
	t.sorted = nil
	t.complete = false
}

// ---- the index ----

// note records m (content dropped) at its path, moving the entry of its ID.
// t.mu held.
func (t *Tree) note(m *trove.Memory) {
	if old, ok := t.byID[m.ID]; ok && old != m.Path {
		t.dropLocked(old)
	}
	if prev, ok := t.byPath[m.Path]; ok && prev.ID != m.ID {
		delete(t.byID, prev.ID)
	}
	e := *m
	e.Content = nil
	if _, ok := t.byPath[m.Path]; !ok {
		t.count(m.Path, 1)
		t.sorted = nil
	}
	t.byPath[m.Path] = e
	t.byID[m.ID] = m.Path
}

// dropLocked forgets the memory at p. t.mu held.
func (t *Tree) dropLocked(p string) {
	e, ok := t.byPath[p]
	if !ok {
		return
	}
	delete(t.byPath, p)
	if t.byID[e.ID] == p {
		delete(t.byID, e.ID)
	}
	t.count(p, -1)
	t.sorted = nil
}

func (t *Tree) count(p string, delta int) {
	Ancestors(p, func(d string) {
		if n := t.dirCount[d] + delta; n > 0 {
			t.dirCount[d] = n
		} else {
			delete(t.dirCount, d)
		}
	})
}

// Note records m in the index (a memory the caller got from the store
// otherwise than through the Tree).
func (t *Tree) Note(m *trove.Memory) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.note(m)
}

// Forget drops the index entry of memory id, if any.
func (t *Tree) Forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.byID[id]; ok {
		t.dropLocked(p)
	}
}

// Cached returns the indexed memory at p (without content).
func (t *Tree) Cached(p string) (trove.Memory, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.byPath[p]
	return m, ok
}

// CachedByID returns the indexed memory with ID id (without content).
func (t *Tree) CachedByID(id string) (trove.Memory, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.byID[id]
	if !ok {
		return trove.Memory{}, false
	}
	m, ok := t.byPath[p]
	return m, ok
}

// Len returns the number of indexed memories.
func (t *Tree) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byPath)
}

// Complete reports whether the index holds the whole store as of the last
// Reload (and the Tree's own writes since).
func (t *Tree) Complete() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.complete
}

// Implied reports whether some indexed memory lies below directory dir.
func (t *Tree) Implied(dir string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dirCount[dir] > 0
}

// Below returns the indexed memory paths strictly below directory dir
// ("/" for all), sorted.
func (t *Tree) Below(dir string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sorted == nil {
		t.sorted = make([]string, 0, len(t.byPath))
		for p := range t.byPath {
			t.sorted = append(t.sorted, p)
		}
		sort.Strings(t.sorted)
	}
	all := t.sorted
	prefix := Prefix(dir)
	i := sort.SearchStrings(all, prefix)
	j := i
	for j < len(all) && len(all[j]) > len(prefix) && all[j][:len(prefix)] == prefix {
		j++
	}
	return append([]string(nil), all[i:j]...)
}

// Reload lists the whole store (basic view) and makes the result the
// index (Complete then reports true); it returns the listing, in path order.
// On an error the index is unchanged.
func (t *Tree) Reload(ctx context.Context) ([]trove.Memory, error) {
	return t.ReloadView(ctx, trove.ViewBasic, nil)
}

// ReloadView is Reload listing in view, calling each (when not nil) with
// every memory as its page arrives, so that a caller can act on a page
// while the next one is fetched: with ViewFull each sees the contents (in
// pages of Limits.MaxFullPageSize, one pass over the store instead of a
// basic listing and then a full one). Neither the returned listing nor the
// index keeps contents.
func (t *Tree) ReloadView(ctx context.Context, view trove.View, each func(*trove.Memory)) ([]trove.Memory, error) {
	var all []trove.Memory
	if err := t.list(ctx, "/", 0, view, false, func(it trove.MemoryListItem) bool {
		if it.Memory != nil {
			if each != nil {
				each(it.Memory)
			}
			m := *it.Memory
			m.Content = nil
			all = append(all, m)
		}
		return true
	}); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resetLocked()
	for i := range all {
		t.note(&all[i])
	}
	t.complete = true
	return all, nil
}

// ---- paging ----

// List calls fn for every item of the listing of directory dir ("/" for
// the root) with the given depth (0: every memory below; 1: direct children,
// deeper paths folded into prefixes) and view, page after page, until fn
// returns false or the listing ends. Every memory seen is indexed.
func (t *Tree) List(ctx context.Context, dir string, depth int, view trove.View, fn func(trove.MemoryListItem) bool) error {
	return t.list(ctx, dir, depth, view, true, fn)
}

// Walk calls fn for every memory of the store, in path order, until fn
// returns false (List of "/" at depth 0).
func (t *Tree) Walk(ctx context.Context, view trove.View, fn func(*trove.Memory) bool) error {
	return t.List(ctx, "/", 0, view, func(it trove.MemoryListItem) bool {
		return it.Memory == nil || fn(it.Memory)
	})
}

func (t *Tree) list(ctx context.Context, dir string, depth int, view trove.View, index bool, fn func(trove.MemoryListItem) bool) error {
	limit := t.limits.MaxPageSize
	if view == trove.ViewFull {
		limit = t.limits.MaxFullPageSize
	}
	for page, err := range trove.Pages(ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryListItem], error) {
		return t.svc.ListMemories(ctx, t.storeID, trove.ListMemoriesParams{
			PathPrefix: Prefix(dir), Depth: depth, Limit: limit, Cursor: cursor, View: view,
		})
	}) {
		if err != nil {
			return err
		}
		if index {
			t.mu.Lock()
			for _, it := range page.Data {
				if it.Memory != nil {
					t.note(it.Memory)
				}
			}
			t.mu.Unlock()
		}
		for _, it := range page.Data {
			if !fn(it) {
				return nil
			}
		}
	}
	return nil
}

// HasChildren reports whether some memory lies below directory dir (one
// listing of one item).
func (t *Tree) HasChildren(ctx context.Context, dir string) (bool, error) {
	page, err := t.svc.ListMemories(ctx, t.storeID, trove.ListMemoriesParams{
		PathPrefix: Prefix(dir), Depth: 1, Limit: 1, View: trove.ViewBasic,
	})
	if err != nil {
		return false, err
	}
	return len(page.Data) > 0, nil
}

// ---- reads ----

// Get reads memory id (one GetMemory) and indexes it; a memory that is gone
// is dropped from the index (the error is ENOTFOUND).
func (t *Tree) Get(ctx context.Context, id string, view trove.View) (*trove.Memory, error) {
	return t.GetNoting(ctx, id, view, nil)
}

// GetNoting is Get that also calls changed, when not nil, if the read
// moved, changed or dropped the memory's indexed entry, with the entry as
// it was. changed runs with the index's lock held: whoever reads the
// index afterwards (CachedByID) and sees the new entry also sees what
// changed did. It must not call the Tree.
func (t *Tree) GetNoting(ctx context.Context, id string, view trove.View, changed func(old trove.Memory)) (*trove.Memory, error) {
	m, err := t.svc.GetMemory(ctx, t.storeID, id, view)
	t.mu.Lock()
	defer t.mu.Unlock()
	old, known := t.byPath[t.byID[id]]
	known = known && old.ID == id
	switch {
	case err == nil:
		t.note(m)
		if known && changed != nil && (old.Path != m.Path || old.SHA256 != m.SHA256) {
			changed(old)
		}
	case trove.ErrorCode(err) == trove.ENOTFOUND:
		if known {
			t.dropLocked(old.Path)
			if changed != nil {
				changed(old)
			}
		}
	}
	return m, err
}

// Lookup returns the live memory at p, or nil (and no error) when there is
// none. With an indexed ID it costs one GetMemory; otherwise it lists the
// parent directory first (a miss). EUNAVAILABLE when the memory kept moving
// while it was looked up.
func (t *Tree) Lookup(ctx context.Context, p string, view trove.View) (*trove.Memory, error) {
	for range 3 {
		t.mu.Lock()
		e, ok := t.byPath[p]
		t.mu.Unlock()
		id := e.ID
		if !ok {
			var err error
			if id, err = t.scanFor(ctx, p); err != nil || id == "" {
				return nil, err
			}
		}
		m, err := t.Get(ctx, id, view)
		switch {
		case trove.ErrorCode(err) == trove.ENOTFOUND:
			continue // deleted (a stale hint, or between the listing and the read)
		case err != nil:
			return nil, err
		case m.Path != p:
			continue // renamed away: Get moved the entry
		}
		return m, nil
	}
	return nil, trove.Errorf(trove.EUNAVAILABLE, "the memory at %s kept changing while it was read", p)
}

// scanFor lists the parent directory of p and returns the ID of the memory
// at p, or "".
func (t *Tree) scanFor(ctx context.Context, p string) (string, error) {
	found := ""
	err := t.List(ctx, Parent(p), 1, trove.ViewBasic, func(it trove.MemoryListItem) bool {
		if it.Memory != nil && it.Memory.Path == p {
			found = it.Memory.ID
			return false
		}
		return true
	})
	return found, err
}

// ---- writes ----

// Create creates the memory at p holding content (CreateMemory) and
// indexes it.
func (t *Tree) Create(ctx context.Context, p, content string) (*trove.Memory, error) {
	m, err := t.svc.CreateMemory(ctx, t.storeID, trove.CreateMemoryParams{Path: p, Content: content})
	if err != nil {
		return nil, err
	}
	t.Note(m)
	return m, nil
}

// Update updates memory id (UpdateMemory) and indexes the result; a memory
// that is gone (ENOTFOUND) is dropped from the index.
func (t *Tree) Update(ctx context.Context, id string, p trove.UpdateMemoryParams) (*trove.Memory, error) {
	m, err := t.svc.UpdateMemory(ctx, t.storeID, id, p)
	if err != nil {
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			t.Forget(id)
		}
		return nil, err
	}
	t.Note(m)
	return m, nil
}

// Delete deletes memory id (DeleteMemory with expectSHA as precondition
// unless "") and drops it from the index, also when it was gone already
// (ENOTFOUND is still returned).
func (t *Tree) Delete(ctx context.Context, id, expectSHA string) error {
	err := t.svc.DeleteMemory(ctx, t.storeID, id, expectSHA)
	if err == nil || trove.ErrorCode(err) == trove.ENOTFOUND {
		t.Forget(id)
	}
	return err
}

// CreateConflictCopy creates, next to p, a memory named by ConflictName
// (tag, now) holding content. Names that taken reports as used (taken may
// be nil) or that the index holds are skipped, and the next name is tried
// while the store answers EPATHCONFLICT (at most 9 tries).
func (t *Tree) CreateConflictCopy(ctx context.Context, p, tag string, now time.Time, content string, taken func(string) bool) (*trove.Memory, error) {
	tried := map[string]bool{}
	var err error
	for range 9 {
		name := ConflictName(p, tag, now, func(q string) bool {
			if tried[q] || taken != nil && taken(q) {
				return true
			}
			_, ok := t.Cached(q)
			return ok
		})
		var m *trove.Memory
		if m, err = t.Create(ctx, name, content); err == nil {
			return m, nil
		}
		if trove.ErrorCode(err) != trove.EPATHCONFLICT {
			return nil, err
		}
		tried[name] = true
	}
	return nil, err
}

// ---- directories ----

// RenameDir renames directory from to to: every live memory below from
// moves to the same place below to (each keeps its ID and history), and the
// remembered directories below from move along. It returns the memories
// moved, in their new state. Nothing below from moves nothing (and is no
// error). New paths are checked against the path rules first (EINVALID, as
// is a to equal to or below from);
// see the package documentation for atomicity.
func (t *Tree) RenameDir(ctx context.Context, from, to string) ([]trove.Memory, error) {
	if to == from || IsBelow(to, from) {
		return nil, trove.Errorf(trove.EINVALID, "cannot move the directory %s into itself (%s)", from, to)
	}
	var moved []trove.Memory
	done := false
	if ds, ok := t.svc.(trove.DirectoryService); ok {
		ch, err := ds.RenameDirectory(ctx, t.storeID, trove.RenameDirectoryParams{From: from, To: to})
		switch {
		case err == nil:
			moved, done = ch.Memories, true
			t.mu.Lock()
			for i := range moved {
				t.note(&moved[i])
			}
			t.mu.Unlock()
		case trove.ErrorCode(err) == trove.ENOTFOUND:
			done = true // nothing below from
		case !errors.Is(err, errors.ErrUnsupported):
			return nil, err
		}
	}
	if !done {
		var err error
		if moved, err = t.renameEach(ctx, from, to); err != nil {
			return nil, err
		}
	}
	t.mu.Lock()
	for d := range t.empty {
		if d == from || IsBelow(d, from) {
			delete(t.empty, d)
			t.empty[Moved(d, from, to)] = true
		}
	}
	t.mu.Unlock()
	return moved, nil
}

// renameEach is RenameDir one memory at a time, with rollback.
func (t *Tree) renameEach(ctx context.Context, from, to string) ([]trove.Memory, error) {
	var below []trove.Memory
	if err := t.List(ctx, from, 0, trove.ViewBasic, func(it trove.MemoryListItem) bool {
		if it.Memory != nil {
			below = append(below, *it.Memory)
		}
		return true
	}); err != nil {
		return nil, err
	}
	for _, m := range below {
		if err := t.ValidPath(Moved(m.Path, from, to)); err != nil {
			return nil, err
		}
	}
	var moved, old []trove.Memory
	for _, m := range below {
		np := Moved(m.Path, from, to)
		u, err := t.Update(ctx, m.ID, trove.UpdateMemoryParams{Path: &np})
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			continue // deleted meanwhile
		}
		if err != nil {
			// Put back what moved, so that the directory is not split in two.
			for i := len(old) - 1; i >= 0; i-- {
				op := old[i].Path
				t.Update(ctx, old[i].ID, trove.UpdateMemoryParams{Path: &op}) //nolint:errcheck // best effort
			}
			return nil, err
		}
		moved, old = append(moved, *u), append(old, m)
	}
	return moved, nil
}

// DeleteDir deletes every live memory below directory dir and forgets the
// remembered directories below it. It returns the memories deleted (as
// they were). Nothing below dir deletes nothing (and is no error); see the
// package documentation for atomicity.
func (t *Tree) DeleteDir(ctx context.Context, dir string) ([]trove.Memory, error) {
	var gone []trove.Memory
	done := false
	if ds, ok := t.svc.(trove.DirectoryService); ok {
		ch, err := ds.DeleteDirectory(ctx, t.storeID, trove.DeleteDirectoryParams{Path: dir})
		switch {
		case err == nil:
			gone, done = ch.Memories, true
		case trove.ErrorCode(err) == trove.ENOTFOUND:
			done = true
		case !errors.Is(err, errors.ErrUnsupported):
			return nil, err
		}
	}
	if !done {
		var below []trove.Memory
		if err := t.List(ctx, dir, 0, trove.ViewBasic, func(it trove.MemoryListItem) bool {
			if it.Memory != nil {
				below = append(below, *it.Memory)
			}
			return true
		}); err != nil {
			return nil, err
		}
		for _, m := range below {
			err := t.Delete(ctx, m.ID, "")
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				continue
			}
			if err != nil {
				return gone, err
			}
			gone = append(gone, m)
		}
	}
	t.mu.Lock()
	for i := range gone {
		if p, ok := t.byID[gone[i].ID]; ok {
			t.dropLocked(p)
		}
	}
	for d := range t.empty {
		if d == dir || IsBelow(d, dir) {
			delete(t.empty, d)
		}
	}
	t.mu.Unlock()
	return gone, nil
}

// ---- remembered-empty directories ----

// RememberDir remembers dir as a directory (not the root).
func (t *Tree) RememberDir(dir string) {
	if dir == "/" || dir == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.empty[dir] = true
}

// RememberParents remembers every directory above p (not the root): the
// parents of a memory deleted or moved away stay.
func (t *Tree) RememberParents(p string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	Ancestors(p, func(d string) { t.empty[d] = true })
}

// IsRemembered reports whether dir is a remembered directory.
func (t *Tree) IsRemembered(dir string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.empty[dir]
}

// ForgetDir forgets the remembered directory dir (not those below it).
func (t *Tree) ForgetDir(dir string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.empty, dir)
}

// ForgetTree forgets p, if remembered, and every remembered directory
// below it.
func (t *Tree) ForgetTree(p string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for d := range t.empty {
		if d == p || IsBelow(d, p) {
			delete(t.empty, d)
		}
	}
}

// ForgetAbove forgets the remembered directories above p (a memory there
// implies them now).
func (t *Tree) ForgetAbove(p string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	Ancestors(p, func(d string) { delete(t.empty, d) })
}

// RememberedIn returns the base names of the remembered directories
// directly inside dir.
func (t *Tree) RememberedIn(dir string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for d := range t.empty {
		if Parent(d) == dir || (dir == "" && Parent(d) == "/") {
			out = append(out, Base(d))
		}
	}
	sort.Strings(out)
	return out
}

// RememberedBelow reports whether some remembered directory lies strictly
// below dir.
func (t *Tree) RememberedBelow(dir string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for d := range t.empty {
		if IsBelow(d, dir) {
			return true
		}
	}
	return false
}
