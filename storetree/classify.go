package storetree

import (
	"context"

	"github.com/trovehq/trove"
)

// Kind is what a memory path is in a store seen as a file tree.
type Kind int

const (
	// KindNone: nothing is at the path; its parents are directories or
	// absent.
	KindNone Kind = iota
	// KindNotDir: nothing is at the path because a parent is a memory.
	KindNotDir
	// KindFile: a memory is at the path.
	KindFile
	// KindDir: the path is the root, has memories below it, or is a
	// remembered directory.
	KindDir
	// KindInvalid: the path breaks the store's path rules (ValidPath), so
	// nothing can ever be there.
	KindInvalid
)

// ClassifyError is the store's error that stopped Classify (Err, unchanged),
// with the kind of call that met it.
type ClassifyError struct {
	// Listing is true when a listing (HasChildren) failed, false when a
	// read (Lookup) did.
	Listing bool
	Err     error
}

func (e *ClassifyError) Error() string { return e.Err.Error() }
func (e *ClassifyError) Unwrap() error { return e.Err }

// Classify returns what the memory path p is, with the memory for a
// KindFile (read in view, so with its content for trove.ViewFull). The root
// ("/") is a directory and costs nothing; an invalid path costs nothing. An
// indexed memory costs one read; a path not indexed first costs one listing
// of one item, which tells a directory before the parent is listed to look
// for a memory. A path where nothing is has each parent looked up to tell
// KindNotDir (a memory found there also drops the remembered directories at
// and below it) from KindNone, and a remembered directory is KindDir.
// Errors are *ClassifyError.
func (t *Tree) Classify(ctx context.Context, p string, view trove.View) (Kind, *trove.Memory, error) {
	if p == "/" {
		return KindDir, nil, nil
	}
	if t.ValidPath(p) != nil {
		return KindInvalid, nil, nil
	}
	_, cached := t.Cached(p)
	checkedDir := false
	if !cached {
		// Probably a directory or nothing: one cheap listing tells a
		// directory before scanning the parent for a file.
		dir, err := t.HasChildren(ctx, p)
		if err != nil {
			return KindNone, nil, &ClassifyError{Listing: true, Err: err}
		}
		if dir {
			return KindDir, nil, nil
		}
		checkedDir = true
	}
	m, err := t.Lookup(ctx, p, view)
	if err != nil {
		return KindNone, nil, &ClassifyError{Err: err}
	}
	if m != nil {
		return KindFile, m, nil
	}
	if !checkedDir {
		dir, err := t.HasChildren(ctx, p)
		if err != nil {
			return KindNone, nil, &ClassifyError{Listing: true, Err: err}
		}
		if dir {
			return KindDir, nil, nil
		}
	}
	// Nothing at p. Is a parent a file?
	for a := Parent(p); a != "/" && a != ""; a = Parent(a) {
		am, err := t.Lookup(ctx, a, trove.ViewBasic)
		if err != nil {
			return KindNone, nil, &ClassifyError{Err: err}
		}
		if am != nil {
			t.ForgetTree(a)
			return KindNotDir, nil, nil
		}
	}
	if t.IsRemembered(p) {
		return KindDir, nil, nil
	}
	return KindNone, nil, nil
}
