// Package vfs presents memory stores as one file tree, for the FUSE adapter
// (fusefs) and for tests that need no kernel.
//
// # Tree
//
// The root of the tree is read-only and lists one directory per store, named
// by the store's slug (trove.Slug of its name, or the name the caller chose);
// with Config.Flat the root is the one store's directory itself.
// Below a store directory, a file is a memory: "notes/a.md" in store
// directory "s" is the memory with path "/notes/a.md". Directories are
// implied by the paths of the memories under them; mkdir creates an empty
// directory that lives only in this mount's memory until a file is written
// below it. A directory emptied by this mount (rm of its last file) stays, as
// POSIX expects, until rmdir.
//
// Names are slash-separated and relative: "" is the root, "s" a store
// directory, "s/notes/a.md" a file. Callers (fusefs) build them from base
// names, which never contain "/".
//
// # Writes: write-on-close
//
// The content of an open file is buffered in memory, once per file (every
// handle on the same name shares it). Write syscalls only change the buffer.
// Flush (close(2) of a descriptor) and Fsync of a file whose buffer changed
// upload it as ONE memory version: CreateMemory for a new file,
// UpdateMemory with the content SHA-256 the buffer was read from as the
// precondition otherwise. A file that never changed uploads nothing.
//
// Before an upload the buffer is checked: more than Limits.MaxContentBytes is
// refused at the write that crosses the limit (ErrTooLarge); bytes that are
// not UTF-8 fail the close (ErrNotUTF8). The store is unchanged in both
// cases: the changes are dropped at that close or fsync, which returns the
// error, so the file shows the store's content again; a new file disappears
// from the tree at once (not listed, not found), its still-open descriptors
// working on as after an unlink. A failure to reach the store
// (ErrUnavailable) keeps the changes buffered for the next close or fsync of
// a descriptor still open.
//
// Shells and many programs ignore the result of close, so a refusal at a
// close of a file that stays in the tree (an existing memory) is reported
// once more by the next Fsync of that file (sync FILE), if nothing else
// saved or moved it meanwhile; a refused new file is simply gone. Every
// refusal is also passed to Config.OnRefused.
//
// Unlink deletes the memory at once, with the content hash this mount knows
// as precondition (ErrStale if another writer changed it meanwhile); rmdir
// of a directory with entries fails with ErrNotEmpty.
//
// # Lost races: conflict copies
//
// When the precondition fails (another writer changed or deleted the memory
// since this mount read it), or a new file's path was taken meanwhile, the
// other writer keeps the path and the written bytes are saved as a new memory
// next to it, named
//
//	<stem>.conflict-<id8>-<yyyymmddThhmmssZ><ext>
//
// where id8 is the last 8 characters of the writing actor's ID (the session
// for a session credential) and the time is the UTC time of the close (a
// name too long for a local file system gets a shortened stem; see
// storetree.ConflictName). The
// close or fsync then fails with ErrStale (ESTALE), so a careful writer
// learns about it at once, and no byte is lost. The open file keeps the
// writer's bytes and is re-based on the winner's version: writing again and
// closing replaces the winner's content (the writer was told). A conflict
// copy is a memory like any other; nothing removes it automatically.
//
// # Renames
//
// Renaming a file changes the memory's path (same ID, history kept). Renaming
// a directory renames every memory below it through storetree: in one
// transaction when the services offer trove.DirectoryService (all or
// nothing), otherwise one UpdateMemory each, not atomic: when one of them
// fails, the ones already moved are moved back (best effort) and the rename
// fails; other mounts may see the move half-done while it runs.
//
// Rename over an existing file (the editor pattern: write a temporary file,
// then rename it over the original) writes the source's content into the
// target memory as one OpModified version (the target keeps its ID and
// history, with the target's content hash as precondition), then deletes the
// source memory if it had one. The two steps are not atomic: if the delete
// fails, both paths hold the new content and rename reports the error.
//
// # Temporary files
//
// A new file whose name looks temporary (IsTempName: sed's "sedXXXXXX",
// "*.tmp", "*~", "*.swp", "*.lock", emacs's "#*#", ...) is not uploaded at
// close: it lives in this mount only (listed, readable, UTF-8 checked at
// close) until it is renamed. Renamed over an existing file, it becomes that
// memory's one modified version and never appears in the store's history;
// renamed to a free regular name, it is created there as one version. So
// "sed -i", editors and atomic-write libraries leave exactly one version of
// the file they edit. Such a file never renamed is uploaded under its own
// name by FS.Close (call it after unmounting); other mounts do not see it
// before that, and it is lost if the process dies first.
//
// # Freshness
//
// Each store's listing (paths, IDs, hashes, sizes, times) is cached and
// reloaded when it is older than Config.Refresh, so other writers' changes
// appear within that bound. (When listing a store takes longer than half the
// bound, as for a large store over a slow link, the bound stretches to twice
// the listing's duration, so that the mount does not spend all its time
// listing.) File content is read from the store at the first
// read or write of an opened file (and kept while any handle is open), unless
// a content cache keyed by SHA-256 holds the listed hash already.
//
// # Concurrency
//
// Every method is safe for concurrent use. Operations on one store are
// serialized (one mutex per store, held across service calls); reads and
// writes of an open file's buffer take only that file's lock.
package vfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/trovehq/trove"
)

// DefaultRefresh is the listing cache bound used when Config.Refresh is 0.
const DefaultRefresh = time.Second

// Config configures a tree of stores.
type Config struct {
	// Services reaches the stores: a core.Service or an httpapi.Client.
	Services trove.Services
	// Principal is put in the context of every service call when the
	// caller's context carries none; nil uses the principal of New's ctx.
	Principal *trove.Principal
	// Stores are the store directories, in the order given.
	Stores []StoreConfig
	// Refresh bounds how stale a store listing may get (DefaultRefresh if 0).
	Refresh time.Duration
	// Now is the clock (time.Now if nil).
	Now func() time.Time
	// Limits are the store limits (trove.DefaultLimits() if zero).
	Limits trove.Limits
	// Logger receives what cannot be returned (nil: discarded).
	Logger *slog.Logger
	// Flat makes the single store of Stores the root of the tree (no store
	// directory level): for mounting one store at a directory of its own.
	Flat bool
	// OnRefused, if set, is called for every change the store refuses for
	// good at a close, fsync or last release (too large, not UTF-8, store
	// full, bad path): storeID, the memory path ("/a/b.md") and a reason
	// for a person. It runs with the store's lock held: it must return
	// quickly and must not use the FS.
	OnRefused func(storeID, path, reason string)
	// OnHidden, if set, is called once per path for every store path a
	// directory listing leaves out because it cannot be a local file name
	// (a segment over 255 bytes, storetree.LocalProblem), with the memory
	// path (of the file, or of the directory holding the memories below it)
	// and the reason. Such paths are also logged; they stay in the store.
	OnHidden func(storeID, path, reason string)
	// CacheBytes bounds the content cache (DefaultCacheBytes if 0; <0
	// disables it). Contents are cached by SHA-256, so opening a file whose
	// listed hash is cached reads nothing from the store.
	CacheBytes int
}

// DefaultCacheBytes is the content cache size used when Config.CacheBytes is 0.
const DefaultCacheBytes = 32 << 20

// StoreConfig is one store directory.
type StoreConfig struct {
	StoreID string
	// Name is the directory name; "" means trove.Slug of the store's name,
	// with "-" and the end of the store ID appended if two stores collide.
	Name string
	// ReadOnly makes every mutation below the directory fail with
	// ErrReadOnly (and the modes 0444/0555), whatever the credential allows.
	ReadOnly bool
}

// Attr describes one entry of the tree.
type Attr struct {
	Name     string // base name; "" for the root
	Dir      bool
	Size     int64
	Mode     fs.FileMode // permission bits, plus fs.ModeDir for directories
	ModTime  time.Time
	Nlink    uint32
	MemoryID string // "" for directories and files not uploaded yet
}

// FS is a tree of stores. Create it with New.
type FS struct {
	svc       trove.Services
	principal *trove.Principal
	refresh   time.Duration
	now       func() time.Time
	limits    trove.Limits
	log       *slog.Logger
	started   time.Time
	stores    []*store
	bySlug    map[string]*store
	cache     *contentCache
	flat      bool
	onRefused func(storeID, path, reason string)
	onHidden  func(storeID, path, reason string)
}

// New checks that every store exists (ENOTFOUND becomes ErrNotExist),
// resolves the directory names and returns the tree. ctx carries the
// principal used for later calls unless cfg.Principal is set.
func New(ctx context.Context, cfg Config) (*FS, error) {
	if cfg.Services == nil {
		return nil, errors.New("vfs: Config.Services is nil")
	}
	f := &FS{
		svc:       cfg.Services,
		principal: cfg.Principal,
		refresh:   cfg.Refresh,
		now:       cfg.Now,
		limits:    cfg.Limits,
		log:       cfg.Logger,
		bySlug:    map[string]*store{},
		onRefused: cfg.OnRefused,
		onHidden:  cfg.OnHidden,
	}
	if f.principal == nil {
		f.principal = trove.PrincipalFrom(ctx)
	}
	if f.refresh <= 0 {
		f.refresh = DefaultRefresh
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.limits.MaxContentBytes == 0 {
		f.limits = trove.DefaultLimits()
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	switch {
	case cfg.CacheBytes == 0:
		f.cache = newContentCache(DefaultCacheBytes)
	case cfg.CacheBytes > 0:
		f.cache = newContentCache(cfg.CacheBytes)
	}
	f.started = f.now().UTC()
	if cfg.Flat && len(cfg.Stores) != 1 {
		return nil, fmt.Errorf("vfs: Config.Flat needs exactly one store, got %d", len(cfg.Stores))
	}
	f.flat = cfg.Flat
	ctx = f.ctx(ctx)
	for _, sc := range cfg.Stores {
		s, err := f.svc.GetStore(ctx, sc.StoreID)
		if err != nil {
			return nil, fmt.Errorf("vfs: store %q: %w", sc.StoreID, storeErr(err))
		}
		name := sc.Name
		if name == "" {
			name = trove.Slug(s.Name)
			if _, dup := f.bySlug[name]; dup {
				tail := s.ID
				if len(tail) > 6 {
					tail = tail[len(tail)-6:]
				}
				name += "-" + strings.ToLower(tail)
			}
		}
		if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			return nil, fmt.Errorf("vfs: bad directory name %q for store %s", name, s.ID)
		}
		if _, dup := f.bySlug[name]; dup {
			return nil, fmt.Errorf("vfs: two stores would share the directory %q", name)
		}
		st := newStore(f, s.ID, name, sc.ReadOnly)
		f.stores = append(f.stores, st)
		f.bySlug[name] = st
	}
	return f, nil
}

// Refresh returns the listing cache bound.
func (f *FS) Refresh() time.Duration { return f.refresh }

// ReadOnly reports whether nothing in the tree can be written: every store
// is read-only (the root always is).
func (f *FS) ReadOnly() bool {
	for _, s := range f.stores {
		if !s.ro {
			return false
		}
	}
	return true
}

// StoreDirs returns the store directory names, in configuration order, with
// their store IDs.
func (f *FS) StoreDirs() map[string]string {
	out := map[string]string{}
	for _, s := range f.stores {
		out[s.slug] = s.id
	}
	return out
}

// ctx returns ctx carrying the configured principal if it carries none.
func (f *FS) ctx(ctx context.Context) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	if f.principal != nil && trove.PrincipalFrom(ctx) == nil {
		ctx = trove.WithPrincipal(ctx, f.principal)
	}
	return ctx
}

// resolve splits name into its store and the path inside it ("" for the
// store directory itself). st is nil for the root. ErrNotExist for an
// unknown store directory; ErrInvalid for a name that is not clean.
//
// Names are taken in Unicode NFC, as store paths are: a name in another
// form (macOS spells "é" as "e" and a combining accent, NFD) names the
// memory whose path is its NFC form, so it is found, created and renamed
// as that one rather than refused.
func (f *FS) resolve(name string) (st *store, rel string, err error) {
	name = norm.NFC.String(name)
	if name == "" {
		if f.flat {
			return f.stores[0], "", nil
		}
		return nil, "", nil
	}
	if name != path.Clean(name) || strings.HasPrefix(name, "/") || name == "." || strings.HasPrefix(name, "../") || name == ".." {
		return nil, "", ErrInvalid
	}
	if f.flat {
		return f.stores[0], name, nil
	}
	slug, rel, _ := strings.Cut(name, "/")
	st = f.bySlug[slug]
	if st == nil {
		return nil, "", ErrNotExist
	}
	return st, rel, nil
}

func (f *FS) rootAttr() Attr {
	return Attr{Dir: true, Mode: fs.ModeDir | 0o555, ModTime: f.started, Nlink: uint32(2 + len(f.stores))}
}

// Stat describes name. ErrNotExist if it does not exist, ErrNotDir if a
// parent is a file.
func (f *FS) Stat(ctx context.Context, name string) (Attr, error) {
	st, rel, err := f.resolve(name)
	if err != nil {
		return Attr{}, pathErr("stat", name, err)
	}
	if st == nil {
		return f.rootAttr(), nil
	}
	a, err := st.stat(f.ctx(ctx), rel)
	return a, pathErr("stat", name, err)
}

// ReadDir lists the directory name, sorted by name. ErrNotDir for a file.
func (f *FS) ReadDir(ctx context.Context, name string) ([]Attr, error) {
	st, rel, err := f.resolve(name)
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	if st == nil {
		out := make([]Attr, 0, len(f.stores))
		for _, s := range f.stores {
			out = append(out, s.rootAttr())
		}
		sortAttrs(out)
		return out, nil
	}
	out, err := st.readDir(f.ctx(ctx), rel)
	return out, pathErr("readdir", name, err)
}

// Mkdir creates an empty directory, held in this mount's memory until a
// file is written below it. ErrExist if name exists, ErrNotExist if its
// parent does not, ErrReadOnly in the root or a read-only store, ErrInvalid
// for a name the path rules refuse.
func (f *FS) Mkdir(ctx context.Context, name string) error {
	st, rel, err := f.resolve(name)
	switch {
	case err == nil && st == nil:
		err = ErrExist // the root
	case err == nil && rel == "":
		err = ErrExist // a store directory
	case errors.Is(err, ErrNotExist):
		err = ErrReadOnly // a new directory in the root
	case err == nil:
		err = st.mkdir(f.ctx(ctx), rel)
	}
	return pathErr("mkdir", name, err)
}

// Rmdir removes an empty directory. ErrNotEmpty if it has entries,
// ErrNotDir for a file, ErrReadOnly for the root, a store directory or in a
// read-only store.
func (f *FS) Rmdir(ctx context.Context, name string) error {
	st, rel, err := f.resolve(name)
	if err == nil && (st == nil || rel == "") {
		err = ErrReadOnly
	}
	if err == nil {
		err = st.rmdir(f.ctx(ctx), rel)
	}
	return pathErr("rmdir", name, err)
}

// Remove unlinks the file name: its memory is deleted at once (with the
// content hash this mount knows as precondition: ErrStale if it changed
// meanwhile). Open handles keep working on their buffer but upload nothing.
// ErrIsDir for a directory.
func (f *FS) Remove(ctx context.Context, name string) error {
	st, rel, err := f.resolve(name)
	if err == nil && (st == nil || rel == "") {
		err = ErrReadOnly
	}
	if err == nil {
		err = st.remove(f.ctx(ctx), rel)
	}
	return pathErr("unlink", name, err)
}

// Rename moves oldName to newName within one store (see the package
// documentation for files, directories and rename-over). ErrCrossStore
// between stores, ErrReadOnly for the root or store directories, ErrIsDir /
// ErrNotDir / ErrNotEmpty as rename(2), ErrInvalid for a directory moved
// into itself.
func (f *FS) Rename(ctx context.Context, oldName, newName string) error {
	err := f.rename(ctx, oldName, newName)
	if err != nil {
		return &fs.PathError{Op: "rename", Path: oldName + " -> " + newName, Err: err}
	}
	return nil
}

func (f *FS) rename(ctx context.Context, oldName, newName string) error {
	st1, rel1, err := f.resolve(oldName)
	if err != nil {
		return err
	}
	st2, rel2, err := f.resolve(newName)
	if err != nil {
		if errors.Is(err, ErrNotExist) && st1 != nil {
			return ErrReadOnly // a new name in the root
		}
		return err
	}
	if st1 == nil || st2 == nil || rel1 == "" || rel2 == "" {
		return ErrReadOnly
	}
	if st1 != st2 {
		return ErrCrossStore
	}
	return st1.rename(f.ctx(ctx), rel1, rel2)
}

// Truncate sets the size of the file name (truncate(2) without a
// descriptor). If a descriptor of the file is open and not closed yet, the
// change joins its buffer and is uploaded at its close (the kernel truncates
// this way for open(O_TRUNC)); otherwise the result is uploaded at once as
// one version. ErrTooLarge beyond the content limit; ErrStale when the
// upload lost a race (see Handle.Flush).
func (f *FS) Truncate(ctx context.Context, name string, size int64) error {
	st, rel, err := f.resolve(name)
	if err == nil && (st == nil || rel == "") {
		err = ErrIsDir
	}
	if err == nil {
		err = st.truncate(f.ctx(ctx), rel, size)
	}
	return pathErr("truncate", name, err)
}

// Open opens the file name with os.OpenFile flags (O_RDONLY, O_WRONLY,
// O_RDWR, O_CREATE, O_EXCL, O_TRUNC, O_APPEND). A new file exists in this
// mount at once and becomes a memory at its first close. ErrNotExist without
// O_CREATE, ErrExist with O_EXCL, ErrIsDir for a directory, ErrReadOnly for a
// write in a read-only store or the root.
func (f *FS) Open(ctx context.Context, name string, flags int) (*Handle, error) {
	st, rel, err := f.resolve(name)
	if err == nil && (st == nil || rel == "") {
		err = ErrIsDir
	}
	if err != nil {
		if errors.Is(err, ErrNotExist) && flags&oCreate != 0 {
			err = ErrReadOnly
		}
		return nil, pathErr("open", name, err)
	}
	h, err := st.openFile(f.ctx(ctx), rel, flags)
	return h, pathErr("open", name, err)
}
