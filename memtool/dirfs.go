//go:build unix

// The descriptor implementation of DirFS (see its doc), and the Unix side
// of what both implementations share.

package memtool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// openDir opens the directory rel ("." for the root) below the root r for
// descriptor-relative calls, refusing any symbolic link on the way (see
// openBeneath). The caller closes the descriptor.
func (d *DirFS) openDir(r *os.Root, rel string) (int, error) {
	d.mu.RLock()
	f := d.dirs[r]
	d.mu.RUnlock()
	if f == nil {
		return -1, os.ErrClosed
	}
	fd := -1
	err := withFd(f, func(rootfd int) error {
		var err error
		fd, err = openBeneath(rootfd, rel)
		return err
	})
	return fd, err
}

// Stat implements FS.
func (d *DirFS) Stat(_ context.Context, name string) (Info, error) {
	if name == "" {
		return Info{Kind: KindDir}, nil // the root (re-created by do when needed)
	}
	if d.portable {
		return d.statRoot(name)
	}
	var info Info
	err := d.do(func(r *os.Root) error {
		return d.inParent(r, name, false, func(dfd int, base string) error {
			var st unix.Stat_t
			if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return mapErr(err)
			}
			info = infoOfStat(name, &st)
			return nil
		})
	})
	return info, err
}

// ReadDir implements FS.
func (d *DirFS) ReadDir(_ context.Context, name string) ([]Info, error) {
	if d.portable {
		return d.readDirRoot(name)
	}
	var out []Info
	err := d.do(func(r *os.Root) error {
		out = nil
		f, names, err := openDirNames(r, name)
		if err != nil {
			return err
		}
		defer f.Close()
		// Each child is a single name in the directory just opened: one
		// fstatat relative to it, no path walk.
		return withFd(f, func(dfd int) error {
			for _, n := range names {
				var st unix.Stat_t
				if err := unix.Fstatat(dfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					continue // vanished meanwhile
				}
				out = append(out, infoOfStat(n, &st))
			}
			return nil
		})
	})
	return out, err
}

// infoOfStat is infoOf for a raw stat result.
func infoOfStat(name string, st *unix.Stat_t) Info {
	info := Info{Name: name, Size: st.Size}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		info.Kind = KindFile
	case unix.S_IFDIR:
		info.Kind = KindDir
	case unix.S_IFLNK:
		info.Kind = KindSymlink
	default:
		info.Kind = KindOther
	}
	info.Accessed = time.Unix(int64(st.Atim.Sec), int64(st.Atim.Nsec)) //nolint:unconvert // field types vary by platform
	return info
}

// inParent opens the parent directory of name below the root, refusing any
// symbolic link on the way (creating missing parents, mode 0700, with
// create), and runs fn with its descriptor and the base name. Everything fn
// does happens relative to that directory on the single name base, with *at
// system calls that never follow a link: the path is resolved once per
// operation, by the kernel, and never outside the root.
func (d *DirFS) inParent(r *os.Root, name string, create bool, fn func(dfd int, base string) error) error {
	parent, base := splitName(name)
	dfd, err := d.openDir(r, parent)
	if create && parent != "." && errors.Is(err, fs.ErrNotExist) {
		if err := checkParents(r, name, true); err != nil {
			return err
		}
		if err := r.MkdirAll(parent, 0o700); err != nil {
			return mapErr(err)
		}
		if err := syncAncestors(r, parent); err != nil {
			return err
		}
		dfd, err = d.openDir(r, parent)
	}
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return fn(dfd, base)
}

// openBeneathWalk is the portable openBeneath: one openat per component,
// each relative to the previous directory with O_NOFOLLOW, so that no link
// is followed and nothing outside the root is reached.
func openBeneathWalk(rootfd int, rel string) (int, error) {
	fd, err := unix.Openat(rootfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil || rel == "." {
		return fd, mapErr(err)
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			unix.Close(fd)
			return -1, ErrNotExist // ParsePath never lets these through
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			// A link gives ELOOP or ENOTDIR depending on the system: look.
			var st unix.Stat_t
			if unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				if st.Mode&unix.S_IFMT == unix.S_IFLNK {
					err = ErrSymlink
				} else if st.Mode&unix.S_IFMT != unix.S_IFDIR {
					err = ErrNotDir
				}
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, mapErr(err)
		}
		fd = next
	}
	return fd, nil
}

// withFd runs fn with the descriptor of f. Unlike f.Fd it does not switch
// the descriptor to blocking mode (two fcntl calls), which the *at calls
// made on a directory do not care about.
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// kindErr returns the error ReadFile gives for a non-regular file mode.
func kindErr(mode uint32) error {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFLNK:
		return ErrSymlink
	case unix.S_IFDIR:
		return ErrIsDir
	}
	return ErrNotRegular
}

// ReadFile implements FS.
func (d *DirFS) ReadFile(_ context.Context, name string, maxBytes int64) ([]byte, Version, error) {
	data, _, err := d.read(name, maxBytes, nil)
	if err != nil {
		return nil, "", err
	}
	return data, contentVersion(data), nil
}

// ReadFileTouch implements TouchingFS: ReadFile, then the file's atime is
// set to t.
func (d *DirFS) ReadFileTouch(_ context.Context, name string, maxBytes int64, t time.Time) ([]byte, Version, error, error) {
	data, touchErr, err := d.read(name, maxBytes, &t)
	if err != nil {
		return nil, "", nil, err
	}
	return data, contentVersion(data), touchErr, nil
}

func (d *DirFS) read(name string, maxBytes int64, atime *time.Time) (data []byte, touchErr, err error) {
	if name == "" {
		return nil, nil, ErrIsDir
	}
	if d.portable {
		return d.readRoot(name, maxBytes, atime)
	}
	err = d.do(func(r *os.Root) error {
		return d.inParent(r, name, false, func(dfd int, base string) error {
			var st unix.Stat_t
			var err error
			data, err = readAt(dfd, base, maxBytes, &st)
			if err == nil && atime != nil && !recentlyAccessed(&st, *atime) {
				touchErr = setAtime(dfd, base, *atime)
			}
			return err
		})
	})
	return data, touchErr, err
}

// recentlyAccessed reports whether st records an access in the minute up to
// t.
func recentlyAccessed(st *unix.Stat_t, t time.Time) bool {
	a := time.Unix(int64(st.Atim.Sec), int64(st.Atim.Nsec)) //nolint:unconvert // field types vary by platform
	return recentlyAccessedAt(a, t)
}

// readAt reads the regular file base in the directory dfd, and fills st with
// its status. Links and special files are refused before being opened (a
// FIFO or device is never opened), and files larger than maxBytes (when >=
// 0) before being read.
func readAt(dfd int, base string, maxBytes int64, st *unix.Stat_t) ([]byte, error) {
	if err := unix.Fstatat(dfd, base, st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, mapErr(err)
	}
	if err := kindErr(uint32(st.Mode)); err != nil { //nolint:unconvert // field types vary by platform
		return nil, err
	}
	if maxBytes >= 0 && st.Size > maxBytes {
		return nil, ErrTooLarge
	}
	// O_NOATIME (Linux, owner only) keeps the kernel from recording the
	// read itself: access times are the engine's (Touch), from its clock.
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dfd, base, flags|oNoatime, 0)
	if err == unix.EPERM && oNoatime != 0 {
		fd, err = unix.Openat(dfd, base, flags, 0) // not the owner
	}
	if err != nil {
		return nil, mapErr(err)
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, st); err != nil { // swapped since the fstatat?
		return nil, err
	}
	if err := kindErr(uint32(st.Mode)); err != nil { //nolint:unconvert // field types vary by platform
		return nil, err
	}
	if maxBytes >= 0 && st.Size > maxBytes {
		return nil, ErrTooLarge
	}
	// One byte of room beyond the size so that the usual case ends with a
	// single read returning 0; a file growing meanwhile is read to the end
	// (or to maxBytes+1, to report it as too large).
	buf := make([]byte, 0, st.Size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := buf[len(buf):cap(buf)]
		if maxBytes >= 0 && int64(len(buf)+len(room)) > maxBytes+1 {
			room = room[:maxBytes+1-int64(len(buf))]
		}
		n, err := unix.Read(fd, room)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
		if maxBytes >= 0 && int64(len(buf)) > maxBytes {
			return nil, ErrTooLarge
		}
	}
	return buf, nil
}

// WriteFile implements FS.
func (d *DirFS) WriteFile(_ context.Context, name string, data []byte, ifMatch Version) (Version, error) {
	return d.write(name, data, ifMatch, nil)
}

// WriteFileTouch implements TouchingFS: WriteFile whose new file has the
// access time t (set on the temporary file before it is synced).
func (d *DirFS) WriteFileTouch(_ context.Context, name string, data []byte, ifMatch Version, t time.Time) (Version, error) {
	return d.write(name, data, ifMatch, &t)
}

func (d *DirFS) write(name string, data []byte, ifMatch Version, atime *time.Time) (Version, error) {
	if name == "" {
		return "", ErrExist
	}
	if d.portable {
		return d.writeRoot(name, data, ifMatch, atime)
	}
	err := d.do(func(r *os.Root) error {
		return d.inParent(r, name, ifMatch == "", func(dfd int, base string) error {
			return writeAt(dfd, base, data, ifMatch, atime)
		})
	})
	if err != nil {
		return "", err
	}
	return contentVersion(data), nil
}

// writeAt replaces (ifMatch != "") or creates the file base in the
// directory dfd: temporary file, fsync, rename, directory fsync.
func writeAt(dfd int, base string, data []byte, ifMatch Version, atime *time.Time) error {
	if ifMatch != "" {
		var st unix.Stat_t
		cur, err := readAt(dfd, base, -1, &st)
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
	}
	// A create does not look first: renameat2(RENAME_NOREPLACE) below is
	// what refuses an existing entry (file, directory or link), atomically.
	tmpBase, fd, err := createTemp(dfd)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			unix.Unlinkat(dfd, tmpBase, 0)
		}
	}()
	err = writeAll(fd, data)
	if err == nil && atime != nil {
		err = setAtime(dfd, tmpBase, *atime)
	}
	if err == nil {
		err = unix.Fsync(fd)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if ifMatch == "" {
		err = renameNoReplace(dfd, tmpBase, dfd, base, false)
	} else {
		err = unix.Renameat(dfd, tmpBase, dfd, base)
	}
	if err != nil {
		return mapErr(err)
	}
	committed = true
	return unix.Fsync(dfd)
}

func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// createTemp creates a new temporary file (mode 0600) in the directory dfd
// and returns its name and descriptor.
func createTemp(dfd int) (string, int, error) {
	for range 10 {
		var b [8]byte
		rand.Read(b[:])
		name := tmpPrefix + hex.EncodeToString(b[:])
		fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			return "", -1, mapErr(err)
		}
		return name, fd, nil
	}
	return "", -1, errors.New("memtool: cannot create a temporary file")
}

// Touch implements Toucher by setting the file's atime.
func (d *DirFS) Touch(_ context.Context, name string, t time.Time) error {
	if name == "" {
		return nil
	}
	if d.portable {
		return d.touchRoot(name, t)
	}
	return d.do(func(r *os.Root) error {
		return d.inParent(r, name, false, func(dfd int, base string) error {
			var st unix.Stat_t
			if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return mapErr(err)
			}
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return ErrSymlink
			}
			if recentlyAccessed(&st, t) {
				return nil
			}
			return setAtime(dfd, base, t)
		})
	})
}

// haveDescriptorFS: NewDirFS uses the descriptor implementation.
const haveDescriptorFS = true

// unlinked reports whether the directory fi was removed (no links left).
func unlinked(fi fs.FileInfo) bool {
	s, ok := fi.Sys().(*syscall.Stat_t)
	return ok && s.Nlink == 0
}

// syncDir fsyncs the directory f, so that its new entries survive a crash.
func syncDir(f *os.File) error { return f.Sync() }

// renameEntry renames oparent/obase to nparent/nbase (both parents exist
// and were checked; the destination was absent), never replacing an
// existing destination, and fsyncs the directories.
func (d *DirFS) renameEntry(r *os.Root, oparent, obase, nparent, nbase string, isDir bool) error {
	if d.portable {
		return renameEntryRoot(r, oparent, obase, nparent, nbase, isDir)
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
	err = renameNoReplace(int(od.Fd()), obase, int(nd.Fd()), nbase, isDir)
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
}

// The os.Root implementation's open flags: O_NONBLOCK, so that opening a
// FIFO swapped in after the lstat does not block; O_NOATIME (Linux) so that
// reads do not record accesses (see readAt).
const (
	rootOpenFlags = unix.O_NONBLOCK
	rootNoatime   = oNoatime
)
