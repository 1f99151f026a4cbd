package memtool

import (
	"errors"
	"io/fs"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames without ever replacing an existing destination:
// renameatx_np(RENAME_EXCL), falling back to renameNoReplaceCompat on
// filesystems that do not support the flag.
func renameNoReplace(olddir int, oldname string, newdir int, newname string, isDir bool) error {
	err := unix.RenameatxNp(olddir, oldname, newdir, newname, unix.RENAME_EXCL)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return renameNoReplaceCompat(olddir, oldname, newdir, newname, isDir)
	}
	return err
}

// atimeOf returns the access time of fi, an lstat result.
func atimeOf(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Atimespec.Sec, st.Atimespec.Nsec)
	}
	return fi.ModTime()
}
