package memtool

// The os.Root implementation of DirFS (see its doc): every call goes through
// the os.Root, which keeps names inside the directory (no "..", no link
// leading outside), after an lstat of each existing ancestor and of the
// final name, so that links stay opaque. It is the only implementation where
// there are no directory descriptors (Windows), and the tests run it on Linux
// too (newDirFS(dir, true)).

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"time"
)

// infoOfFileInfo is infoOf for an lstat result of the os.
func infoOfFileInfo(name string, fi fs.FileInfo) Info {
	return Info{Name: name, Kind: kindOf(fi.Mode()), Size: fi.Size(), Accessed: atimeOf(fi)}
}

// lstatRoot checks the ancestors of name and lstats it.
func lstatRoot(r *os.Root, name string) (fs.FileInfo, error) {
	if err := checkParents(r, name, false); err != nil {
		return nil, err
	}
	fi, err := r.Lstat(name)
	if err != nil {
		return nil, mapErr(err)
	}
	return fi, nil
}

func (d *DirFS) statRoot(name string) (Info, error) {
	var info Info
	err := d.do(func(r *os.Root) error {
		fi, err := lstatRoot(r, name)
		if err != nil {
			return err
		}
		info = infoOfFileInfo(name, fi)
		return nil
	})
	return info, err
}

func (d *DirFS) readDirRoot(name string) ([]Info, error) {
	var out []Info
	err := d.do(func(r *os.Root) error {
		out = nil
		f, names, err := openDirNames(r, name)
		if err != nil {
			return err
		}
		defer f.Close()
		for _, n := range names {
			fi, err := r.Lstat(path.Join(osName(name), n))
			if err != nil {
				continue // vanished meanwhile
			}
			out = append(out, infoOfFileInfo(n, fi))
		}
		return nil
	})
	return out, err
}

// kindErrOf returns the error ReadFile gives for a file that is not regular.
func kindErrOf(m fs.FileMode) error {
	switch {
	case m.IsRegular():
		return nil
	case m&fs.ModeSymlink != 0:
		return ErrSymlink
	case m.IsDir():
		return ErrIsDir
	}
	return ErrNotRegular
}

// errChanged is the error of a read whose file kept being replaced between
// its lstat and its open.
var errChanged = errors.New("memtool: the file keeps being replaced")

func (d *DirFS) readRoot(name string, maxBytes int64, atime *time.Time) (data []byte, touchErr, err error) {
	err = d.do(func(r *os.Root) error {
		var fi fs.FileInfo
		var err error
		data, fi, err = readRootFile(r, name, maxBytes)
		if err == nil && atime != nil && !recentlyAccessedAt(atimeOf(fi), *atime) {
			touchErr = mapErr(r.Chtimes(name, *atime, time.Time{}))
		}
		return err
	})
	return data, touchErr, err
}

// readRootFile reads the regular file name, and returns its status. Links
// and special files are refused before being opened (with O_NONBLOCK where
// it exists, so that a FIFO swapped in meanwhile does not block the open),
// files larger than maxBytes (when >= 0) before being read; the file opened
// must be the one examined, or the read starts over.
func readRootFile(r *os.Root, name string, maxBytes int64) ([]byte, fs.FileInfo, error) {
	for range 3 {
		fi, err := lstatRoot(r, name)
		if err != nil {
			return nil, nil, err
		}
		if err := kindErrOf(fi.Mode()); err != nil {
			return nil, nil, err
		}
		if maxBytes >= 0 && fi.Size() > maxBytes {
			return nil, nil, ErrTooLarge
		}
		f, err := r.OpenFile(name, os.O_RDONLY|rootOpenFlags|rootNoatime, 0)
		if errors.Is(err, fs.ErrPermission) && rootNoatime != 0 {
			f, err = r.OpenFile(name, os.O_RDONLY|rootOpenFlags, 0) // not the owner
		}
		if err != nil {
			return nil, nil, mapErr(err)
		}
		data, ofi, err := readOpened(f, maxBytes)
		f.Close()
		switch {
		case err != nil:
			return nil, nil, err
		case !os.SameFile(fi, ofi):
			continue // replaced since the lstat
		}
		return data, ofi, nil
	}
	return nil, nil, errChanged
}

// readOpened reads f to the end (or to maxBytes+1 bytes, to report it as too
// large) and returns its status.
func readOpened(f *os.File, maxBytes int64) ([]byte, fs.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, mapErr(err)
	}
	if err := kindErrOf(fi.Mode()); err != nil {
		return nil, nil, err
	}
	if maxBytes >= 0 && fi.Size() > maxBytes {
		return nil, nil, ErrTooLarge
	}
	var rd io.Reader = f
	if maxBytes >= 0 {
		rd = io.LimitReader(f, maxBytes+1)
	}
	buf := make([]byte, 0, fi.Size()+1)
	for {
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, mapErr(err)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
	if maxBytes >= 0 && int64(len(buf)) > maxBytes {
		return nil, nil, ErrTooLarge
	}
	return buf, fi, nil
}

func (d *DirFS) writeRoot(name string, data []byte, ifMatch Version, atime *time.Time) (Version, error) {
	err := d.do(func(r *os.Root) error {
		parent, base := splitName(name)
		if ifMatch != "" {
			cur, _, err := readRootFile(r, name, -1)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return ErrConflict
			case errors.Is(err, ErrNotRegular):
				return ErrConflict // not the file that was read
			case err != nil:
				return err
			case contentVersion(cur) != ifMatch:
				return ErrConflict
			}
		} else if err := checkParents(r, name, true); err != nil {
			return err
		} else if parent != "." {
			if _, err := r.Lstat(parent); errors.Is(err, fs.ErrNotExist) {
				if err := r.MkdirAll(parent, 0o700); err != nil {
					return mapErr(err)
				}
				if err := syncAncestors(r, parent); err != nil {
					return err
				}
			} else if err != nil {
				return mapErr(err)
			}
		}
		tmp, err := writeTempRoot(r, parent, data, atime)
		if err != nil {
			return err
		}
		if ifMatch == "" {
			// A create does not look first: the no-clobber rename is what
			// refuses an existing entry (file, directory or link).
			err = renameNoClobberRoot(r, tmp, path.Join(parent, base), false)
		} else {
			err = mapErr(r.Rename(tmp, path.Join(parent, base)))
		}
		if err != nil {
			r.Remove(tmp)
			return err
		}
		return syncDirRoot(r, parent)
	})
	if err != nil {
		return "", err
	}
	return contentVersion(data), nil
}

// writeTempRoot writes data to a new temporary file (mode 0600) in the
// directory parent, with the access time atime if not nil, fsyncs it and
// returns its name.
func writeTempRoot(r *os.Root, parent string, data []byte, atime *time.Time) (string, error) {
	for range 10 {
		var b [8]byte
		rand.Read(b[:])
		tmp := path.Join(parent, tmpPrefix+hex.EncodeToString(b[:]))
		f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", mapErr(err)
		}
		_, err = f.Write(data)
		if err == nil && atime != nil {
			err = r.Chtimes(tmp, *atime, time.Time{})
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			r.Remove(tmp)
			return "", mapErr(err)
		}
		return tmp, nil
	}
	return "", errors.New("memtool: cannot create a temporary file")
}

// renameNoClobberRoot renames oldname to newname without replacing an
// existing newname: a file is hard-linked under the new name (which fails
// on an existing name, atomically) and its old name removed; a directory,
// or a file on a filesystem without hard links, is renamed after a check
// that the new name is free (atomic only with respect to the engine's
// locks).
func renameNoClobberRoot(r *os.Root, oldname, newname string, isDir bool) error {
	if !isDir {
		err := r.Link(oldname, newname)
		if err == nil {
			return mapErr(r.Remove(oldname))
		}
		if errors.Is(err, fs.ErrExist) {
			return mapErr(err)
		}
		// No hard links here (FAT, or not permitted): check, then rename.
	}
	if _, err := r.Lstat(newname); err == nil {
		return fmt.Errorf("%w: %s", ErrExist, newname)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return mapErr(err)
	}
	return mapErr(r.Rename(oldname, newname))
}

// renameEntryRoot is renameEntry for the os.Root implementation.
func renameEntryRoot(r *os.Root, oparent, obase, nparent, nbase string, isDir bool) error {
	if err := renameNoClobberRoot(r, path.Join(oparent, obase), path.Join(nparent, nbase), isDir); err != nil {
		return err
	}
	if err := syncDirRoot(r, nparent); err != nil {
		return err
	}
	if oparent != nparent {
		return syncDirRoot(r, oparent)
	}
	return nil
}

// syncDirRoot fsyncs the directory dir (see syncDir).
func syncDirRoot(r *os.Root, dir string) error {
	f, err := r.Open(dir)
	if err != nil {
		return mapErr(err)
	}
	defer f.Close()
	return syncDir(f)
}

func (d *DirFS) touchRoot(name string, t time.Time) error {
	return d.do(func(r *os.Root) error {
		fi, err := lstatRoot(r, name)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return ErrSymlink
		}
		if recentlyAccessedAt(atimeOf(fi), t) {
			return nil
		}
		return mapErr(r.Chtimes(name, t, time.Time{}))
	})
}
