package memtool

import (
	"io/fs"
	"syscall"
	"time"
)

// atimeOf returns the last access time of fi, an lstat result.
func atimeOf(fi fs.FileInfo) time.Time {
	if a, ok := fi.Sys().(*syscall.Win32FileAttributeData); ok {
		return time.Unix(0, a.LastAccessTime.Nanoseconds())
	}
	return fi.ModTime()
}
