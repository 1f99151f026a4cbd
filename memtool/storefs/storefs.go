// Package storefs is the memory tool's backend over a Trove memory store: it
// implements memtool.FS on the trove.Services interfaces for one store, so
// the same code runs on a local database (core.Service) or a remote server
// (httpapi.Client).
//
// Mapping. The tool path /memories/a/b.md is the memory path /a/b.md.
// Directories are implied by the paths of the memories below them; the store
// cannot hold an empty directory, so the directories a backend instance saw
// become empty (the parent of a deleted or renamed memory) are remembered in
// memory by that instance and shown to the engine until a memory appears at
// or above them. Another instance (another agent) does not see them, and they
// are gone when the process ends: they hold no data.
//
// Writes. Every write is exactly one memory version, attributed to the
// principal carried by the context (trove.WithPrincipal for core.Service;
// the credential for httpapi.Client). A replacing write sends the SHA-256 the
// engine read as the content_sha256 precondition, so two agents editing one
// memory never silently overwrite each other: the loser gets
// memtool.ErrConflict, and the engine re-applies its str_replace or insert
// on the fresh content when the edit still applies cleanly
// (memtool.Options.EditAttempts).
//
// Cost. The FS sees the store through a storetree.Tree, whose path → ID
// index is kept true by what the FS's own calls return. A read of a memory
// whose ID is indexed is one GetMemory; a replacing write of it is one
// conditional UpdateMemory, so a str_replace or insert costs one read and
// one write. (The write goes to the memory that was read, by ID: if another
// agent renamed it in between without changing its content, the edit
// follows it.) An unknown name first lists its parent directory.
//
// Copies. The FS keeps a copy of the content it last read or wrote of each
// memory (up to Options.CopyBytes in all) and hands it to the engine's
// edits (memtool.CopyFS) while the index says the memory still has that
// content's SHA-256, so a str_replace or insert after a view, a create or
// another edit of the same memory is one conditional UpdateMemory. The
// precondition is the copy's SHA-256, checked against the stored content
// by the store: a copy that another writer made stale is refused, and the
// engine reads the memory afresh.
//
// Directory operations. Deleting a directory deletes every memory below it
// and renaming a directory renames every memory below it (a path update, so
// each memory keeps its ID and history), in one transaction when the
// services offer trove.DirectoryService, otherwise one memory at a time (see
// storetree).
package storefs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/storetree"
)

// FS is a memtool.FS over one memory store. It is safe for concurrent use.
// Create it with New.
type FS struct {
	t         *storetree.Tree
	principal *trove.Principal

	mu        sync.Mutex
	copies    map[string]fileCopy // memory ID → its content as last read or written
	copyBytes int64               // content bytes in copies
	maxCopy   int64               // cap on copyBytes
}

// fileCopy is a memory's content and its SHA-256.
type fileCopy struct {
	sha     string
	content string
}

// DefaultCopyBytes is how much memory content an FS keeps as copies for
// edits by default.
const DefaultCopyBytes = 8 << 20

// Options configure an FS.
type Options struct {
	// Limits gives the path limits names are checked against before they
	// reach the store; the zero value means trove.DefaultLimits().
	Limits trove.Limits
	// Principal, when set, is put in the context of every call whose context
	// carries none: a local core.Service needs one to know the workspace and
	// to attribute versions. A remote httpapi.Client ignores it (its
	// credential decides).
	Principal *trove.Principal
	// CopyBytes caps the content the FS keeps as copies for edits (see
	// "Copies" above); 0 means DefaultCopyBytes, negative keeps none.
	CopyBytes int64
}

// New returns an FS over the store storeID reached through svc. It does not
// contact the store; a missing store shows up as errors from the first call.
func New(svc trove.Services, storeID string, opt Options) *FS {
	if opt.CopyBytes == 0 {
		opt.CopyBytes = DefaultCopyBytes
	}
	return &FS{t: storetree.New(svc, storeID, opt.Limits), principal: opt.Principal,
		copies: map[string]fileCopy{}, maxCopy: max(opt.CopyBytes, 0)}
}

// keep records content as the copy of memory m, which a read or a write
// returned, when it is the content m's SHA-256 names (else m's copy is
// dropped: the copy must be the stored bytes). Other copies are dropped
// while the copies hold more than the cap.
func (f *FS) keep(m *trove.Memory, content string) {
	sum := sha256.Sum256([]byte(content))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropCopyLocked(m.ID)
	if hex.EncodeToString(sum[:]) != m.SHA256 || int64(len(content)) > f.maxCopy {
		return
	}
	f.copies[m.ID] = fileCopy{sha: m.SHA256, content: content}
	f.copyBytes += int64(len(content))
	for id, c := range f.copies {
		if f.copyBytes <= f.maxCopy {
			break
		}
		if id != m.ID {
			f.copyBytes -= int64(len(c.content))
			delete(f.copies, id)
		}
	}
}

// dropCopyLocked forgets the copy of memory id. f.mu held.
func (f *FS) dropCopyLocked(id string) {
	if c, ok := f.copies[id]; ok {
		f.copyBytes -= int64(len(c.content))
		delete(f.copies, id)
	}
}

// Copy returns the FS's copy of the memory at name and its SHA-256 as the
// Version, when the index holds that memory with that SHA-256
// (memtool.CopyFS). It does no I/O.
func (f *FS) Copy(name string) ([]byte, memtool.Version, bool) {
	if name == "" || f.validName(name) != nil {
		return nil, "", false
	}
	e, ok := f.t.Cached(memPath(name))
	if !ok {
		return nil, "", false
	}
	f.mu.Lock()
	c, ok := f.copies[e.ID]
	f.mu.Unlock()
	if !ok || c.sha != e.SHA256 {
		return nil, "", false
	}
	return []byte(c.content), memtool.Version(c.sha), true
}

// with returns ctx with the FS's principal when ctx has none.
func (f *FS) with(ctx context.Context) context.Context {
	if f.principal != nil && trove.PrincipalFrom(ctx) == nil {
		return trove.WithPrincipal(ctx, f.principal)
	}
	return ctx
}

// StoreID returns the store the FS is bound to.
func (f *FS) StoreID() string { return f.t.StoreID() }

var _ memtool.CopyFS = (*FS)(nil)

// memPath maps an engine name ("a/b.md", "" for the root) to a memory path.
var memPath = storetree.MemPath

// validName reports whether name can be a memory path at all (the store's
// rules are stricter than the engine's: NFC, no format characters, at most
// 20 segments).
func (f *FS) validName(name string) error { return f.t.ValidPath(memPath(name)) }

// storeError wraps a store error with the operation that failed (for logs).
type storeError struct {
	op  string
	err error
}

func (e *storeError) Error() string { return "storefs: " + e.op + ": " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// refusedBy names the store in the model's message for a refusal.
const refusedBy = "memory store"

// fail wraps a store error from op. A refusal the model can act on (an
// invalid path or content, an archived store, a limit, missing access, a
// store that does not exist) becomes a *memtool.Refusal carrying the store's
// client-safe message; anything else (unavailable, internal) stays an
// opaque error, which the model sees as a generic storage error.
func (f *FS) fail(op string, err error) error {
	se := &storeError{op: op, err: err}
	var te *trove.Error
	if errors.As(err, &te) {
		switch te.Code {
		case trove.EINVALID, trove.EFORBIDDEN, trove.ETOOLARGE, trove.ENOTFOUND, trove.EUNAUTHENTICATED:
			return &memtool.Refusal{By: refusedBy, Message: te.Message, Err: se}
		}
	}
	return se
}

// lookup returns the live memory at name, or nil if none. With content it
// returns the memory with its content.
func (f *FS) lookup(ctx context.Context, name string, content bool) (*trove.Memory, error) {
	m, err := f.t.Lookup(ctx, memPath(name), view(content))
	if err != nil {
		return nil, f.fail("lookup", err)
	}
	return m, nil
}

// view is the view a read with or without content asks for.
func view(content bool) trove.View {
	if content {
		return trove.ViewFull
	}
	return trove.ViewBasic
}

// classify returns what name is (storetree.Tree.Classify), with the memory
// (content filled when content is set) for a file.
func (f *FS) classify(ctx context.Context, name string, content bool) (storetree.Kind, *trove.Memory, error) {
	k, m, err := f.t.Classify(ctx, memPath(name), view(content))
	var ce *storetree.ClassifyError
	if errors.As(err, &ce) {
		op := "lookup"
		if ce.Listing {
			op = "list memories"
		}
		return k, nil, f.fail(op, ce.Err)
	}
	return k, m, err
}

// ---- memtool.FS ----

// Stat describes name: KindFile with the content size for a memory,
// KindDir for the root, a path prefix of some memory or a remembered empty
// directory. It returns memtool.ErrNotExist (also for names the store could
// never hold) or memtool.ErrNotDir when a parent is a memory.
func (f *FS) Stat(ctx context.Context, name string) (memtool.Info, error) {
	ctx = f.with(ctx)
	k, m, err := f.classify(ctx, name, false)
	if err != nil {
		return memtool.Info{}, err
	}
	switch k {
	case storetree.KindFile:
		return memtool.Info{Name: name, Kind: memtool.KindFile, Size: int64(m.SizeBytes)}, nil
	case storetree.KindDir:
		return memtool.Info{Name: name, Kind: memtool.KindDir}, nil
	case storetree.KindNotDir:
		return memtool.Info{}, memtool.ErrNotDir
	}
	return memtool.Info{}, memtool.ErrNotExist
}

// ReadDir lists the direct children of the directory name: memories as
// files, folded path prefixes and remembered empty directories as
// directories. It returns memtool.ErrNotExist or memtool.ErrNotDir.
func (f *FS) ReadDir(ctx context.Context, name string) ([]memtool.Info, error) {
	ctx = f.with(ctx)
	if name != "" && f.validName(name) != nil {
		return nil, memtool.ErrNotExist
	}
	var out []memtool.Info
	seen := map[string]bool{}
	err := f.t.List(ctx, memPath(name), 1, trove.ViewBasic, func(it trove.MemoryListItem) bool {
		switch {
		case it.Memory != nil:
			b := storetree.Base(it.Memory.Path)
			seen[b] = true
			out = append(out, memtool.Info{Name: b, Kind: memtool.KindFile, Size: int64(it.Memory.SizeBytes)})
		case it.Prefix != nil:
			b := storetree.Base(strings.TrimSuffix(it.Prefix.Path, "/"))
			seen[b] = true
			out = append(out, memtool.Info{Name: b, Kind: memtool.KindDir})
		}
		return true
	})
	if err != nil {
		return nil, f.fail("list memories", err)
	}
	if len(out) == 0 && name != "" {
		k, _, err := f.classify(ctx, name, false)
		if err != nil {
			return nil, err
		}
		switch k {
		case storetree.KindFile, storetree.KindNotDir:
			return nil, memtool.ErrNotDir
		case storetree.KindNone, storetree.KindInvalid:
			return nil, memtool.ErrNotExist
		}
	}
	for _, b := range f.t.RememberedIn(memPath(name)) {
		if !seen[b] {
			out = append(out, memtool.Info{Name: b, Kind: memtool.KindDir})
		}
	}
	return out, nil
}

// ReadFile returns the content of the memory at name and its SHA-256 as the
// Version: one GetMemory when the name's ID is indexed. It returns
// memtool.ErrTooLarge when the content is larger than maxBytes
// (maxBytes >= 0), memtool.ErrIsDir for a directory, memtool.ErrNotDir or
// memtool.ErrNotExist.
func (f *FS) ReadFile(ctx context.Context, name string, maxBytes int64) ([]byte, memtool.Version, error) {
	ctx = f.with(ctx)
	if name != "" && f.validName(name) != nil {
		return nil, "", memtool.ErrNotExist
	}
	k, m, err := f.classify(ctx, name, true)
	if err != nil {
		return nil, "", err
	}
	switch k {
	case storetree.KindFile:
		if maxBytes >= 0 && int64(m.SizeBytes) > maxBytes {
			return nil, "", memtool.ErrTooLarge
		}
		f.keep(m, *m.Content)
		return []byte(*m.Content), memtool.Version(m.SHA256), nil
	case storetree.KindDir:
		return nil, "", memtool.ErrIsDir
	case storetree.KindNotDir:
		return nil, "", memtool.ErrNotDir
	}
	return nil, "", memtool.ErrNotExist
}

// WriteFile writes one memory version. With ifMatch == "" it creates the
// memory (memtool.ErrExist if name is a memory or a directory,
// memtool.ErrNotDir if a parent is a memory); otherwise it updates the
// memory's content with ifMatch as the content_sha256 precondition — one
// UpdateMemory when the name's ID is indexed (memtool.ErrConflict if the
// content changed or the memory is gone, memtool.ErrIsDir for a directory).
// Other store refusals (archived store, memory limit, invalid path or
// content, read-only access) are returned as a *memtool.Refusal wrapping
// the *trove.Error.
func (f *FS) WriteFile(ctx context.Context, name string, data []byte, ifMatch memtool.Version) (memtool.Version, error) {
	ctx = f.with(ctx)
	if name == "" {
		if ifMatch == "" {
			return "", memtool.ErrExist
		}
		return "", memtool.ErrIsDir
	}
	if err := f.validName(name); err != nil {
		return "", f.fail("write", err)
	}
	if !utf8.Valid(data) {
		// Checked here, not only by the store: over HTTP the JSON encoding
		// would silently replace the invalid bytes with U+FFFD and store
		// different content.
		return "", f.fail("write", trove.Errorf(trove.EINVALID, "content must be valid UTF-8 text"))
	}
	content := string(data)
	p := memPath(name)
	if ifMatch == "" {
		if f.t.IsRemembered(p) {
			if k, _, err := f.classify(ctx, name, false); err != nil {
				return "", err
			} else if k == storetree.KindDir {
				return "", memtool.ErrExist
			}
		}
		m, err := f.t.Create(ctx, p, content)
		if err != nil {
			return "", f.pathConflict(ctx, "create", name, err)
		}
		f.clearAbove(p)
		f.keep(m, content)
		return memtool.Version(m.SHA256), nil
	}
	if !isSHA256(string(ifMatch)) {
		// Not a version this FS handed out: it cannot match any content.
		return "", memtool.ErrConflict
	}
	e, ok := f.t.Cached(p)
	if !ok {
		m, err := f.lookup(ctx, name, false)
		if err != nil {
			return "", err
		}
		if m == nil {
			k, _, err := f.classify(ctx, name, false)
			if err != nil {
				return "", err
			}
			if k == storetree.KindDir {
				return "", memtool.ErrIsDir
			}
			return "", memtool.ErrConflict
		}
		e = *m
	}
	u, err := f.t.Update(ctx, e.ID, trove.UpdateMemoryParams{Content: &content, PreconditionSHA256: string(ifMatch)})
	switch trove.ErrorCode(err) {
	case "":
	case trove.EPRECONDITION, trove.ENOTFOUND:
		f.t.Forget(e.ID)
		return "", memtool.ErrConflict
	default:
		return "", f.fail("update", err)
	}
	f.keep(u, content)
	return memtool.Version(u.SHA256), nil
}

// isSHA256 reports whether s is 64 lowercase hex digits, the only form the
// store's precondition takes.
func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// clearAbove forgets remembered empty directories that the memory at p
// makes implied (above it) or impossible (at or below it).
func (f *FS) clearAbove(p string) {
	f.t.ForgetAbove(p)
	f.t.ForgetTree(p)
}

// pathConflict maps a create or rename error at name: EPATHCONFLICT with
// name or a descendant means name exists (memtool.ErrExist), with an
// ancestor that a parent is a file (memtool.ErrNotDir).
func (f *FS) pathConflict(ctx context.Context, op, name string, err error) error {
	var te *trove.Error
	if !errors.As(err, &te) || te.Code != trove.EPATHCONFLICT {
		return f.fail(op, err)
	}
	p := memPath(name)
	if te.ConflictingPath != "" && storetree.IsBelow(p, te.ConflictingPath) {
		return memtool.ErrNotDir
	}
	if te.ConflictingPath == "" {
		// No detail (should not happen): decide by looking.
		if k, _, cerr := f.classify(ctx, name, false); cerr == nil && k == storetree.KindNotDir {
			return memtool.ErrNotDir
		}
	}
	return memtool.ErrExist
}

// Remove deletes the memory at name, or every memory below the directory
// name (no precondition: delete is unconditional in the memory tool). The
// parent directory stays visible to this instance. It returns
// memtool.ErrNotExist or memtool.ErrNotDir.
func (f *FS) Remove(ctx context.Context, name string) error {
	ctx = f.with(ctx)
	if name == "" {
		return memtool.ErrNotExist
	}
	k, m, err := f.classify(ctx, name, false)
	if err != nil {
		return err
	}
	p := memPath(name)
	switch k {
	case storetree.KindFile:
		f.mu.Lock()
		f.dropCopyLocked(m.ID)
		f.mu.Unlock()
		if err := f.t.Delete(ctx, m.ID, ""); err != nil {
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				return memtool.ErrNotExist
			}
			return f.fail("delete", err)
		}
		f.t.RememberParents(p)
		return nil
	case storetree.KindDir:
		if _, err := f.t.DeleteDir(ctx, p); err != nil {
			return f.fail("delete", err)
		}
		f.t.RememberParents(p)
		return nil
	case storetree.KindNotDir:
		return memtool.ErrNotDir
	}
	return memtool.ErrNotExist
}

// Rename moves the memory at oldname, or every memory below the directory
// oldname, to newname by path updates (each memory keeps its ID and version
// history; no new content). It returns memtool.ErrExist if newname exists,
// memtool.ErrNotExist if oldname does not, memtool.ErrNotDir if a parent of
// newname is a memory.
func (f *FS) Rename(ctx context.Context, oldname, newname string) error {
	ctx = f.with(ctx)
	if oldname == "" || newname == "" {
		return memtool.ErrExist
	}
	if err := f.validName(newname); err != nil {
		if ok, _, _ := f.classify(ctx, oldname, false); ok == storetree.KindNone || ok == storetree.KindInvalid {
			return memtool.ErrNotExist
		}
		return f.fail("rename", err)
	}
	nk, _, err := f.classify(ctx, newname, false)
	if err != nil {
		return err
	}
	switch nk {
	case storetree.KindFile, storetree.KindDir:
		return memtool.ErrExist
	case storetree.KindNotDir:
		return memtool.ErrNotDir
	}
	ok, m, err := f.classify(ctx, oldname, false)
	if err != nil {
		return err
	}
	oldP, newP := memPath(oldname), memPath(newname)
	switch ok {
	case storetree.KindFile:
		if _, err := f.t.Update(ctx, m.ID, trove.UpdateMemoryParams{Path: &newP}); err != nil {
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				return memtool.ErrNotExist
			}
			return f.pathConflict(ctx, "rename", newname, err)
		}
		f.t.RememberParents(oldP)
		f.clearAbove(newP)
		return nil
	case storetree.KindDir:
		moved, err := f.t.RenameDir(ctx, oldP, newP)
		if err != nil {
			return f.pathConflict(ctx, "rename", newname, err)
		}
		if len(moved) == 0 {
			f.t.RememberDir(newP)
		}
		f.t.RememberParents(oldP)
		f.t.ForgetAbove(newP)
		return nil
	}
	return memtool.ErrNotExist
}

// String describes the FS for logs.
func (f *FS) String() string { return fmt.Sprintf("storefs(%s)", f.t.StoreID()) }
