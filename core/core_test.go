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
