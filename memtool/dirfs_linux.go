package memtool

import (
	"errors"
	"io/fs"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames without ever replacing an existing destination:
// renameat2(RENAME_NOREPLACE), falling back to renameNoReplaceCompat on
// filesystems that do not support the flag.
func renameNoReplace(olddir int, oldname string, newdir int, newname string, isDir bool) error {
	err := unix.Renameat2(olddir, oldname, newdir, newname, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) {
		return renameNoReplaceCompat(olddir, oldname, newdir, newname, isDir)
	}
	return err
}

// setAtime sets the access time of base in the directory dfd to t, leaving
// the modification time alone, without following a link.
func setAtime(dfd int, base string, t time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), {Nsec: unix.UTIME_OMIT}}
	return mapErr(unix.UtimesNanoAt(dfd, base, ts, unix.AT_SYMLINK_NOFOLLOW))
}

// openat2Unsupported is set once openat2 turned out to be unavailable
// (kernel older than 5.6, or filtered), to use the portable walk.
var openat2Unsupported atomic.Bool

// openBeneath opens the directory rel ("." for the root) below the
// directory rootfd with a single openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS): the kernel refuses any symbolic link on the way
// (ELOOP, ErrSymlink) and any escape from rootfd. Where openat2 is not
// available it walks the components with O_NOFOLLOW (openBeneathWalk).
func openBeneath(rootfd int, rel string) (int, error) {
	if !openat2Unsupported.Load() {
		how := unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		for range 3 {
			fd, err := unix.Openat2(rootfd, rel, &how)
			switch {
			case err == nil:
				return fd, nil
			case errors.Is(err, unix.EAGAIN):
				continue // a concurrent rename was detected: retry
			case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM), errors.Is(err, unix.EINVAL):
				openat2Unsupported.Store(true)
			case errors.Is(err, unix.EXDEV):
				return -1, ErrSymlink // an escape: only a link could do that
			default:
				return -1, mapErr(err)
			}
			break
		}
	}
	return openBeneathWalk(rootfd, rel)
}

// oNoatime is O_NOATIME: reads do not update the access time.
const oNoatime = unix.O_NOATIME

// atimeOf returns the access time of fi, an lstat result.
func atimeOf(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	return fi.ModTime()
}
