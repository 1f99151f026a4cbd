//go:build unix

package memtool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DirFS is an FS over a host directory. Every operation goes through an
// os.Root opened on that directory, so the kernel-level containment of
// os.Root applies on top of the engine's lexical path checks: no name can
// reach outside the directory, whatever concurrent changes are made to it.
//
// Symbolic links are opaque: DirFS never follows one. A name whose final
// component is a link is reported as KindSymlink (view, str_replace and
// insert refuse it; delete and rename act on the link itself), and a name
// that goes through a link as an intermediate directory fails with
// ErrSymlink. Listings omit links.
//
// Files are written atomically: a temporary file ".trove-tmp-*" in the same
// directory is written, fsynced, then renamed into place (with
// renameat2(RENAME_NOREPLACE) for create, so that an existing entry is never
// clobbered) and the directory is fsynced. Files are created with mode 0600
// and directories with 0700. Rename never replaces an existing entry
// (renameat2(RENAME_NOREPLACE); where the filesystem does not support it,
// link+unlink for files). Version is the hex SHA-256 of the content; the
// version check of a replacing write is atomic with respect to other callers
// of the same Tool, not to other processes writing the directory.
//
// Access times are the files' atime: Touch sets it explicitly (the mtime is
// left alone), so it works on noatime mounts too.
//
// If the directory is removed or replaced while DirFS is open, it is
// re-created (empty) on the next operation that needs it.
type DirFS struct {
	dir string

	mu   sync.RWMutex
	root *os.Root
	old  []*os.Root // superseded roots, closed by Close
}

// NewDirFS opens (creating it with mode 0700 if needed) the directory dir as
// the memory root.
func NewDirFS(dir string) (*DirFS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	return &DirFS{dir: abs, root: r}, nil
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
	return err
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
	if s, ok := st.Sys().(*syscall.Stat_t); ok && s.Nlink == 0 {
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
	r, err := os.OpenRoot(d.dir)
	if err != nil {
		return err
	}
	d.old = append(d.old, d.root)
	d.root = r
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

func infoOf(name string, fi fs.FileInfo) Info {
	info := Info{Name: name, Kind: kindOf(fi.Mode()), Size: fi.Size()}
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		info.Accessed = time.Unix(int64(s.Atim.Sec), int64(s.Atim.Nsec)) //nolint:unconvert // field types vary by platform
	}
	return info
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

// Stat implements FS.
func (d *DirFS) Stat(_ context.Context, name string) (Info, error) {
	var info Info
	err := d.do(func(r *os.Root) error {
		if err := checkParents(r, name, false); err != nil {
			return err
		}
		fi, err := r.Lstat(osName(name))
		if err != nil {
			return mapErr(err)
		}
		info = infoOf(name, fi)
		return nil
	})
	return info, err
}

// ReadDir implements FS.
func (d *DirFS) ReadDir(_ context.Context, name string) ([]Info, error) {
	var out []Info
	err := d.do(func(r *os.Root) error {
		out = nil
		if err := checkParents(r, name, false); err != nil {
			return err
		}
		fi, err := r.Lstat(osName(name))
		switch {
		case err != nil:
			return mapErr(err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return ErrSymlink
		case !fi.IsDir():
			return ErrNotDir
		}
		f, err := r.Open(osName(name))
		if err != nil {
			return mapErr(err)
		}
		defer f.Close()
		names, err := f.Readdirnames(-1)
		if err != nil {
			return mapErr(err)
		}
		for _, n := range names {
			child := n
			if name != "" {
				child = name + "/" + n
			}
			fi, err := r.Lstat(child)
			if err != nil {
				continue // vanished meanwhile
			}
			out = append(out, infoOf(n, fi))
		}
		return nil
	})
	return out, err
}

// ReadFile implements FS.
func (d *DirFS) ReadFile(_ context.Context, name string, maxBytes int64) ([]byte, Version, error) {
	var data []byte
	err := d.do(func(r *os.Root) error {
		var err error
		data, err = readRegular(r, name, maxBytes)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return data, contentVersion(data), nil
}

func readRegular(r *os.Root, name string, maxBytes int64) ([]byte, error) {
	if err := checkParents(r, name, false); err != nil {
		return nil, err
	}
	fi, err := r.Lstat(osName(name))
	switch {
	case err != nil:
		return nil, mapErr(err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, ErrSymlink
	case fi.IsDir():
		return nil, ErrIsDir
	case !fi.Mode().IsRegular():
		return nil, ErrNotRegular
	}
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, mapErr(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	if maxBytes >= 0 && st.Size() > maxBytes {
		return nil, ErrTooLarge
	}
	rd := io.Reader(f)
	if maxBytes >= 0 {
		rd = io.LimitReader(f, maxBytes+1)
	}
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	if maxBytes >= 0 && int64(len(data)) > maxBytes {
		return nil, ErrTooLarge
	}
	return data, nil
}

const tmpPrefix = ".trove-tmp-"

// WriteFile implements FS.
func (d *DirFS) WriteFile(_ context.Context, name string, data []byte, ifMatch Version) (Version, error) {
	if name == "" {
		return "", ErrExist
	}
	err := d.do(func(r *os.Root) error { return writeAtomic(r, name, data, ifMatch) })
	if err != nil {
		return "", err
	}
	return contentVersion(data), nil
}

func writeAtomic(r *os.Root, name string, data []byte, ifMatch Version) error {
	if err := checkParents(r, name, ifMatch == ""); err != nil {
		return err
	}
	fi, err := r.Lstat(name)
	switch {
	case ifMatch == "" && err == nil:
		return ErrExist
	case ifMatch == "" && !errors.Is(err, fs.ErrNotExist):
		return mapErr(err)
	case ifMatch != "" && errors.Is(err, fs.ErrNotExist):
		return ErrConflict
	case ifMatch != "" && err != nil:
		return mapErr(err)
	case ifMatch != "" && fi.Mode()&fs.ModeSymlink != 0:
		return ErrSymlink
	case ifMatch != "" && fi.IsDir():
		return ErrIsDir
	case ifMatch != "":
		cur, err := readRegular(r, name, -1)
		if err != nil {
			return err
		}
		if contentVersion(cur) != ifMatch {
			return ErrConflict
		}
	}
	parent, base := splitName(name)
	if ifMatch == "" && parent != "." {
		if err := r.MkdirAll(parent, 0o700); err != nil {
			return mapErr(err)
		}
	}
	dir, err := r.Open(parent)
	if err != nil {
		return mapErr(err)
	}
	defer dir.Close()
	tmp, err := createTemp(r, parent)
	if err != nil {
		return err
	}
	tmpBase := filepath.Base(tmp.Name())
	committed := false
	defer func() {
		if !committed {
			unix.Unlinkat(int(dir.Fd()), tmpBase, 0)
		}
	}()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	dfd := int(dir.Fd())
	if ifMatch == "" {
		err = renameNoReplace(dfd, tmpBase, dfd, base, false)
	} else {
		err = unix.Renameat(dfd, tmpBase, dfd, base)
	}
	runtime.KeepAlive(dir)
	if err != nil {
		return mapErr(err)
	}
	committed = true
	return dir.Sync()
}

func splitName(name string) (parent, base string) {
	p := parentOf(name)
	if p == "" {
		p = "."
	}
	return p, filepath.Base(name)
}

func createTemp(r *os.Root, parent string) (*os.File, error) {
	for range 10 {
		var b [8]byte
		rand.Read(b[:])
		f, err := r.OpenFile(parent+"/"+tmpPrefix+hex.EncodeToString(b[:]), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, mapErr(err)
		}
		return f, nil
	}
	return nil, errors.New("memtool: cannot create a temporary file")
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
		od, err := r.Open(oparent)
		if err != nil {
			return mapErr(err)
		}
		defer od.Close()
		nd, err := r.Open(nparent)
		if err != nil {
			return mapErr(err)
		}
		defer nd.Close()
		err = renameNoReplace(int(od.Fd()), obase, int(nd.Fd()), nbase, ofi.IsDir())
		runtime.KeepAlive(od)
		runtime.KeepAlive(nd)
		if err != nil {
			return mapErr(err)
		}
		if err := nd.Sync(); err != nil {
			return err
		}
		if oparent != nparent {
			return od.Sync()
		}
		return nil
	})
}

// Touch implements Toucher by setting the file's atime.
func (d *DirFS) Touch(_ context.Context, name string, t time.Time) error {
	return d.do(func(r *os.Root) error {
		if err := checkParents(r, name, false); err != nil {
			return err
		}
		fi, err := r.Lstat(osName(name))
		if err != nil {
			return mapErr(err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return ErrSymlink
		}
		return mapErr(r.Chtimes(osName(name), t, time.Time{}))
	})
}
