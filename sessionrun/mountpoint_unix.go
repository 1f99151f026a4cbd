//go:build unix

package sessionrun

import (
	"os"
	"path/filepath"
	"syscall"
)

// isMountPoint reports whether dir is on another device than its parent:
// a file system is still mounted there, and removing its contents would
// delete them from the store.
func isMountPoint(dir string) bool {
	a, err1 := os.Lstat(dir)
	b, err2 := os.Lstat(filepath.Dir(dir))
	if err1 != nil || err2 != nil {
		return false
	}
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Dev != sb.Dev
}
