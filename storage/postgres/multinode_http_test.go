package postgres_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/postgres"
)

// inProcessCluster serves n httpapi servers on loopback, each over its own
// core.Service and pool on one fresh schema: the same topology as
// serveCluster without building the binary.
func inProcessCluster(t *testing.T, n int, limits trove.Limits) []*httpNode {
	t.Helper()
	url, schema := testURL(t), newSchema(t)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var nodes []*httpNode
	var secret string
	for i := range n {
		db := openDBOn(t, url, schema, postgres.Options{MaxConns: 4})
		svc := core.New(db, core.Options{Limits: limits})
		if i == 0 {
			var err error
			if _, secret, err = svc.CreateKey(context.Background(), "wrkspc_multinode", "multinode"); err != nil {
				t.Fatal(err)
			}
		}
		srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc, Health: db.Ping}))
		t.Cleanup(srv.Close)
		nodes = append(nodes, &httpNode{base: srv.URL, key: secret, hc: hc})
	}
	return nodes
}

// TestMultiNodeHTTPInProcess runs the linearizability workload and the
// memory-limit check through two in-process HTTP servers, each on its own
// pool.
func TestMultiNodeHTTPInProcess(t *testing.T) {
	t.Parallel()
	testURL(t)
	const limit = 5
	nodes := inProcessCluster(t, 2, trove.Limits{MaxMemoriesPerStore: limit})
	ctx := context.Background()
	t.Run("linearizable", func(t *testing.T) {
		storeID, err := nodes[0].CreateStore(ctx, "multinode")
		if err != nil {
			t.Fatal(err)
		}
		// Slots hold at most 2 memories each: 2 slots stay under the limit.
		runWorkload(t, []memAPI{nodes[0], nodes[1]}, storeID, 2, 8, 40)
	})
	t.Run("memory limit", func(t *testing.T) {
		storeID, err := nodes[1].CreateStore(ctx, "limit")
		if err != nil {
			t.Fatal(err)
		}
		checkMemoryLimit(t, []memAPI{nodes[0], nodes[1]}, storeID, limit)
	})
}
