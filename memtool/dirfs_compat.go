//go:build unix

package memtool

import "golang.org/x/sys/unix"

// renameNoReplaceCompat is the portable no-clobber rename: link+unlink for
// files (link fails with EEXIST on an existing destination); for
// directories, which cannot be hard-linked, a check followed by rename,
// which is atomic only with respect to callers holding the engine's locks.
func renameNoReplaceCompat(olddir int, oldname string, newdir int, newname string, isDir bool) error {
	if !isDir {
		if err := unix.Linkat(olddir, oldname, newdir, newname, 0); err != nil {
			return err
		}
		return unix.Unlinkat(olddir, oldname, 0)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(newdir, newname, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return unix.EEXIST
	}
	return unix.Renameat(olddir, oldname, newdir, newname)
}
