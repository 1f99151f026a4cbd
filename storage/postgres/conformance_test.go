package postgres_test

import (
	"context"
	"testing"

	"github.com/trovehq/trove/core/coretest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
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

// TestNodesConformance runs core's multi-node suite over several drivers,
// each with its own pool, on one schema, as several nodes would have.
func TestNodesConformance(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	coretest.RunNodes(t, coretest.Nodes{ConcurrentWrites: true, Open: func(t *testing.T, n int) []storage.Driver {
		schema := newSchema(t)
		ds := make([]storage.Driver, n)
		for i := range ds {
			ds[i] = openDBOn(t, url, schema, postgres.Options{MaxConns: 2})
		}
		return ds
	}})
}

// TestSearchReopen: the conformance suite's crash check, with the indexer
// off so that the writes are still queued when the driver closes (searches
// then compute their vectors from the rows).
func TestSearchReopen(t *testing.T) {
	t.Parallel()
	url, schema := testURL(t), newSchema(t)
	storagetest.RunSearchReopen(t, func(t *testing.T, d storage.Driver) storage.Driver {
		if d != nil {
			var queued int
			if err := adminConn(t).QueryRow(context.Background(), "SELECT count(*) FROM "+schema+".memories_search_queue").Scan(&queued); err != nil {
				t.Fatal(err)
			}
			if queued == 0 {
				t.Fatal("nothing queued before the reopen: the test would not test the catch-up")
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
		}
		return openDBOn(t, url, schema, postgres.Options{SearchIndexDelay: -1})
	})
}
