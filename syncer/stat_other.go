//go:build !linux

package syncer

import (
	"io/fs"
	"os"
)

func statKey(fi fs.FileInfo) StatKey {
	return StatKey{Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
}

// syncEachFile: without syncfs, each file the engine writes is fsynced
// before its rename, and syncFS flushes the directories.
const syncEachFile = true

// syncFS flushes what the pass wrote: elsewhere than Linux the files were
// fsynced one by one (syncEachFile), and this syncs the directory (best
// effort: not every system can fsync a directory).
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// flushesTogether: syncFS flushes only the directory itself here, so never.
func flushesTogether(dir, stateDir string) bool { return false }
