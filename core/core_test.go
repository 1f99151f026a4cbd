package core_test

import (
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage"
)

// TestCoreMemDriver runs the service conformance suite over the in-memory
// test driver, which checks core's rules independently of any database's
// own guards. The drivers' tests run the same suite over SQLite and
// PostgreSQL (storage/sqlite, storage/postgres: TestCoreConformance).
func TestCoreMemDriver(t *testing.T) {
	t.Parallel()
	coretest.Run(t, func(t *testing.T) storage.Driver { return newMemDriver() })
}

// TestNodesMemDriver runs the multi-node suite with every node on the one
// in-memory driver (whose Writes run one at a time).
func TestNodesMemDriver(t *testing.T) {
	t.Parallel()
	coretest.RunNodes(t, coretest.Nodes{Open: func(t *testing.T, n int) []storage.Driver {
		d := newMemDriver()
		ds := make([]storage.Driver, n)
		for i := range ds {
			ds[i] = d
		}
		return ds
	}})
}
