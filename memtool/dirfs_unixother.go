//go:build unix && !linux && !darwin

package memtool

import (
	"io/fs"
	"time"
)

func renameNoReplace(olddir int, oldname string, newdir int, newname string, isDir bool) error {
	return renameNoReplaceCompat(olddir, oldname, newdir, newname, isDir)
}

// atimeOf returns the modification time of fi for its access time: the
// stat layouts of these systems differ, and the descriptor implementation
// used here reads atimes itself (infoOfStat).
func atimeOf(fi fs.FileInfo) time.Time { return fi.ModTime() }
