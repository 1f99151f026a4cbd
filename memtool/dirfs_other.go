//go:build unix && !linux

package memtool

func renameNoReplace(olddir int, oldname string, newdir int, newname string, isDir bool) error {
	return renameNoReplaceCompat(olddir, oldname, newdir, newname, isDir)
}
