package memtool

import (
	"errors"

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
