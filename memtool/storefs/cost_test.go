package storefs_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/storefs"
)

// calls counts the service calls made through it, by method.
type calls struct {
	trove.Services
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) add(m string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[m]++
}

func (c *calls) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = map[string]int{}
	return out
}

func (c *calls) GetMemory(ctx context.Context, s, id string, v trove.View) (*trove.Memory, error) {
	c.add("GetMemory")
	return c.Services.GetMemory(ctx, s, id, v)
}

func (c *calls) ListMemories(ctx context.Context, s string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	c.add("ListMemories")
	return c.Services.ListMemories(ctx, s, p)
}

func (c *calls) CreateMemory(ctx context.Context, s string, p trove.CreateMemoryParams) (*trove.Memory, error) {
	c.add("CreateMemory")
	return c.Services.CreateMemory(ctx, s, p)
}

func (c *calls) UpdateMemory(ctx context.Context, s, id string, p trove.UpdateMemoryParams) (*trove.Memory, error) {
	c.add("UpdateMemory")
	return c.Services.UpdateMemory(ctx, s, id, p)
}

func (c *calls) DeleteMemory(ctx context.Context, s, id, sha string) error {
	c.add("DeleteMemory")
	return c.Services.DeleteMemory(ctx, s, id, sha)
}

// requests counts the HTTP requests a client sends, by method and path
// shape.
type requests struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *requests) RoundTrip(req *http.Request) (*http.Response, error) {
	shape := "GET memory"
	switch {
	case req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/memories"):
		shape = "GET memories"
	case req.Method != http.MethodGet:
		shape = req.Method + " memory"
	}
	r.mu.Lock()
	r.n[shape]++
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (r *requests) take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.n
	r.n = map[string]int{}
	return out
}

// TestEditCost checks that a str_replace or insert over a store costs one
// read and one conditional write once the memory's ID is known (here, from
// the create), over core and over httpapi.Client (counted as HTTP requests).
func TestEditCost(t *testing.T) {
	t.Parallel()
	edits := []struct {
		name  string
		input []byte
	}{
		{"str_replace", strReplace("/memories/notes.md", "beta", "gamma")},
		{"insert", insert("/memories/notes.md", 1, "delta")},
	}
	oneEach := map[string]int{"GetMemory": 1, "UpdateMemory": 1}

	t.Run("core", func(t *testing.T) {
		t.Parallel()
		ctx := agent("apikey_cost")
		svc := newCore(t)
		c := &calls{Services: svc, n: map[string]int{}}
		tool := memtool.New(storefs.New(c, newStore(t, ctx, svc), storefs.Options{}), memtool.Options{})
		mustOK(t, ctx, tool, create("/memories/notes.md", "alpha\nbeta\n"))
		c.take()
		for _, e := range edits {
			mustOK(t, ctx, tool, e.input)
			if diff := cmp.Diff(oneEach, c.take()); diff != "" {
				t.Errorf("%s: service calls (-want +got):\n%s", e.name, diff)
			}
		}
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		ctx := agent("apikey_cost")
		svc := newCore(t)
		_, secret, err := svc.CreateKey(context.Background(), workspace, "cost test")
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}))
		t.Cleanup(srv.Close)
		rt := &requests{n: map[string]int{}}
		remote := httpapi.NewClient(srv.URL, secret, httpapi.WithHTTPClient(&http.Client{Transport: rt}))
		tool := memtool.New(storefs.New(remote, newStore(t, ctx, remote), storefs.Options{}), memtool.Options{})
		mustOK(t, ctx, tool, create("/memories/notes.md", "alpha\nbeta\n"))
		rt.take()
		for _, e := range edits {
			mustOK(t, ctx, tool, e.input)
			if diff := cmp.Diff(map[string]int{"GET memory": 1, "POST memory": 1}, rt.take()); diff != "" {
				t.Errorf("%s: HTTP requests (-want +got):\n%s", e.name, diff)
			}
		}
	})
}
