//go:build !linux

package syncer

import (
	"io/fs"
	"os"
)

func statKey(fi fs.FileInfo) StatKey {
	return StatKey{Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
}

// syncFS flushes dir's file system; elsewhere than Linux it syncs the
// directory only (best effort).
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
