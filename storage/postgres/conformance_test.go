package postgres_test

import (
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/storagetest"
)

// openConformance opens the driver on its own fresh schema for one test of
// the conformance suites (storagetest for the port, coretest for core), so
// their tests run in parallel.
func openConformance(t *testing.T) storage.Driver { return openDB(t) }

func TestDriverConformance(t *testing.T) {
	t.Parallel()
	testURL(t)
	storagetest.RunDriver(t, openConformance)
}

func TestCoreConformance(t *testing.T) {
	t.Parallel()
	testURL(t)
	coretest.Run(t, openConformance)
}

// TestAgentsConformance runs the Managed Agents part of core's suite
// (agents, environments, the work queue) over the driver.
func TestAgentsConformance(t *testing.T) {
	t.Parallel()
	testURL(t)
	coretest.RunAgents(t, openConformance)
}
