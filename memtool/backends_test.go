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

func TestDirFSConformance(t *testing.T) {
	t.Parallel()
	memtooltest.Run(t, func(t *testing.T) memtool.FS { return newDirFS(t) })
}

func TestMemFSConformance(t *testing.T) {
	t.Parallel()
	memtooltest.Run(t, func(t *testing.T) memtool.FS { return memtool.NewMemFS(nil) })
}
