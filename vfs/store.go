package vfs

import (
	"context"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storetree"
)

const (
	oCreate = os.O_CREATE
	oExcl   = os.O_EXCL
	oTrunc  = os.O_TRUNC
	oAppend = os.O_APPEND
	oAccess = os.O_RDONLY | os.O_WRONLY | os.O_RDWR
)

// store is one store directory: the store tree (its listing, which is this
// mount's snapshot of the store, and the directories that exist only in
// this mount) and the open files.
type store struct {
	f    *FS
	id   string
	slug string
	ro   bool
	t    *storetree.Tree // its index is the listing cache

	mu       sync.Mutex
	loadedAt time.Time
	loadTook time.Duration // how long the last listing took
	loaded   bool
	open     map[string]*node // rel path → open file (incl. not yet uploaded)
	hidden   map[string]bool  // rel paths not listed because they cannot be local names, reported
	refused  map[string]error // rel path → refusal at a close, for the next fsync
	live     atomic.Bool      // the change feed is connected: the listing follows it (follow.go)
	// learnt: memory ID → the rel path it was listed at, for memories
	// whose listing entry a content read brought up to date before the
	// change feed told of the change (see store.learn).
	learnt sync.Map
}

func newStore(f *FS, id, slug string, ro bool) *store {
	return &store{f: f, id: id, slug: slug, ro: ro, t: storetree.New(f.svc, id, f.limits),
		open: map[string]*node{}, refused: map[string]error{}, hidden: map[string]bool{}}
}

// hide reports, once per mount, the entry rel (a file or a directory) that
// readDir leaves out because its name cannot be a local file name
// (storetree.LocalProblem). s.mu held.
func (s *store) hide(rel string) {
	if s.hidden[rel] {
		return
	}
	s.hidden[rel] = true
	why := storetree.LocalProblem(memPath(rel))
	s.f.log.Warn("vfs: a store path cannot be a local file name; it is not listed", "store", s.id, "path", memPath(rel), "reason", why)
	if s.f.onHidden != nil {
		s.f.onHidden(s.id, memPath(rel), why)
	}
}

func (s *store) fileMode() fs.FileMode {
	if s.ro {
		return 0o444
	}
	return 0o644
}

func (s *store) dirMode() fs.FileMode {
	if s.ro {
		return fs.ModeDir | 0o555
	}
	return fs.ModeDir | 0o755
}

func (s *store) rootAttr() Attr {
	return Attr{Name: s.slug, Dir: true, Mode: s.dirMode(), ModTime: s.f.started, Nlink: 2}
}

// Path arithmetic on rel paths ("a/b.md", "" for the store directory).
var (
	memPath  = storetree.MemPath
	parentOf = storetree.Parent
	baseOf   = storetree.Base
)

// file returns the listed memory at rel. Called with s.mu held.
func (s *store) file(rel string) (trove.Memory, bool) { return s.t.Cached(memPath(rel)) }

// isVdir reports whether rel is a directory created or kept by this mount.
func (s *store) isVdir(rel string) bool { return s.t.IsRemembered(memPath(rel)) }

// implied reports whether some listed memory lies below rel.
func (s *store) implied(rel string) bool { return s.t.Implied(memPath(rel)) }

// fresh reloads the listing when it is older than the refresh bound.
// Called with s.mu held.
func (s *store) fresh(ctx context.Context) error {
	now := s.f.now()
	if s.loaded && (s.live.Load() || now.Sub(s.loadedAt) < s.bound()) {
		return nil
	}
	if _, err := s.t.Reload(ctx); err != nil {
		s.f.log.Warn("vfs: listing a store failed", "store", s.id, "err", err)
		return storeErr(err)
	}
	s.loaded = true
	s.loadedAt = now
	s.loadTook = s.f.now().Sub(now)
	return nil
}

// bound is how old the listing may get: the configured refresh bound, or
// twice the time the last listing took if that is longer (a big store over
// a slow link would otherwise spend all its time listing).
func (s *store) bound() time.Duration {
	if b := 2 * s.loadTook; b > s.f.refresh {
		return b
	}
	return s.f.refresh
}

// invalidate forces a reload at the next operation. Called with s.mu held.
func (s *store) invalidate() { s.loaded = false }

// putFile clears what this mount knew about rel before a write put a
// memory there (the store tree indexed the memory the write returned).
func (s *store) putFile(rel string) { delete(s.refused, rel) }

// dropFile forgets the memory at rel; directories it leaves empty stay,
// as directories of this mount.
func (s *store) dropFile(rel string) {
	delete(s.refused, rel)
	e, ok := s.file(rel)
	if !ok {
		return
	}
	s.t.Forget(e.ID)
	s.keepParents(rel)
}

// kind classifies rel: 'f' file, 'd' directory, 0 absent. Called with s.mu
// held and the listing fresh.
func (s *store) kind(rel string) byte {
	if rel == "" {
		return 'd'
	}
	if n := s.open[rel]; n != nil {
		return 'f'
	}
	if _, ok := s.file(rel); ok {
		return 'f'
	}
	if s.implied(rel) || s.isVdir(rel) {
		return 'd'
	}
	return 0
}

// checkParent returns nil if the parent of rel is a directory, ErrNotDir if
// it or one of its ancestors is a file, ErrNotExist if it is absent.
func (s *store) checkParent(rel string) error {
	p := parentOf(rel)
	if p == "" {
		return nil
	}
	if err := s.checkParentsAreDirs(rel); err != nil {
		return err
	}
	if s.kind(p) == 0 {
		return ErrNotExist
	}
	return nil
}

func (s *store) checkParentsAreDirs(rel string) error {
	for d := parentOf(rel); d != ""; d = parentOf(d) {
		if s.kind(d) == 'f' {
			return ErrNotDir
		}
	}
	return nil
}

// lookup checks the parents of rel and returns its kind.
func (s *store) lookup(rel string) (byte, error) {
	if err := s.checkParentsAreDirs(rel); err != nil {
		return 0, err
	}
	k := s.kind(rel)
	if k == 0 {
		return 0, ErrNotExist
	}
	return k, nil
}

func (s *store) validName(rel string) error {
	if err := trove.ValidatePath(memPath(rel), s.f.limits.MaxPathBytes, s.f.limits.MaxPathSegments); err != nil {
		return ErrInvalid
	}
	return nil
}

func (s *store) stat(ctx context.Context, rel string) (Attr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rel == "" {
		return s.rootAttr(), nil
	}
	if err := s.fresh(ctx); err != nil {
		return Attr{}, err
	}
	k, err := s.lookup(rel)
	if err != nil {
		return Attr{}, err
	}
	return s.attrOf(rel, k), nil
}

// attrOf describes rel of kind k. Called with s.mu held.
func (s *store) attrOf(rel string, k byte) Attr {
	if rel == "" {
		return s.rootAttr()
	}
	if k == 'd' {
		return Attr{Name: baseOf(rel), Dir: true, Mode: s.dirMode(), ModTime: s.f.started, Nlink: 2}
	}
	a := Attr{Name: baseOf(rel), Mode: s.fileMode(), Nlink: 1}
	if e, ok := s.file(rel); ok {
		a.Size, a.ModTime, a.MemoryID = int64(e.SizeBytes), e.UpdatedAt, e.ID
	}
	if n := s.open[rel]; n != nil {
		n.mu.Lock()
		if n.loaded {
			a.Size = int64(len(n.data))
		} else if n.id == "" {
			a.Size = 0
		}
		if n.dirty || a.ModTime.IsZero() {
			a.ModTime = n.mtime
		}
		if n.id != "" {
			a.MemoryID = n.id
		}
		n.mu.Unlock()
	}
	if a.ModTime.IsZero() {
		a.ModTime = s.f.started
	}
	return a
}

// below returns the sorted listed file paths (rel) strictly below
// directory rel.
func (s *store) below(rel string) []string {
	out := s.t.Below(memPath(rel))
	for i, p := range out {
		out[i] = storetree.Rel(p)
	}
	return out
}

func (s *store) readDir(ctx context.Context, rel string) ([]Attr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fresh(ctx); err != nil {
		return nil, err
	}
	k, err := s.lookup(rel)
	if err != nil {
		return nil, err
	}
	if k != 'd' {
		return nil, ErrNotDir
	}
	prefix := ""
	if rel != "" {
		prefix = rel + "/"
	}
	kids := map[string]byte{}
	add := func(p string, isFile bool) {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok || rest == "" {
			return
		}
		name, deeper, _ := strings.Cut(rest, "/")
		if len(name) > storetree.MaxNameBytes {
			s.hide(prefix + name)
			return
		}
		if deeper != "" || !isFile {
			kids[name] = 'd'
		} else if kids[name] == 0 {
			kids[name] = 'f'
		}
	}
	for _, p := range s.below(rel) {
		add(p, true)
	}
	for _, name := range s.t.RememberedIn(memPath(rel)) {
		add(prefix+name, false)
	}
	for p := range s.open {
		add(p, true)
	}
	out := make([]Attr, 0, len(kids))
	for name, kk := range kids {
		out = append(out, s.attrOf(prefix+name, kk))
	}
	sortAttrs(out)
	return out, nil
}

func sortAttrs(a []Attr) { sort.Slice(a, func(i, j int) bool { return a[i].Name < a[j].Name }) }

// isEmptyDir reports whether directory rel has no entries. s.mu held.
func (s *store) isEmptyDir(rel string) bool {
	if s.implied(rel) || s.t.RememberedBelow(memPath(rel)) {
		return false
	}
	prefix := rel + "/"
	for p := range s.open {
		if strings.HasPrefix(p, prefix) {
			return false
		}
	}
	return true
}

func (s *store) mkdir(ctx context.Context, rel string) error {
	if s.ro {
		return ErrReadOnly
	}
	if err := s.validName(rel); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fresh(ctx); err != nil {
		return err
	}
	if err := s.checkParent(rel); err != nil {
		return err
	}
	if s.kind(rel) != 0 {
		return ErrExist
	}
	s.t.RememberDir(memPath(rel))
	return nil
}

func (s *store) rmdir(ctx context.Context, rel string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fresh(ctx); err != nil {
		return err
	}
	k, err := s.lookup(rel)
	if err != nil {
		return err
	}
	if k != 'd' {
		return ErrNotDir
	}
	if s.ro {
		return ErrReadOnly
	}
	if !s.isEmptyDir(rel) {
		return ErrNotEmpty
	}
	s.t.ForgetDir(memPath(rel))
	return nil
}

// writableFile refreshes the listing and checks that rel is a file in a
// writable store: ErrNotExist, ErrNotDir (a parent is a file), ErrIsDir or
// ErrReadOnly otherwise. s.mu held.
func (s *store) writableFile(ctx context.Context, rel string) error {
	if err := s.fresh(ctx); err != nil {
		return err
	}
	k, err := s.lookup(rel)
	if err != nil {
		return err
	}
	if k == 'd' {
		return ErrIsDir
	}
	if s.ro {
		return ErrReadOnly
	}
	return nil
}

func (s *store) remove(ctx context.Context, rel string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableFile(ctx, rel); err != nil {
		return err
	}
	id, sha := "", ""
	if e, ok := s.file(rel); ok {
		id, sha = e.ID, e.SHA256
	}
	n := s.open[rel]
	if n != nil {
		n.mu.Lock()
		if n.id != "" {
			id, sha = n.id, n.baseSHA
		}
		// Its descriptors keep reading the content after the unlink.
		_ = n.load(ctx) // best effort
		n.mu.Unlock()
	}
	if id != "" {
		// ENOTFOUND: already gone, the unlink's intent holds.
		if err := s.t.Delete(ctx, id, sha); err != nil && trove.ErrorCode(err) != trove.ENOTFOUND {
			s.invalidate()
			return storeErr(err)
		}
	}
	if n != nil {
		n.mu.Lock()
		n.unlinked = true
		n.dirty = false
		n.mu.Unlock()
		delete(s.open, rel)
	}
	s.dropFile(rel)
	s.keepParents(rel)
	return nil
}

func (s *store) truncate(ctx context.Context, rel string, size int64) error {
	if size < 0 {
		return ErrInvalid
	}
	if size > int64(s.f.limits.MaxContentBytes) {
		return ErrTooLarge
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writableFile(ctx, rel); err != nil {
		return err
	}
	n := s.open[rel]
	if n == nil {
		e, _ := s.file(rel)
		n = &node{s: s, path: rel, id: e.ID}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.load(ctx); err != nil {
		return err
	}
	if int(size) == len(n.data) && !n.dirty {
		return nil
	}
	n.resize(int(size))
	if n.live > 0 || n.local && n.id == "" {
		// A descriptor that has not been closed yet will upload it (this
		// is also how the kernel truncates for open(O_TRUNC)).
		return nil
	}
	// No descriptor will close for this change: upload it now.
	return n.upload(ctx)
}

// rename implements FS.Rename inside one store.
func (s *store) rename(ctx context.Context, from, to string) error {
	if s.ro {
		return ErrReadOnly
	}
	if err := s.validName(to); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fresh(ctx); err != nil {
		return err
	}
	k, err := s.lookup(from)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	if err := s.checkParent(to); err != nil {
		return err
	}
	tk := s.kind(to)
	if k == 'f' {
		switch tk {
		case 'd':
			return ErrIsDir
		case 'f':
			return s.renameOver(ctx, from, to)
		}
		return s.moveFile(ctx, from, to)
	}
	if strings.HasPrefix(to, from+"/") {
		return ErrInvalid
	}
	switch tk {
	case 'f':
		return ErrNotDir
	case 'd':
		if !s.isEmptyDir(to) {
			return ErrNotEmpty
		}
	}
	return s.moveDir(ctx, from, to)
}

// moveFile renames a file to a free name. s.mu held.
func (s *store) moveFile(ctx context.Context, from, to string) error {
	n := s.open[from]
	id := ""
	if e, ok := s.file(from); ok {
		id = e.ID
	}
	if n != nil {
		n.mu.Lock()
		defer n.mu.Unlock()
		id = n.id
	}
	return s.moveFileLocked(ctx, from, to, n, id)
}

// settle runs after an open file was renamed to n.path (s.mu and n.mu held):
// a temporary file that got a regular name is uploaded now, and a file no
// descriptor holds any more leaves the open set.
func (s *store) settle(ctx context.Context, n *node) error {
	if n.local && !IsTempName(baseOf(n.path)) {
		n.local = false
		if n.id == "" && !n.unlinked {
			if err := n.upload(ctx); err != nil {
				// Stay a local file under the new name; the rename holds.
				n.local = true
				return err
			}
		}
	}
	if n.handles == 0 && !(n.local && n.id == "") && s.open[n.path] == n {
		delete(s.open, n.path)
	}
	return nil
}

// keepParents keeps the now possibly empty parents of a moved-away path.
func (s *store) keepParents(rel string) {
	storetree.Ancestors(memPath(rel), func(d string) {
		if !s.t.Implied(d) {
			s.t.RememberDir(d)
		}
	})
}

// renameOver moves file from onto the existing file to: the target memory
// gets the source's content as one version, then the source memory is
// deleted. s.mu held.
func (s *store) renameOver(ctx context.Context, from, to string) error {
	src, dst := s.open[from], s.open[to]
	srcID, dstID, dstSHA := "", "", ""
	if e, ok := s.file(from); ok {
		srcID = e.ID
	}
	if e, ok := s.file(to); ok {
		dstID, dstSHA = e.ID, e.SHA256
	}
	if dst != nil {
		dst.mu.Lock()
		if dst.id != "" {
			dstID = dst.id
			if !dst.dirty {
				dstSHA = dst.baseSHA
			}
		}
		dst.mu.Unlock()
	}
	if src != nil {
		src.mu.Lock()
		defer src.mu.Unlock()
		srcID = src.id
	}
	if dstID == "" {
		// The target was never uploaded: it simply disappears.
		if dst != nil {
			s.orphan(ctx, to, dst)
		}
		return s.moveFileLocked(ctx, from, to, src, srcID)
	}
	// Read the source's content.
	var content string
	switch {
	case src != nil:
		if err := src.load(ctx); err != nil {
			return err
		}
		content = string(src.data)
	case srcID != "":
		m, err := s.t.Get(ctx, srcID, trove.ViewFull)
		if err != nil {
			s.invalidate()
			return storeErr(err)
		}
		content = *m.Content
	}
	if err := checkUTF8(content); err != nil {
		return err
	}
	m, err := s.t.Update(ctx, dstID, trove.UpdateMemoryParams{Content: &content, PreconditionSHA256: dstSHA})
	if err != nil {
		s.invalidate()
		return storeErr(err)
	}
	if dst != nil {
		s.orphan(ctx, to, dst)
	}
	s.putFile(to)
	if srcID != "" {
		if err := s.t.Delete(ctx, srcID, ""); err != nil && trove.ErrorCode(err) != trove.ENOTFOUND {
			s.invalidate()
			s.f.log.Warn("vfs: rename over: deleting the source failed", "store", s.id, "memory", srcID, "err", err)
			return storeErr(err)
		}
	}
	delete(s.refused, from)
	s.keepParents(from)
	if src != nil {
		delete(s.open, from)
		s.open[to] = src
		src.path, src.id, src.baseSHA, src.dirty, src.local = to, m.ID, m.SHA256, false, false
		if src.handles == 0 {
			delete(s.open, to)
		}
	}
	return nil
}

// moveFileLocked is moveFile with src (the open file at from, if any)
// already locked by the caller and srcID its memory ("" if not uploaded).
func (s *store) moveFileLocked(ctx context.Context, from, to string, src *node, srcID string) error {
	if srcID != "" {
		p := memPath(to)
		if _, err := s.t.Update(ctx, srcID, trove.UpdateMemoryParams{Path: &p}); err != nil {
			s.invalidate()
			return storeErr(err)
		}
		delete(s.refused, from)
		s.putFile(to)
	}
	if src != nil {
		delete(s.open, from)
		s.open[to] = src
		src.path = to
		if err := s.settle(ctx, src); err != nil {
			return err
		}
	}
	s.keepParents(from)
	return nil
}

// orphan detaches an open file replaced or removed by this mount: its
// handles keep their buffer (read now if it was not) and upload nothing.
// s.mu held, n unlocked.
func (s *store) orphan(ctx context.Context, rel string, n *node) {
	n.mu.Lock()
	_ = n.load(ctx) // best effort
	n.unlinked, n.dirty = true, false
	n.mu.Unlock()
	if s.open[rel] == n {
		delete(s.open, rel)
	}
}

// moveDir renames every memory below from to the same place below to (one
// transaction when the services offer it; see storetree.Tree.RenameDir),
// and moves this mount's directories and open files along. s.mu held.
func (s *store) moveDir(ctx context.Context, from, to string) error {
	if _, err := s.t.RenameDir(ctx, memPath(from), memPath(to)); err != nil {
		s.invalidate()
		if trove.ErrorCode(err) != trove.EINVALID {
			s.f.log.Warn("vfs: renaming a directory failed", "store", s.id, "from", from, "to", to, "err", err)
		}
		return storeErr(err)
	}
	// Open files of this mount follow (the store tree moved the
	// directories it remembers).
	s.t.RememberDir(memPath(to))
	for p, n := range s.open {
		if strings.HasPrefix(p, from+"/") {
			np := to + strings.TrimPrefix(p, from)
			delete(s.open, p)
			s.open[np] = n
			n.mu.Lock()
			n.path = np
			n.mu.Unlock()
		}
	}
	s.keepParents(from)
	return nil
}
