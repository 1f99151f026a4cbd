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
// Directory operations. Deleting a directory deletes every memory below it
// and renaming a directory renames every memory below it (a path update, so
// each memory keeps its ID and history). The store has no multi-memory
// transaction, so these run one memory at a time: a concurrent writer may
// observe the intermediate state, and a failed directory rename moves back
// the memories it had already moved.
package storefs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
)

// FS is a memtool.FS over one memory store. It is safe for concurrent use.
// Create it with New.
type FS struct {
	svc       trove.Services
	storeID   string
	limits    trove.Limits
	principal *trove.Principal

	mu    sync.Mutex
	ids   map[string]string   // memory path → memory ID, a hint checked on every use
	empty map[string]struct{} // rel names of directories remembered as empty
}

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
}

// New returns an FS over the store storeID reached through svc. It does not
// contact the store; a missing store shows up as errors from the first call.
func New(svc trove.Services, storeID string, opt Options) *FS {
	if opt.Limits.MaxPathBytes == 0 {
		opt.Limits = trove.DefaultLimits()
	}
	return &FS{
		svc:       svc,
		storeID:   storeID,
		limits:    opt.Limits,
		principal: opt.Principal,
		ids:       map[string]string{},
		empty:     map[string]struct{}{},
	}
}

// with returns ctx with the FS's principal when ctx has none.
func (f *FS) with(ctx context.Context) context.Context {
	if f.principal != nil && trove.PrincipalFrom(ctx) == nil {
		return trove.WithPrincipal(ctx, f.principal)
	}
	return ctx
}

// StoreID returns the store the FS is bound to.
func (f *FS) StoreID() string { return f.storeID }

var _ memtool.FS = (*FS)(nil)

// memPath maps an engine name ("a/b.md", "" for the root) to a memory path.
func memPath(name string) string { return "/" + name }

// prefixOf is the list prefix of the directory name.
func prefixOf(name string) string {
	if name == "" {
		return "/"
	}
	return "/" + name + "/"
}

func parentOf(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

func baseOf(name string) string { return name[strings.LastIndexByte(name, '/')+1:] }

// validName reports whether name can be a memory path at all (the store's
// rules are stricter than the engine's: NFC, no format characters, at most
// 20 segments).
func (f *FS) validName(name string) error {
	return trove.ValidatePath(memPath(name), f.limits.MaxPathBytes, f.limits.MaxPathSegments)
}

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

// ---- lookups ----

// lookup returns the live memory at name, or nil if none. With content it
// returns the memory with its content.
func (f *FS) lookup(ctx context.Context, name string, content bool) (*trove.Memory, error) {
	p := memPath(name)
	view := trove.ViewBasic
	if content {
		view = trove.ViewFull
	}
	for attempt := 0; attempt < 3; attempt++ {
		f.mu.Lock()
		id, ok := f.ids[p]
		f.mu.Unlock()
		if !ok {
			var err error
			id, err = f.scanFor(ctx, name)
			if err != nil || id == "" {
				return nil, err
			}
		}
		m, err := f.svc.GetMemory(ctx, f.storeID, id, view)
		switch {
		case trove.ErrorCode(err) == trove.ENOTFOUND:
			f.forget(p, id)
			if ok {
				continue // stale hint: scan
			}
			continue // deleted between the scan and the read: scan again
		case err != nil:
			return nil, f.fail("get memory", err)
		case m.Path != p:
			f.forget(p, id) // renamed away
			f.remember(m.Path, m.ID)
			continue
		}
		return m, nil
	}
	return nil, f.fail("lookup", trove.Errorf(trove.EUNAVAILABLE, "the memory at %s kept changing while it was read", p))
}

func (f *FS) forget(p, id string) {
	f.mu.Lock()
	if f.ids[p] == id {
		delete(f.ids, p)
	}
	f.mu.Unlock()
}

func (f *FS) remember(p, id string) {
	f.mu.Lock()
	f.ids[p] = id
	f.mu.Unlock()
}

// scanFor lists the parent directory of name and returns the ID of the
// memory at name, or "" if there is none. Every memory seen is remembered.
func (f *FS) scanFor(ctx context.Context, name string) (string, error) {
	p := memPath(name)
	found := ""
	err := f.list(ctx, prefixOf(parentOf(name)), 1, func(it trove.MemoryListItem) bool {
		if it.Memory != nil && it.Memory.Path == p {
			found = it.Memory.ID
			return false
		}
		return true
	})
	return found, err
}

// list calls fn for every item of a listing until fn returns false.
func (f *FS) list(ctx context.Context, prefix string, depth int, fn func(trove.MemoryListItem) bool) error {
	cursor := ""
	for {
		page, err := f.svc.ListMemories(ctx, f.storeID, trove.ListMemoriesParams{
			PathPrefix: prefix, Depth: depth, Limit: f.limits.MaxPageSize, Cursor: cursor, View: trove.ViewBasic,
		})
		if err != nil {
			return f.fail("list memories", err)
		}
		for _, it := range page.Data {
			if it.Memory != nil {
				f.remember(it.Memory.Path, it.Memory.ID)
			}
			if !fn(it) {
				return nil
			}
		}
		if page.NextPage == "" {
			return nil
		}
		cursor = page.NextPage
	}
}

// hasChildren reports whether some memory lies below the directory name.
func (f *FS) hasChildren(ctx context.Context, name string) (bool, error) {
	page, err := f.svc.ListMemories(ctx, f.storeID, trove.ListMemoriesParams{
		PathPrefix: prefixOf(name), Depth: 1, Limit: 1, View: trove.ViewBasic,
	})
	if err != nil {
		return false, f.fail("list memories", err)
	}
	return len(page.Data) > 0, nil
}

// isRemembered reports whether name is a remembered empty directory.
func (f *FS) isRemembered(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.empty[name]
	return ok
}

// rememberEmpty records the ancestors of name (not the root) as directories
// that exist even when no memory is below them.
func (f *FS) rememberEmpty(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for d := parentOf(name); d != ""; d = parentOf(d) {
		f.empty[d] = struct{}{}
	}
}

// dropEmpty forgets name and every remembered directory below it.
func (f *FS) dropEmpty(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for d := range f.empty {
		if d == name || strings.HasPrefix(d, name+"/") {
			delete(f.empty, d)
		}
	}
}

// kind is what a name is in the store.
type kind int

const (
	kNone    kind = iota // nothing; parents are directories or absent
	kNotDir              // a parent is a file
	kFile                // a memory
	kDir                 // memories below it, or a remembered empty directory
	kInvalid             // not a valid memory path: cannot exist
)

// classify returns what name is, with the memory (content filled when
// content is set) for a file.
func (f *FS) classify(ctx context.Context, name string, content bool) (kind, *trove.Memory, error) {
	if name == "" {
		return kDir, nil, nil
	}
	if f.validName(name) != nil {
		return kInvalid, nil, nil
	}
	f.mu.Lock()
	_, cached := f.ids[memPath(name)]
	f.mu.Unlock()
	checkedDir := false
	if !cached {
		// Probably a directory or nothing: one cheap listing tells a
		// directory before scanning the parent for a file.
		dir, err := f.hasChildren(ctx, name)
		if err != nil {
			return kNone, nil, err
		}
		if dir {
			return kDir, nil, nil
		}
		checkedDir = true
	}
	m, err := f.lookup(ctx, name, content)
	if err != nil {
		return kNone, nil, err
	}
	if m != nil {
		return kFile, m, nil
	}
	if !checkedDir {
		dir, err := f.hasChildren(ctx, name)
		if err != nil {
			return kNone, nil, err
		}
		if dir {
			return kDir, nil, nil
		}
	}
	// Nothing at name. Is a parent a file?
	for a := parentOf(name); a != ""; a = parentOf(a) {
		am, err := f.lookup(ctx, a, false)
		if err != nil {
			return kNone, nil, err
		}
		if am != nil {
			f.dropEmpty(a)
			return kNotDir, nil, nil
		}
	}
	if f.isRemembered(name) {
		return kDir, nil, nil
	}
	return kNone, nil, nil
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
	case kFile:
		return memtool.Info{Name: name, Kind: memtool.KindFile, Size: int64(m.SizeBytes)}, nil
	case kDir:
		return memtool.Info{Name: name, Kind: memtool.KindDir}, nil
	case kNotDir:
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
	err := f.list(ctx, prefixOf(name), 1, func(it trove.MemoryListItem) bool {
		switch {
		case it.Memory != nil:
			b := baseOf(it.Memory.Path)
			seen[b] = true
			out = append(out, memtool.Info{Name: b, Kind: memtool.KindFile, Size: int64(it.Memory.SizeBytes)})
		case it.Prefix != nil:
			b := baseOf(strings.TrimSuffix(it.Prefix.Path, "/"))
			seen[b] = true
			out = append(out, memtool.Info{Name: b, Kind: memtool.KindDir})
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 && name != "" {
		k, _, err := f.classify(ctx, name, false)
		if err != nil {
			return nil, err
		}
		switch k {
		case kFile, kNotDir:
			return nil, memtool.ErrNotDir
		case kNone, kInvalid:
			return nil, memtool.ErrNotExist
		}
	}
	f.mu.Lock()
	for d := range f.empty {
		if parentOf(d) == name && !seen[baseOf(d)] {
			out = append(out, memtool.Info{Name: baseOf(d), Kind: memtool.KindDir})
		}
	}
	f.mu.Unlock()
	return out, nil
}

// ReadFile returns the content of the memory at name and its SHA-256 as the
// Version. It returns memtool.ErrTooLarge when the content is larger than
// maxBytes (maxBytes >= 0), memtool.ErrIsDir for a directory,
// memtool.ErrNotDir or memtool.ErrNotExist.
func (f *FS) ReadFile(ctx context.Context, name string, maxBytes int64) ([]byte, memtool.Version, error) {
	ctx = f.with(ctx)
	if name != "" && f.validName(name) != nil {
		return nil, "", memtool.ErrNotExist
	}
	if name != "" && maxBytes >= 0 && maxBytes < int64(f.limits.MaxContentBytes) {
		// Check the size first so that a memory over the limit is not
		// transferred (no memory can exceed the store's content limit).
		m, err := f.lookup(ctx, name, false)
		if err != nil {
			return nil, "", err
		}
		if m != nil && maxBytes >= 0 && int64(m.SizeBytes) > maxBytes {
			return nil, "", memtool.ErrTooLarge
		}
	}
	k, m, err := f.classify(ctx, name, true)
	if err != nil {
		return nil, "", err
	}
	switch k {
	case kFile:
		if maxBytes >= 0 && int64(m.SizeBytes) > maxBytes {
			return nil, "", memtool.ErrTooLarge
		}
		return []byte(*m.Content), memtool.Version(m.SHA256), nil
	case kDir:
		return nil, "", memtool.ErrIsDir
	case kNotDir:
		return nil, "", memtool.ErrNotDir
	}
	return nil, "", memtool.ErrNotExist
}

// WriteFile writes one memory version. With ifMatch == "" it creates the
// memory (memtool.ErrExist if name is a memory or a directory,
// memtool.ErrNotDir if a parent is a memory); otherwise it updates the
// memory's content with ifMatch as the content_sha256 precondition
// (memtool.ErrConflict if the content changed or the memory is gone,
// memtool.ErrIsDir for a directory). Other store refusals (archived store,
// memory limit, invalid path or content, read-only access) are returned as
// a *memtool.Refusal wrapping the *trove.Error.
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
		if f.isRemembered(name) {
			if k, _, err := f.classify(ctx, name, false); err != nil {
				return "", err
			} else if k == kDir {
				return "", memtool.ErrExist
			}
		}
		m, err := f.svc.CreateMemory(ctx, f.storeID, trove.CreateMemoryParams{Path: p, Content: content})
		if err != nil {
			return "", f.pathConflict(ctx, "create", name, err)
		}
		f.remember(m.Path, m.ID)
		f.clearAbove(name)
		return memtool.Version(m.SHA256), nil
	}
	if !isSHA256(string(ifMatch)) {
		// Not a version this FS handed out: it cannot match any content.
		return "", memtool.ErrConflict
	}
	m, err := f.lookup(ctx, name, false)
	if err != nil {
		return "", err
	}
	if m == nil {
		k, _, err := f.classify(ctx, name, false)
		if err != nil {
			return "", err
		}
		if k == kDir {
			return "", memtool.ErrIsDir
		}
		return "", memtool.ErrConflict
	}
	u, err := f.svc.UpdateMemory(ctx, f.storeID, m.ID, trove.UpdateMemoryParams{
		Content: &content, PreconditionSHA256: string(ifMatch),
	})
	switch trove.ErrorCode(err) {
	case "":
	case trove.EPRECONDITION, trove.ENOTFOUND:
		f.forget(p, m.ID)
		return "", memtool.ErrConflict
	default:
		return "", f.fail("update", err)
	}
	f.remember(u.Path, u.ID)
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

// clearAbove forgets remembered empty directories that name (now a memory)
// makes implied or impossible.
func (f *FS) clearAbove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for d := parentOf(name); d != ""; d = parentOf(d) {
		delete(f.empty, d)
	}
	for d := range f.empty {
		if d == name || strings.HasPrefix(d, name+"/") {
			delete(f.empty, d)
		}
	}
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
	if te.ConflictingPath != "" && te.ConflictingPath != p && strings.HasPrefix(p, te.ConflictingPath+"/") {
		return memtool.ErrNotDir
	}
	if te.ConflictingPath == "" {
		// No detail (should not happen): decide by looking.
		if k, _, cerr := f.classify(ctx, name, false); cerr == nil && k == kNotDir {
			return memtool.ErrNotDir
		}
	}
	return memtool.ErrExist
}

// Remove deletes the memory at name, or every memory below the directory
// name (one deletion each, no precondition: delete is unconditional in the
// memory tool). The parent directory stays visible to this instance. It
// returns memtool.ErrNotExist or memtool.ErrNotDir.
func (f *FS) Remove(ctx context.Context, name string) error {
	ctx = f.with(ctx)
	if name == "" {
		return memtool.ErrNotExist
	}
	k, m, err := f.classify(ctx, name, false)
	if err != nil {
		return err
	}
	switch k {
	case kFile:
		if err := f.svc.DeleteMemory(ctx, f.storeID, m.ID, ""); err != nil {
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				f.forget(m.Path, m.ID)
				return memtool.ErrNotExist
			}
			return f.fail("delete", err)
		}
		f.forget(m.Path, m.ID)
		f.rememberEmpty(name)
		return nil
	case kDir:
		var victims []trove.Memory
		if err := f.list(ctx, prefixOf(name), 0, func(it trove.MemoryListItem) bool {
			if it.Memory != nil {
				victims = append(victims, *it.Memory)
			}
			return true
		}); err != nil {
			return err
		}
		for _, v := range victims {
			err := f.svc.DeleteMemory(ctx, f.storeID, v.ID, "")
			if err != nil && trove.ErrorCode(err) != trove.ENOTFOUND {
				return f.fail("delete", err)
			}
			f.forget(v.Path, v.ID)
		}
		f.dropEmpty(name)
		f.rememberEmpty(name)
		return nil
	case kNotDir:
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
		if ok, _, _ := f.classify(ctx, oldname, false); ok == kNone || ok == kInvalid {
			return memtool.ErrNotExist
		}
		return f.fail("rename", err)
	}
	nk, _, err := f.classify(ctx, newname, false)
	if err != nil {
		return err
	}
	switch nk {
	case kFile, kDir:
		return memtool.ErrExist
	case kNotDir:
		return memtool.ErrNotDir
	}
	ok, m, err := f.classify(ctx, oldname, false)
	if err != nil {
		return err
	}
	switch ok {
	case kFile:
		np := memPath(newname)
		u, err := f.svc.UpdateMemory(ctx, f.storeID, m.ID, trove.UpdateMemoryParams{Path: &np})
		if err != nil {
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				f.forget(m.Path, m.ID)
				return memtool.ErrNotExist
			}
			return f.pathConflict(ctx, "rename", newname, err)
		}
		f.forget(m.Path, m.ID)
		f.remember(u.Path, u.ID)
		f.rememberEmpty(oldname)
		f.clearAbove(newname)
		return nil
	case kDir:
		return f.renameDir(ctx, oldname, newname)
	case kNotDir:
		return memtool.ErrNotExist
	}
	return memtool.ErrNotExist
}

func (f *FS) renameDir(ctx context.Context, oldname, newname string) error {
	var moving []trove.Memory
	if err := f.list(ctx, prefixOf(oldname), 0, func(it trove.MemoryListItem) bool {
		if it.Memory != nil {
			moving = append(moving, *it.Memory)
		}
		return true
	}); err != nil {
		return err
	}
	oldP, newP := memPath(oldname), memPath(newname)
	var done []trove.Memory // moved, with their old paths
	var fail error
	for _, m := range moving {
		np := newP + strings.TrimPrefix(m.Path, oldP)
		if err := f.validName(strings.TrimPrefix(np, "/")); err != nil {
			fail = f.fail("rename", err)
			break
		}
		u, err := f.svc.UpdateMemory(ctx, f.storeID, m.ID, trove.UpdateMemoryParams{Path: &np})
		if err != nil {
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				continue // deleted meanwhile
			}
			fail = f.pathConflict(ctx, "rename", newname, err)
			break
		}
		f.forget(m.Path, m.ID)
		f.remember(u.Path, u.ID)
		done = append(done, m)
	}
	if fail != nil {
		// Put back what moved, so the directory is not split in two.
		for _, m := range done {
			op := m.Path
			if _, err := f.svc.UpdateMemory(ctx, f.storeID, m.ID, trove.UpdateMemoryParams{Path: &op}); err == nil {
				f.remember(op, m.ID)
			}
		}
		return fail
	}
	// Move the remembered empty directories below oldname along.
	f.mu.Lock()
	for d := range f.empty {
		if d == oldname || strings.HasPrefix(d, oldname+"/") {
			delete(f.empty, d)
			f.empty[newname+strings.TrimPrefix(d, oldname)] = struct{}{}
		}
	}
	f.mu.Unlock()
	if len(moving) == 0 {
		f.mu.Lock()
		f.empty[newname] = struct{}{}
		f.mu.Unlock()
	}
	f.rememberEmpty(oldname)
	f.clearAboveKeep(newname)
	return nil
}

// clearAboveKeep forgets remembered directories above name (they are
// implied now) but keeps name and those below it.
func (f *FS) clearAboveKeep(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for d := parentOf(name); d != ""; d = parentOf(d) {
		delete(f.empty, d)
	}
}

// String describes the FS for logs.
func (f *FS) String() string { return fmt.Sprintf("storefs(%s)", f.storeID) }
