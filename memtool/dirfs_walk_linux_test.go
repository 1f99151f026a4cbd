package memtool_test

import (
	"testing"

	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/memtooltest"
)

// TestDirFSPortableWalk runs the suite and the link tests with the
// component walk that replaces openat2 where the kernel lacks it (other
// tests running meanwhile may take either path; both must be correct).
func TestDirFSPortableWalk(t *testing.T) {
	defer memtool.UseWalk()()
	t.Run("Symlinks", TestDirFSSymlinksAreOpaque)
	t.Run("SpecialFiles", TestDirFSSpecialFiles)
	memtooltest.Run(t, func(t *testing.T) memtool.FS { return newDirFS(t) })
}
