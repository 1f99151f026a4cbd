package postgres_test

import (
	"testing"

	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/storagetest"
)

// openConformance opens the driver on its own fresh schema for one test of
// the shared conformance suites.
func openConformance(t *testing.T) storage.Driver { return openDB(t) }

func TestDriverConformance(t *testing.T) {
	testURL(t)
	storagetest.RunDriver(t, openConformance)
}

func TestCoreConformance(t *testing.T) {
	testURL(t)
	storagetest.RunCore(t, openConformance)
}
