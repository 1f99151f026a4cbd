package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/postgres"
)

// coreNode is a node in process: a core.Service over its own pool.
type coreNode struct {
	svc *core.Service
	ctx context.Context // carries the principal
}

func (n coreNode) Create(_ context.Context, storeID, path, content string) (string, string, error) {
	m, err := n.svc.CreateMemory(n.ctx, storeID, trove.CreateMemoryParams{Path: path, Content: content})
	if err != nil {
		return "", "", err
	}
	return m.ID, m.VersionID, nil
}

func (n coreNode) Update(_ context.Context, storeID, id string, content, path *string, pre string) (string, error) {
	m, err := n.svc.UpdateMemory(n.ctx, storeID, id, trove.UpdateMemoryParams{Content: content, Path: path, PreconditionSHA256: pre})
	if err != nil {
		return "", err
	}
	return m.VersionID, nil
}

func (n coreNode) Get(_ context.Context, storeID, id string) (string, string, error) {
	m, err := n.svc.GetMemory(n.ctx, storeID, id, trove.ViewFull)
	if err != nil {
		return "", "", err
	}
	return m.Path, *m.Content, nil
}

func (n coreNode) Delete(_ context.Context, storeID, id string) error {
	return n.svc.DeleteMemory(n.ctx, storeID, id, "")
}

func (n coreNode) VersionIDs(_ context.Context, storeID, memoryID string) (map[string]trove.Operation, error) {
	out := map[string]trove.Operation{}
	cursor := ""
	for {
		page, err := n.svc.ListVersions(n.ctx, storeID, trove.ListVersionsParams{MemoryID: memoryID, Limit: 100, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, v := range page.Data {
			out[v.ID] = v.Operation
		}
		if page.NextPage == "" {
			return out, nil
		}
		cursor = page.NextPage
	}
}

func (n coreNode) Count(_ context.Context, storeID string) (int, error) {
	total, cursor := 0, ""
	for {
		page, err := n.svc.ListMemories(n.ctx, storeID, trove.ListMemoriesParams{Limit: 100, Cursor: cursor})
		if err != nil {
			return 0, err
		}
		total += len(page.Data)
		if page.NextPage == "" {
			return total, nil
		}
		cursor = page.NextPage
	}
}

// twoCoreNodes opens two independent pools on one schema, each with its
// own core.Service: two nodes, in process.
func twoCoreNodes(t *testing.T, limits trove.Limits) []memAPI {
	url, schema := testURL(t), newSchema(t)
	ctx := apiPrincipal("ws")
	var nodes []memAPI
	for range 2 {
		db := openDBOn(t, url, schema, postgres.Options{MaxConns: 4})
		nodes = append(nodes, coreNode{svc: core.New(db, core.Options{Limits: limits}), ctx: ctx})
	}
	return nodes
}

func newStore(t *testing.T, n memAPI) string {
	t.Helper()
	cn := n.(coreNode)
	st, err := cn.svc.CreateStore(cn.ctx, trove.CreateStoreParams{Name: "multinode"})
	if err != nil {
		t.Fatal(err)
	}
	return st.ID
}

// TestMultiNodeCoreLinearizable runs the linearizability workload through
// two core.Services on two pools (two nodes sharing one database).
func TestMultiNodeCoreLinearizable(t *testing.T) {
	t.Parallel()
	nodes := twoCoreNodes(t, trove.Limits{})
	runWorkload(t, nodes, newStore(t, nodes[0]), 4, 8, 40)
}

// TestMultiNodeCoreMemoryLimit: two nodes creating distinct paths at once
// never push a store past its memory limit.
func TestMultiNodeCoreMemoryLimit(t *testing.T) {
	t.Parallel()
	const limit = 5
	nodes := twoCoreNodes(t, trove.Limits{MaxMemoriesPerStore: limit})
	storeID := newStore(t, nodes[0])
	checkMemoryLimit(t, nodes, storeID, limit)
}

// checkMemoryLimit has 8 clients on the nodes create 6 distinct paths each;
// exactly limit creates succeed, the others are EINVALID, and the store
// ends with limit memories.
func checkMemoryLimit(t *testing.T, nodes []memAPI, storeID string, limit int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 6 {
				_, _, err := nodes[c%len(nodes)].Create(ctx, storeID, fmt.Sprintf("/limit/%d-%d", c, i), "x")
				mu.Lock()
				switch trove.ErrorCode(err) {
				case "":
					ok++
				case trove.EINVALID:
					refused++
				default:
					t.Errorf("create: %v", err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != limit || refused != 48-limit {
		t.Fatalf("%d creates succeeded and %d were refused; want %d and %d", ok, refused, limit, 48-limit)
	}
	for i, n := range nodes {
		if got, err := n.Count(ctx, storeID); err != nil || got != limit {
			t.Fatalf("node %d sees %d memories (%v), want %d", i, got, err, limit)
		}
	}
}
