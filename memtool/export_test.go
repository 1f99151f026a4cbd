package memtool

// NewPortableDirFS is NewDirFS with the os.Root implementation, the only
// one where there are no directory descriptors (Windows), so that its tests
// run everywhere.
func NewPortableDirFS(dir string) (*DirFS, error) { return newDirFS(dir, true) }
