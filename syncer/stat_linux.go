//go:build linux

package syncer

import (
	"os"

	"golang.org/x/sys/unix"
	"io/fs"
	"syscall"
)

func statKey(fi fs.FileInfo) StatKey {
	k := StatKey{Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.Ino = uint64(st.Ino)
		k.CtimeNs = int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec)
	}
	return k
}

// syncEachFile: on Linux one syncfs (syncFS) flushes every file a pass
// wrote, so none is fsynced on its own.
const syncEachFile = false

// syncFS flushes the file system holding dir (one syncfs call instead of an
// fsync per written file).
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

// flushesTogether reports whether syncFS(dir) also flushes files in
// stateDir: both on one file system (syncfs flushes a whole file system).
func flushesTogether(dir, stateDir string) bool {
	var a, b unix.Stat_t
	if unix.Stat(dir, &a) != nil || unix.Stat(stateDir, &b) != nil {
		return false
	}
	return a.Dev == b.Dev
}
