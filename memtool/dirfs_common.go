package memtool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DirFS is an FS over a host directory. Two implementations share it: the
// descriptor one (Unix systems) and the os.Root one (everywhere else, and on
// Unix systems in the tests, so that its guarantees are checked on Linux).
//
// Both keep every name inside the directory, whatever concurrent changes are
// made to it, on top of the engine's lexical path checks. The descriptor
// implementation makes every operation relative to a descriptor of the
// directory: Stat, ReadFile, WriteFile and Touch (the hot path) resolve the
// parent directory with one openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)
// relative to the root (where openat2 is missing, as on macOS, one
// openat(O_NOFOLLOW) per component) and then act on the single final name
// with *at calls that never follow a link; listings, delete, rename and
// directory creation go through an os.Root, after an lstat of every existing
// ancestor. The os.Root implementation does everything through the os.Root
// (which never lets a name, "..", or a link lead outside the directory),
// after an lstat of every existing ancestor and of the final name.
//
// Symbolic links are opaque: DirFS never follows one. A name whose final
// component is a link is reported as KindSymlink (view, str_replace and
// insert refuse it; delete and rename act on the link itself), and a name
// that goes through a link as an intermediate directory fails with
// ErrSymlink. Listings omit links. With the descriptor implementation the
// kernel enforces this; with the os.Root one it is checked first, so a link
// swapped in concurrently by another process may be followed, but only to a
// name inside the directory (and a file read is checked to be the one
// examined).
//
// Files are written atomically: a temporary file ".trove-tmp-*" in the same
// directory is written, fsynced, then renamed into place and the directory
// is fsynced (Windows has no directory fsync: NTFS journals its metadata).
// Files are created with mode 0600 and directories with 0700. Neither a
// create nor a rename ever replaces an existing entry:
//   - Linux: renameat2(RENAME_NOREPLACE), atomic; where the filesystem does
//     not support it, as on other Unix systems, a hard link then an unlink
//     of the old name for files (atomic: link refuses an existing name), a
//     check then rename for directories;
//   - macOS: renameatx_np(RENAME_EXCL), atomic, with the same fallback;
//   - Windows (and the os.Root implementation everywhere): a hard link then
//     an unlink for files, atomic where the filesystem has hard links
//     (NTFS, every Unix filesystem); a check then rename for directories
//     and on filesystems without hard links (FAT).
//
// A check then rename is atomic only with respect to other callers of the
// same Tool (the engine's locks), not to other processes writing the
// directory. Version is the hex SHA-256 of the content; the version check of
// a replacing write is atomic in the same sense.
//
// Access times are the files' atime: Touch sets it explicitly (the mtime is
// left alone), so it works on noatime mounts too; like relatime, an access
// less than a minute after the recorded one is not recorded again.
//
// If the directory is removed or replaced while DirFS is open, it is
// re-created (empty) on the next operation that needs it.
type DirFS struct {
	dir string
	// portable selects the os.Root implementation.
	portable bool

	mu   sync.RWMutex
	root *os.Root
	old  []*os.Root // superseded roots, closed by Close
	// dirs holds the root directory opened as a file, for each root: the
	// base of the descriptor-relative lookups of openBeneath (none in the
	// os.Root implementation).
	dirs map[*os.Root]*os.File
}

// NewDirFS opens (creating it with mode 0700 if needed) the directory dir as
// the memory root.
func NewDirFS(dir string) (*DirFS, error) { return newDirFS(dir, !haveDescriptorFS) }

// newDirFS is NewDirFS, with the os.Root implementation if portable.
func newDirFS(dir string, portable bool) (*DirFS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, err
	}
	r, f, err := openRoot(abs, !portable)
	if err != nil {
		return nil, err
	}
	d := &DirFS{dir: abs, portable: portable, root: r, dirs: map[*os.Root]*os.File{}}
	if f != nil {
		d.dirs[r] = f
	}
	return d, nil
}

// Dir returns the absolute host directory.
func (d *DirFS) Dir() string { return d.dir }

// Close releases the directory handles.
func (d *DirFS) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.root.Close()
	for _, r := range d.old {
		r.Close()
	}
	d.old = nil
	for r, f := range d.dirs {
		f.Close()
		delete(d.dirs, r)
	}
	return err
}

// openRoot opens dir as an os.Root and, withFile, as a directory file.
func openRoot(dir string, withFile bool) (*os.Root, *os.File, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	if !withFile {
		return r, nil, nil
	}
	f, err := r.Open(".")
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, f, nil
}

func (d *DirFS) current() *os.Root {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.root
}

// do runs fn on the current root; if it fails with "not exist" because the
// root directory itself is gone, the root is re-created and fn retried once.
func (d *DirFS) do(fn func(r *os.Root) error) error {
	r := d.current()
	err := fn(r)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !d.gone(r) {
		return err
	}
	if err := d.reopen(r); err != nil {
		return err
	}
	return fn(d.current())
}

// gone reports whether r no longer is the directory at d.dir.
func (d *DirFS) gone(r *os.Root) bool {
	st, err := r.Stat(".")
	if err != nil {
		return true
	}
	if unlinked(st) {
		return true
	}
	lst, err := os.Stat(d.dir)
	return err != nil || !os.SameFile(st, lst)
}

func (d *DirFS) reopen(old *os.Root) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.root != old {
		return nil // someone else already did
	}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return err
	}
	r, f, err := openRoot(d.dir, !d.portable)
	if err != nil {
		return err
	}
	d.old = append(d.old, d.root)
	d.root = r
	if f != nil {
		d.dirs[r] = f
	}
	return nil
}

func osName(name string) string {
	if name == "" {
		return "."
	}
	return name
}

// mapErr translates OS errors into the FS sentinels, keeping the original
// for logs.
func mapErr(err error) error {
	var sentinel error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENOTDIR):
		sentinel = ErrNotDir
	case errors.Is(err, syscall.ELOOP):
		sentinel = ErrSymlink
	case errors.Is(err, syscall.EISDIR):
		sentinel = ErrIsDir
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrExist):
		return err
	case errors.Is(err, syscall.ENOTEMPTY):
		return fmt.Errorf("%w: %v", ErrExist, err)
	default:
		// os.Root reports an escape attempt (a link leading outside) with
		// a plain error; any other failure stays as is.
		if isEscape(err) {
			sentinel = ErrSymlink
		} else {
			return err
		}
	}
	return fmt.Errorf("%w: %v", sentinel, err)
}

func isEscape(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}

func kindOf(m fs.FileMode) Kind {
	switch {
	case m.IsRegular():
		return KindFile
	case m.IsDir():
		return KindDir
	case m&fs.ModeSymlink != 0:
		return KindSymlink
	}
	return KindOther
}

// checkParents verifies that every existing proper ancestor of name is a
// real directory. With allowMissing, a missing ancestor ends the check
// successfully (the caller will create it); otherwise it is ErrNotExist.
func checkParents(r *os.Root, name string, allowMissing bool) error {
	for i := 0; i < len(name); i++ {
		if name[i] != '/' {
			continue
		}
		fi, err := r.Lstat(name[:i])
		switch {
		case errors.Is(err, fs.ErrNotExist) && allowMissing:
			return nil
		case err != nil:
			return mapErr(err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return ErrSymlink
		case !fi.IsDir():
			return ErrNotDir
		}
	}
	return nil
}

// syncAncestors fsyncs the root and every directory down to dir, after
// MkdirAll created some of them, so that the new directory entries (and so
// the file about to be written under them) survive a crash.
func syncAncestors(r *os.Root, dir string) error {
	p := "."
	for _, c := range append([]string{""}, strings.Split(dir, "/")...) {
		if c != "" {
			p = path.Join(p, c)
		}
		f, err := r.Open(p)
		if err != nil {
			return mapErr(err)
		}
		err = syncDir(f)
		f.Close()
		if err != nil {
			return mapErr(err)
		}
	}
	return nil
}

// atimeSlack is how recent a recorded access must be for a new one to be
// skipped (as the relatime mount option does): re-recording an access a few
// seconds later would dirty the inode, and so grow the next journal commit,
// on every view, for no use to Sweep, whose durations are days.
const atimeSlack = time.Minute

const tmpPrefix = ".trove-tmp-"

func splitName(name string) (parent, base string) {
	p := parentOf(name)
	if p == "" {
		p = "."
	}
	return p, filepath.Base(name)
}

// Remove implements FS.
func (d *DirFS) Remove(_ context.Context, name string) error {
	if name == "" {
		return ErrExist
	}
	return d.do(func(r *os.Root) error {
		if err := checkParents(r, name, false); err != nil {
			return err
		}
		if _, err := r.Lstat(name); err != nil {
			return mapErr(err)
		}
		return mapErr(r.RemoveAll(name))
	})
}

// Rename implements FS.
func (d *DirFS) Rename(_ context.Context, oldname, newname string) error {
	if oldname == "" || newname == "" {
		return ErrExist
	}
	return d.do(func(r *os.Root) error {
		if err := checkParents(r, oldname, false); err != nil {
			return err
		}
		ofi, err := r.Lstat(oldname)
		if err != nil {
			return mapErr(err)
		}
		if err := checkParents(r, newname, true); err != nil {
			return err
		}
		if _, err := r.Lstat(newname); err == nil {
			return ErrExist
		} else if !errors.Is(err, fs.ErrNotExist) {
			return mapErr(err)
		}
		oparent, obase := splitName(oldname)
		nparent, nbase := splitName(newname)
		if nparent != "." {
			if err := r.MkdirAll(nparent, 0o700); err != nil {
				return mapErr(err)
			}
		}
		return d.renameEntry(r, oparent, obase, nparent, nbase, ofi.IsDir())
	})
}

// recentlyAccessedAt reports whether the access time a records an access
// in the minute up to t.
func recentlyAccessedAt(a, t time.Time) bool {
	return !a.After(t) && t.Sub(a) < atimeSlack
}

// openDirNames opens the directory name (refusing symbolic links on the way
// and at the end, and anything that is not a directory) and returns it with
// the names of its entries. The caller closes the file.
func openDirNames(r *os.Root, name string) (*os.File, []string, error) {
	if err := checkParents(r, name, false); err != nil {
		return nil, nil, err
	}
	fi, err := r.Lstat(osName(name))
	switch {
	case err != nil:
		return nil, nil, mapErr(err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, nil, ErrSymlink
	case !fi.IsDir():
		return nil, nil, ErrNotDir
	}
	f, err := r.Open(osName(name))
	if err != nil {
		return nil, nil, mapErr(err)
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		f.Close()
		return nil, nil, mapErr(err)
	}
	return f, names, nil
}
