//go:build linux

package syncer

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noTmpfile is set once a file system refused O_TMPFILE: from then on
// createNew leaves every write to the temp file and rename of writeLocal.
var noTmpfile atomic.Bool

// procFD reports whether /proc/self/fd exists, through which createNew
// links an unnamed file (linkat with AT_EMPTY_PATH needs a capability that
// /proc does not).
var procFD = sync.OnceValue(func() bool {
	fi, err := os.Stat("/proc/self/fd")
	return err == nil && fi.IsDir()
})

// createNew writes b as the new file name in directory dir (relative to the
// synced directory) without ever replacing anything already there: the file
// is made unnamed in that directory (O_TMPFILE), written, then linked at
// name (linkat, which fails when name exists: errRace). No one ever sees it
// partly written, and a crash at any point leaves nothing behind (an
// unnamed file disappears with its last descriptor). Its bytes become
// durable with the pass's flush, like every write of writeLocal.
//
// Unlike a temp file and a rename, the file's creation (the costly part:
// allocating an inode) does not hold the directory's lock, so the writers
// of a first download create their files side by side instead of one at a
// time. ok is false when this system cannot (no O_TMPFILE on the file
// system, no /proc): nothing was done and the caller writes through a temp
// file and a rename.
func (e *Engine) createNew(dir, name string, b []byte) (key StatKey, ok bool, err error) {
	if noTmpfile.Load() || !procFD() {
		return StatKey{}, false, nil
	}
	d, err := e.dirFile(dir)
	if err != nil {
		return StatKey{}, true, err
	}
	rc, err := d.SyscallConn()
	if err != nil {
		return StatKey{}, true, err
	}
	cerr := rc.Control(func(dfd uintptr) {
		key, ok, err = createAt(int(dfd), name, b)
	})
	if cerr != nil {
		return StatKey{}, true, cerr
	}
	return key, ok, err
}

// createAt is createNew in the directory open as dfd.
func createAt(dfd int, name string, b []byte) (StatKey, bool, error) {
	fd, err := unix.Openat(dfd, ".", unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, 0o644)
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) {
			noTmpfile.Store(true)
			return StatKey{}, false, nil
		}
		return StatKey{}, true, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	for rest := b; len(rest) > 0; {
		n, err := unix.Write(fd, rest)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return StatKey{}, true, &os.PathError{Op: "write", Path: name, Err: err}
		}
		rest = rest[n:]
	}
	for {
		err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), dfd, name, unix.AT_SYMLINK_FOLLOW)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if errors.Is(err, unix.EEXIST) {
		return StatKey{}, true, errRace // never overwrite bytes the planner did not see
	}
	if err != nil {
		return StatKey{}, true, &os.LinkError{Op: "link", Old: "(unnamed)", New: name, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return StatKey{}, true, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	return StatKey{
		Ino:     st.Ino,
		Size:    st.Size,
		MtimeNs: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		CtimeNs: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
	}, true, nil
}
