package core_test

import (
	"testing"

	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/storagetest"
)

// TestCoreMemDriver runs the service conformance suite over the in-memory
// test driver, so core's rules are checked even without a database.
func TestCoreMemDriver(t *testing.T) {
	storagetest.RunCore(t, func(t *testing.T) storage.Driver { return newMemDriver() })
}
