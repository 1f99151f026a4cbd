package vfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storetree"
)

// node is an open file: the buffer every handle on it shares.
// Lock order: store.mu before node.mu.
type node struct {
	s *store

	mu       sync.Mutex
	path     string // rel path; changed with s.mu and mu held
	id       string // memory ID; "" until the first upload
	baseSHA  string // content hash the buffer was read from (the precondition)
	loaded   bool   // data holds the content
	data     []byte
	dirty    bool // data differs from what the store holds
	mtime    time.Time
	handles  int
	live     int   // handles not flushed (closed) yet
	unlinked bool  // removed or replaced by this mount: uploads nothing
	local    bool  // a new file with a temporary name: kept here until renamed (see IsTempName)
	failed   error // a write failed (ErrTooLarge): the next flush drops the changes
}

// load reads the content from the store if it is not loaded. n.mu held.
func (n *node) load(ctx context.Context) error {
	if n.loaded {
		return nil
	}
	if n.id == "" {
		n.data, n.loaded = nil, true
		return nil
	}
	if c, ok := n.s.f.cache.get(n.baseSHA); ok {
		n.data, n.loaded = []byte(c), true
		return nil
	}
	// The listing takes the state read (or drops a memory that is gone);
	// when that changes its entry, the change is learnt in the same
	// critical section, so the feed's event for it cannot find the
	// listing up to date without finding what was learnt.
	m, err := n.s.t.GetNoting(ctx, n.id, trove.ViewFull, func(trove.Memory) { n.s.learn(n.id, n.path) })
	if err != nil {
		return storeErr(err)
	}
	if m.Content != nil {
		n.data = []byte(*m.Content)
		n.s.f.cache.put(m.SHA256, *m.Content)
	} else {
		n.data = nil
	}
	n.baseSHA, n.loaded, n.mtime = m.SHA256, true, m.UpdatedAt
	return nil
}

// resize truncates or zero-extends the loaded buffer. n.mu held.
func (n *node) resize(size int) {
	if size <= len(n.data) {
		n.data = n.data[:size]
	} else {
		n.data = append(n.data, make([]byte, size-len(n.data))...)
	}
	n.dirty = true
	n.mtime = n.s.f.now()
}

func checkUTF8(s string) error {
	if !utf8.ValidString(s) {
		return ErrNotUTF8
	}
	return nil
}

// upload writes the buffer to the store as one version. s.mu and n.mu held.
// On a lost race it saves the bytes as a conflict copy, re-bases the node on
// the winner's state and returns ErrStale.
func (n *node) upload(ctx context.Context) error {
	s := n.s
	if !utf8.Valid(n.data) {
		return ErrNotUTF8
	}
	content := string(n.data)
	var m *trove.Memory
	var err error
	if n.id == "" {
		if s.t.Len() >= s.f.limits.MaxMemoriesPerStore {
			return ErrNoSpace
		}
		m, err = s.t.Create(ctx, memPath(n.path), content)
	} else {
		m, err = s.t.Update(ctx, n.id, trove.UpdateMemoryParams{Content: &content, PreconditionSHA256: n.baseSHA})
	}
	if err == nil {
		n.id, n.baseSHA, n.dirty, n.mtime = m.ID, m.SHA256, false, m.UpdatedAt
		s.putFile(n.path)
		s.f.cache.put(m.SHA256, content)
		return nil
	}
	code := trove.ErrorCode(err)
	lost := code == trove.EPRECONDITION ||
		(n.id != "" && code == trove.ENOTFOUND) ||
		(n.id == "" && code == trove.EPATHCONFLICT)
	if !lost {
		return storeErr(err)
	}
	cp, cerr := s.conflictCopy(ctx, n.path, n.id, content)
	if cerr != nil {
		s.f.log.Error("vfs: saving a conflict copy failed; the buffer stays unsaved", "store", s.id, "path", n.path, "err", cerr)
		return storeErr(cerr)
	}
	s.f.log.Warn("vfs: lost a write race; saved a conflict copy", "store", s.id, "path", n.path, "copy", cp)
	// Re-base on what the store holds now, keeping the writer's bytes in
	// the buffer: a further write and close replaces the winner's version.
	s.invalidate()
	n.id, n.baseSHA, n.dirty = "", "", false
	if err := s.fresh(ctx); err == nil {
		if e, ok := s.file(n.path); ok {
			n.id, n.baseSHA = e.ID, e.SHA256
		}
	}
	return ErrStale
}

// conflictCopy creates a conflict copy of rel holding content, named by
// storetree.ConflictName with the writer's tag and the UTC time (a name
// that always fits a local file name), and returns its rel path. s.mu held.
func (s *store) conflictCopy(ctx context.Context, rel, memID, content string) (string, error) {
	m, err := s.t.CreateConflictCopy(ctx, memPath(rel), s.f.writerTag(memID), s.f.now(), content,
		func(q string) bool { return s.open[storetree.Rel(q)] != nil })
	if err != nil {
		return "", err
	}
	cp := storetree.Rel(m.Path)
	s.putFile(cp)
	return cp, nil
}

// writerTag returns the last 8 characters of the writing actor's ID, or of
// memID when the principal is unknown.
func (f *FS) writerTag(memID string) string {
	id := memID
	if p := f.principal; p != nil {
		a := p.Actor
		for _, s := range []string{a.SessionID, a.APIKeyID, a.UserID, a.ServiceAccountID} {
			if s != "" {
				id = s
				break
			}
		}
	}
	if id == "" {
		return "00000000"
	}
	if len(id) > 8 {
		id = id[len(id)-8:]
	}
	return id
}

// Handle is an open file descriptor. Every method is safe for concurrent
// use; Release must be called exactly once.
type Handle struct {
	n       *node
	write   bool
	append  bool
	flushed bool // Flush was called (guarded by n.mu)
	wrote   bool // WriteAt or Truncate was called (guarded by n.mu)
}

// openFile implements FS.Open.
func (s *store) openFile(ctx context.Context, rel string, flags int) (*Handle, error) {
	acc := flags & oAccess
	write := acc == os.O_WRONLY || acc == os.O_RDWR || flags&oTrunc != 0
	create := flags&oCreate != 0
	if write && s.ro {
		return nil, ErrReadOnly
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fresh(ctx); err != nil {
		return nil, err
	}
	if err := s.checkParentsAreDirs(rel); err != nil {
		return nil, err
	}
	n := s.open[rel]
	switch s.kind(rel) {
	case 'd':
		return nil, ErrIsDir
	case 0:
		if !create {
			return nil, ErrNotExist
		}
		if err := s.checkParent(rel); err != nil {
			return nil, err
		}
		if s.ro {
			return nil, ErrReadOnly
		}
		if err := s.validName(rel); err != nil {
			return nil, err
		}
		if s.t.Len() >= s.f.limits.MaxMemoriesPerStore {
			return nil, ErrNoSpace
		}
		n = &node{s: s, path: rel, loaded: true, dirty: true, mtime: s.f.now(), local: IsTempName(baseOf(rel))}
		s.open[rel] = n
	default:
		if create && flags&oExcl != 0 {
			return nil, ErrExist
		}
		e, listed := s.file(rel)
		if n == nil {
			n = &node{s: s, path: rel, id: e.ID, baseSHA: e.SHA256, mtime: e.UpdatedAt}
			s.open[rel] = n
		} else if listed {
			// A long-open file follows other writers' changes when clean.
			n.mu.Lock()
			if !n.dirty && n.id == e.ID && n.baseSHA != e.SHA256 {
				n.loaded, n.data, n.baseSHA = false, nil, e.SHA256
			}
			n.mu.Unlock()
		}
	}
	n.mu.Lock()
	n.handles++
	n.live++
	if flags&oTrunc != 0 && (len(n.data) > 0 || !n.loaded) {
		n.data, n.loaded, n.failed = n.data[:0], true, nil
		n.dirty, n.mtime = true, s.f.now()
	}
	n.mu.Unlock()
	return &Handle{n: n, write: write, append: flags&oAppend != 0}, nil
}

func (h *Handle) ctx(ctx context.Context) context.Context { return h.n.s.f.ctx(ctx) }

func (h *Handle) name() string { return h.n.s.slug + "/" + h.n.path }

// ReadAt reads like io.ReaderAt: io.EOF when fewer than len(p) bytes remain.
// The content is read from the store at the first read of an open file.
func (h *Handle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.load(h.ctx(ctx)); err != nil {
		return 0, pathErr("read", h.name(), err)
	}
	if off < 0 {
		return 0, pathErr("read", h.name(), ErrInvalid)
	}
	if off >= int64(len(n.data)) {
		return 0, io.EOF
	}
	c := copy(p, n.data[off:])
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

// WriteAt writes p at off (at the end for a handle opened with O_APPEND)
// into the buffer. ErrTooLarge, writing nothing, if the file would exceed
// the content limit.
func (h *Handle) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	n := h.n
	if !h.write {
		return 0, pathErr("write", h.name(), ErrPermission)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.load(h.ctx(ctx)); err != nil {
		return 0, pathErr("write", h.name(), err)
	}
	if h.append {
		off = int64(len(n.data))
	}
	if off < 0 {
		return 0, pathErr("write", h.name(), ErrInvalid)
	}
	end := off + int64(len(p))
	if end > int64(n.s.f.limits.MaxContentBytes) {
		n.failed, h.wrote = ErrTooLarge, true
		return 0, pathErr("write", h.name(), ErrTooLarge)
	}
	if end > int64(len(n.data)) {
		n.data = append(n.data, make([]byte, int(end)-len(n.data))...)
	}
	copy(n.data[off:], p)
	n.dirty, n.mtime, h.wrote = true, n.s.f.now(), true
	return len(p), nil
}

// Truncate sets the size of the buffer (ftruncate). ErrTooLarge beyond the
// content limit.
func (h *Handle) Truncate(ctx context.Context, size int64) error {
	n := h.n
	if size < 0 {
		return pathErr("truncate", h.name(), ErrInvalid)
	}
	if size > int64(n.s.f.limits.MaxContentBytes) {
		return pathErr("truncate", h.name(), ErrTooLarge)
	}
	if n.s.ro {
		return pathErr("truncate", h.name(), ErrReadOnly)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.load(h.ctx(ctx)); err != nil {
		return pathErr("truncate", h.name(), err)
	}
	h.wrote = true
	if int(size) != len(n.data) {
		n.resize(int(size))
	}
	return nil
}

// CleanSHA returns the SHA-256 of the store content the file shows, when
// the file holds exactly that (no buffered change, not a new file), else
// "". A kernel adapter keeps its page cache across opens while it stays
// the same.
func (h *Handle) CleanSHA() string {
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.dirty || n.id == "" || n.unlinked || n.failed != nil {
		return ""
	}
	return n.baseSHA
}

// Size returns the current size of the file as this handle sees it.
func (h *Handle) Size() int64 {
	n := h.n
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.loaded {
		return int64(len(n.data))
	}
	if e, ok := n.s.file(n.path); ok && e.ID == n.id {
		return int64(e.SizeBytes)
	}
	return 0
}

// Flush is close(2) of one descriptor of the file: if this handle wrote
// (or truncated) and the buffer changed since it was last uploaded, the
// buffer is uploaded as one version. A handle that did not write uploads
// nothing at close, so that a shell's "echo x > f" (open, dup, close of the
// first descriptor, write, close) makes one version, not an empty one first;
// changes no writing handle closed over (open with O_TRUNC alone, a new
// empty file) are uploaded by Release.
//
// ErrStale: the bytes went to a conflict copy. ErrUnavailable: nothing was
// saved; the changes stay buffered for a later close, Fsync or Release.
// ErrTooLarge (a write failed), ErrNotUTF8, ErrNoSpace, ErrInvalid: the store
// refuses the bytes, so the changes are dropped (the store is unchanged; a
// new file disappears).
func (h *Handle) Flush(ctx context.Context) error { return h.sync(ctx, true) }

// Fsync uploads a changed buffer like Flush, whoever changed it; the handle
// stays open. Refusals are as for Flush: a new file refused at fsync
// disappears from the tree at once (its descriptors keep working, as after
// an unlink), and the error is not repeated at close.
func (h *Handle) Fsync(ctx context.Context) error { return h.sync(ctx, false) }

func (h *Handle) sync(ctx context.Context, closing bool) error {
	n := h.n
	s := n.s
	s.mu.Lock()
	defer s.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if closing && !h.flushed {
		h.flushed = true
		n.live--
	}
	if closing && !h.wrote && n.failed == nil {
		return nil
	}
	if !closing && !n.dirty && n.failed == nil {
		// Report once a refusal at a close whose result was ignored.
		if err := s.refused[n.path]; err != nil {
			delete(s.refused, n.path)
			return pathErr("fsync", h.name(), err)
		}
	}
	op := "fsync"
	if closing {
		op = "close"
	}
	return pathErr(op, h.name(), n.save(h.ctx(ctx), closing))
}

// save uploads a changed buffer (s.mu and n.mu held) and drops changes the
// store refuses for good. closing: at a close or last release, whose result
// may be ignored: a refusal then is reported again by the next fsync
// (see the package documentation).
func (n *node) save(ctx context.Context, closing bool) error {
	s := n.s
	if n.unlinked || !n.dirty && n.failed == nil {
		return nil
	}
	err := n.failed
	switch {
	case err != nil:
	case n.local && n.id == "":
		// A temporary file stays in this mount until it is renamed;
		// refuse now what the store would refuse then.
		if !utf8.Valid(n.data) {
			err = ErrNotUTF8
		}
	default:
		err = n.upload(ctx)
	}
	switch {
	case errors.Is(err, ErrTooLarge), errors.Is(err, ErrNotUTF8), errors.Is(err, ErrNoSpace), errors.Is(err, ErrInvalid):
		// The store refuses these bytes for good: drop the changes, so
		// that the file shows the store's content again (a new file
		// disappears).
		n.failed, n.dirty, n.loaded, n.data = nil, false, false, nil
		if n.id == "" {
			n.unlinked = true
			if s.open[n.path] == n {
				delete(s.open, n.path)
			}
		} else if closing {
			s.refused[n.path] = err
		}
		if s.f.onRefused != nil {
			s.f.onRefused(s.id, memPath(n.path), refusalReason(err, s.f.limits.MaxContentBytes))
		}
	}
	return err
}

// refusalReason describes a refusal of save for a person.
func refusalReason(err error, maxBytes int) string {
	switch {
	case errors.Is(err, ErrTooLarge):
		return fmt.Sprintf("the file is over the content limit of %d bytes (EFBIG); the store is unchanged", maxBytes)
	case errors.Is(err, ErrNotUTF8):
		return "the file is not valid UTF-8 text (EILSEQ); the store is unchanged"
	case errors.Is(err, ErrNoSpace):
		return "the store holds the maximum number of memories (ENOSPC); the store is unchanged"
	default:
		return "the path is not a valid memory path (EINVAL); the store is unchanged"
	}
}

// Dropped reports whether the file h was opened on has left the tree by
// this mount's doing: unlinked, replaced by a rename over it, or a new file
// whose content the store refused at a close or fsync (see Flush). A kernel
// adapter uses it to drop the name from the kernel's caches at once.
func (h *Handle) Dropped() bool {
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.unlinked
}

// Release ends the handle. When the last handle of a file is released,
// changes still buffered (see Flush) are uploaded; errors are only logged,
// since nobody can be told any more.
func (h *Handle) Release() {
	n := h.n
	s := n.s
	s.mu.Lock()
	defer s.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.handles--
	if !h.flushed {
		h.flushed = true
		n.live--
	}
	if n.handles > 0 {
		return
	}
	if n.local && n.id == "" && !n.unlinked {
		return // a temporary file lives on in this mount until renamed or removed
	}
	if err := n.save(h.ctx(context.Background()), true); err != nil {
		s.f.log.Warn("vfs: uploading at the last release failed; the changes are lost", "store", s.id, "path", n.path, "err", err)
	}
	if s.open[n.path] == n {
		delete(s.open, n.path)
		if n.id == "" {
			s.keepParents(n.path)
		}
	}
}

// IsTempName reports whether a new file named base is kept in the mount
// (not uploaded at close) until it is renamed: the temporary files of
// editors and tools that write a copy and rename it over the original.
// Patterns: sed's "sedXXXXXX", Python's "tmpXXXXXXXX", "*.tmp", "*.temp",
// "*~", "*.swp"/"*.swx" and "4913" (vim), "#*#" and ".#*" (emacs), "*.lock"
// (git and others).
func IsTempName(base string) bool {
	switch {
	case base == "4913",
		strings.HasSuffix(base, ".tmp"), strings.HasSuffix(base, ".temp"),
		strings.HasSuffix(base, "~"),
		strings.HasSuffix(base, ".swp"), strings.HasSuffix(base, ".swx"),
		strings.HasSuffix(base, ".lock"),
		strings.HasPrefix(base, ".#"),
		len(base) > 2 && strings.HasPrefix(base, "#") && strings.HasSuffix(base, "#"):
		return true
	}
	return randomSuffix(base, "sed", 6) || randomSuffix(base, "tmp", 8)
}

// randomSuffix reports whether base is prefix followed by exactly n
// letters, digits or underscores.
func randomSuffix(base, prefix string, n int) bool {
	rest, ok := strings.CutPrefix(base, prefix)
	if !ok || len(rest) != n {
		return false
	}
	for _, r := range rest {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// Close uploads, as they are, the temporary files (see IsTempName) that were
// never renamed, so that nothing written through the mount is lost when it
// ends; call it after unmounting. It returns the first error and goes on
// with the others.
func (f *FS) Close(ctx context.Context) error {
	ctx = f.ctx(ctx)
	var first error
	for _, s := range f.stores {
		s.mu.Lock()
		for _, n := range s.open {
			n.mu.Lock()
			if n.local && n.id == "" && !n.unlinked && n.dirty {
				n.local = false
				if err := n.upload(ctx); err != nil && first == nil {
					first = pathErr("close", s.slug+"/"+n.path, err)
				}
			}
			n.mu.Unlock()
		}
		s.mu.Unlock()
	}
	return first
}
