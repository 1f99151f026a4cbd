package memtool_test

import (
	"testing"

	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/memtooltest"
)

func newDirFS(t *testing.T) *memtool.DirFS {
	t.Helper()
	d, err := memtool.NewDirFS(t.TempDir() + "/memories")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// newPortableDirFS is newDirFS with the os.Root implementation.
func newPortableDirFS(t *testing.T) *memtool.DirFS {
	t.Helper()
	d, err := memtool.NewPortableDirFS(t.TempDir() + "/memories")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// forEachDirFS runs test with each implementation of DirFS: NewDirFS's
// (descriptors on Unix systems) and the os.Root one (Windows's).
func forEachDirFS(t *testing.T, test func(t *testing.T, newFS func(t *testing.T) *memtool.DirFS)) {
	t.Run("Default", func(t *testing.T) { test(t, newDirFS) })
	t.Run("Root", func(t *testing.T) { test(t, newPortableDirFS) })
}

func TestDirFSConformance(t *testing.T) {
	t.Parallel()
	memtooltest.Run(t, func(t *testing.T) memtool.FS { return newDirFS(t) })
}

// TestPortableDirFSConformance runs the suite on the os.Root
// implementation of DirFS, which Windows uses, on every system.
func TestPortableDirFSConformance(t *testing.T) {
	t.Parallel()
	memtooltest.RunWith(t, func(t *testing.T) memtool.FS { return newPortableDirFS(t) }, memtooltest.Capabilities{})
}

func TestMemFSConformance(t *testing.T) {
	t.Parallel()
	memtooltest.Run(t, func(t *testing.T) memtool.FS { return memtool.NewMemFS(nil) })
}
