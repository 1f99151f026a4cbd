package postgres_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/postgres"
)

// serveCluster starts n `trove serve` processes on one fresh schema and
// returns a client of each. The schema is migrated and given an API key
// through core first; args are passed to every process.
func serveCluster(t testing.TB, n int, args ...string) []*httpNode {
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
		nodes = append(nodes, &httpNode{base: startServe(t, bin, dbURL, args...), key: secret, hc: hc})
	}
	return nodes
}

// TestMultiNodeHTTPLinearizable runs the linearizability workload through
// two `trove serve` processes on one PostgreSQL schema, over real HTTP.
func TestMultiNodeHTTPLinearizable(t *testing.T) {
	t.Parallel()
	testURL(t)
	nodes := serveCluster(t, 2)
	storeID, err := nodes[0].CreateStore(context.Background(), "multinode")
	if err != nil {
		t.Fatal(err)
	}
	runWorkload(t, []memAPI{nodes[0], nodes[1]}, storeID, 4, 8, 40)
}

// TestMultiNodeServeMemoryLimit: two `trove serve` processes started with
// --max-memories 5 on one database, many clients creating distinct paths
// through both: exactly 5 creates succeed, every other one is a 400
// invalid_request_error, and no listing through the API, during the load or
// after it, ever shows more than 5 memories.
func TestMultiNodeServeMemoryLimit(t *testing.T) {
	t.Parallel()
	testURL(t)
	const limit, clients, perClient = 5, 16, 4
	nodes := serveCluster(t, 2, "--max-memories", strconv.Itoa(limit))
	ctx := context.Background()
	storeID, err := nodes[0].CreateStore(ctx, "limit")
	if err != nil {
		t.Fatal(err)
	}

	// A watcher lists the store through both nodes while the creates run.
	done := make(chan struct{})
	watched := make(chan int, 1)
	go func() {
		lists := 0
		defer func() { watched <- lists }()
		for {
			select {
			case <-done:
				return
			default:
			}
			paths, err := listPaths(ctx, nodes[lists%2], storeID)
			if err != nil {
				t.Errorf("list during the load: %v", err)
				return
			}
			if len(paths) > limit {
				t.Errorf("a listing during the load shows %d memories, over the limit of %d: %v", len(paths), limit, paths)
				return
			}
			lists++
		}
	}()

	var wg sync.WaitGroup
	var mu sync.Mutex
	var created []string
	refused := 0
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				path := fmt.Sprintf("/limit/c%02d/%d.md", c, i)
				_, _, err := nodes[(c+i)%2].Create(ctx, storeID, path, path)
				mu.Lock()
				switch {
				case err == nil:
					created = append(created, path)
				case strings.HasPrefix(trove.ErrorMessage(err), "HTTP 400 invalid_request_error:") && strings.Contains(trove.ErrorMessage(err), fmt.Sprintf("limit of %d memories", limit)):
					refused++
				default:
					t.Errorf("create %s: %v, want success or 400 invalid_request_error naming the limit", path, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(done)
	lists := <-watched
	if len(created) != limit || refused != clients*perClient-limit {
		t.Fatalf("%d creates succeeded (%v) and %d were refused; want %d and %d", len(created), created, refused, limit, clients*perClient-limit)
	}
	slices.Sort(created)
	for i, n := range nodes {
		paths, err := listPaths(ctx, n, storeID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(created, paths); diff != "" {
			t.Fatalf("node %d lists (-acknowledged +listed):\n%s", i, diff)
		}
	}
	t.Logf("%d creates through 2 processes: %d acknowledged, %d refused; %d listings during the load", clients*perClient, len(created), refused, lists)
}

// listPaths lists every memory path of a store through n, in API order.
func listPaths(ctx context.Context, n *httpNode, storeID string) ([]string, error) {
	paths, page := []string{}, ""
	for {
		q := url.Values{"limit": {"100"}}
		if page != "" {
			q.Set("page", page)
		}
		var resp struct {
			Data []struct {
				Type string `json:"type"`
				Path string `json:"path"`
			} `json:"data"`
			NextPage *string `json:"next_page"`
		}
		if err := n.do(ctx, "GET", memPath(storeID)+"?"+q.Encode(), nil, &resp); err != nil {
			return nil, err
		}
		for _, it := range resp.Data {
			if it.Type != "memory" {
				return nil, fmt.Errorf("list item of type %q, want memory", it.Type)
			}
			paths = append(paths, it.Path)
		}
		if resp.NextPage == nil || *resp.NextPage == "" {
			return paths, nil
		}
		page = *resp.NextPage
	}
}
