package postgres_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/postgres"
)

// serveCluster starts n `trove serve` processes on one fresh schema and
// returns a client of each. The schema is migrated and given an API key
// through core first; env is passed to every process.
func serveCluster(t testing.TB, n int, env ...string) []*httpNode {
	t.Helper()
	url, schema := testURL(t), newSchema(t)
	db := openDBOn(t, url, schema, postgres.Options{MaxConns: 1})
	_, secret, err := core.New(db, core.Options{}).CreateKey(context.Background(), "wrkspc_multinode", "multinode")
	if err != nil {
		t.Fatal(err)
	}
	bin := troveBinary(t)
	dbURL := withParam(t, url, "search_path", schema)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var nodes []*httpNode
	for range n {
		nodes = append(nodes, &httpNode{base: startServe(t, bin, dbURL, env...), key: secret, hc: hc})
	}
	return nodes
}

// TestMultiNodeHTTPLinearizable runs the linearizability workload through
// two `trove serve` processes on one PostgreSQL schema, over real HTTP.
func TestMultiNodeHTTPLinearizable(t *testing.T) {
	testURL(t)
	nodes := serveCluster(t, 2)
	storeID, err := nodes[0].CreateStore(context.Background(), "multinode")
	if err != nil {
		t.Fatal(err)
	}
	runWorkload(t, []memAPI{nodes[0], nodes[1]}, storeID, 4, 8, 40)
}
