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
// conditional write when the FS holds a copy of the memory's content (here,
// from the create or the edit before), and one read more without copies
// (CopyBytes < 0), over core and over httpapi.Client (counted as HTTP
// requests).
func TestEditCost(t *testing.T) {
	t.Parallel()
	edits := []costEdit{
		{"str_replace", strReplace("/memories/notes.md", "beta", "gamma")},
		{"insert", insert("/memories/notes.md", 1, "delta")},
	}
	copies := []struct {
		name      string
		copyBytes int64
		want      map[string]int // service calls per edit
		wantHTTP  map[string]int // HTTP requests per edit
	}{
		{"copies", 0, map[string]int{"UpdateMemory": 1}, map[string]int{"POST memory": 1}},
		{"no-copies", -1, map[string]int{"GetMemory": 1, "UpdateMemory": 1}, map[string]int{"GET memory": 1, "POST memory": 1}},
	}
	for _, cp := range copies {
		t.Run("core-"+cp.name, func(t *testing.T) {
			t.Parallel()
			ctx := agent("apikey_cost")
			svc := newCore(t)
			c := &calls{Services: svc, n: map[string]int{}}
			tool := memtool.New(storefs.New(c, newStore(t, ctx, svc), storefs.Options{CopyBytes: cp.copyBytes}), memtool.Options{})
			mustOK(t, ctx, tool, create("/memories/notes.md", "alpha\nbeta\n"))
			c.take()
			for _, e := range edits {
				mustOK(t, ctx, tool, e.input)
				if diff := cmp.Diff(cp.want, c.take()); diff != "" {
					t.Errorf("%s: service calls (-want +got):\n%s", e.name, diff)
				}
			}
		})
		t.Run("http-"+cp.name, func(t *testing.T) {
			t.Parallel()
			testEditCostHTTP(t, edits, cp.copyBytes, cp.wantHTTP)
		})
	}
}

// costEdit is an edit TestEditCost counts the calls of.
type costEdit struct {
	name  string
	input []byte
}

// testEditCostHTTP checks the HTTP requests each of edits costs over
// httpapi.Client after a create.
func testEditCostHTTP(t *testing.T, edits []costEdit, copyBytes int64, want map[string]int) {
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
	tool := memtool.New(storefs.New(remote, newStore(t, ctx, remote), storefs.Options{CopyBytes: copyBytes}), memtool.Options{})
	mustOK(t, ctx, tool, create("/memories/notes.md", "alpha\nbeta\n"))
	rt.take()
	for _, e := range edits {
		mustOK(t, ctx, tool, e.input)
		if diff := cmp.Diff(want, rt.take()); diff != "" {
			t.Errorf("%s: HTTP requests (-want +got):\n%s", e.name, diff)
		}
	}
}

// TestEditStaleCopy makes another agent change a memory after agent A's FS
// kept its copy, then runs A's edit: the edit must be decided on the stored
// content, never on the stale copy (no lost update, no error the stored
// content does not warrant), at the cost of a refused write or a fresh read;
// and view always reads the store.
func TestEditStaleCopy(t *testing.T) {
	t.Parallel()
	// refusedCopy is the cost of an edit whose write of the stale copy is
	// refused, making writes in all: the refusal drops the memory from the
	// index, so the fresh read finds it again by listing (storefs.FS.Stat's
	// directory check and the parent's listing) before reading it.
	refusedCopy := func(writes int) map[string]int {
		return map[string]int{"UpdateMemory": writes, "ListMemories": 2, "GetMemory": 1}
	}
	const f = "/memories/notes.md"
	tests := []struct {
		name      string
		other     []byte // B's call after A's create ("x: 1\ny: 1\n")
		mine      []byte // A's call
		wantErr   string // "" when A's call must succeed
		wantText  string // A's result must contain it
		wantFinal string
		wantCalls map[string]int
	}{
		{name: "applies-to-both", other: strReplace(f, "y: 1", "y: B"), mine: strReplace(f, "x: 1", "x: A"),
			wantFinal: "x: A\ny: B\n", wantCalls: refusedCopy(2)},
		{name: "only-in-fresh", other: strReplace(f, "y: 1", "z: B"), mine: strReplace(f, "z: B", "z: A"),
			wantFinal: "x: 1\nz: A\n", wantCalls: map[string]int{"UpdateMemory": 1, "GetMemory": 1}},
		{name: "only-in-copy", other: strReplace(f, "x: 1", "x: B"), mine: strReplace(f, "x: 1", "x: A"),
			wantErr:   "No replacement was performed, old_str `x: 1` did not appear verbatim in /memories/notes.md.",
			wantFinal: "x: B\ny: 1\n", wantCalls: refusedCopy(1)},
		{name: "insert-range", other: strReplace(f, "x: 1\ny: 1\n", "x: B"), mine: insert(f, 2, "w: A"),
			wantErr:   "Error: Invalid `insert_line` parameter: 2. It should be within the range of lines of the file: [0, 1]",
			wantFinal: "x: B", wantCalls: refusedCopy(1)},
		{name: "view", other: strReplace(f, "y: 1", "y: B"), mine: view(f),
			wantText: "y: B", wantFinal: "x: 1\ny: B\n", wantCalls: map[string]int{"GetMemory": 1}},
		{name: "deleted", other: del(f), mine: strReplace(f, "x: 1", "x: A"),
			wantErr:   "Error: The path /memories/notes.md does not exist. Please provide a valid path.",
			wantCalls: map[string]int{"UpdateMemory": 1, "ListMemories": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := newCore(t)
			ctxA, ctxB := agent("apikey_A"), agent("apikey_B")
			storeID := newStore(t, ctxA, svc)
			c := &calls{Services: svc, n: map[string]int{}}
			a := newTool(c, storeID)
			mustOK(t, ctxA, a, create(f, "x: 1\ny: 1\n"))
			mustOK(t, ctxB, newTool(svc, storeID), tt.other)
			c.take()
			r := a.Execute(ctxA, tt.mine)
			switch {
			case tt.wantErr != "":
				if diff := cmp.Diff(tt.wantErr, r.String()); diff != "" || !r.IsError {
					t.Errorf("A's result IsError=%v (-want +got):\n%s", r.IsError, diff)
				}
			case r.IsError || !strings.Contains(r.String(), tt.wantText):
				t.Errorf("A's result: %s (want success containing %q)", r.String(), tt.wantText)
			}
			if diff := cmp.Diff(tt.wantCalls, c.take()); diff != "" {
				t.Errorf("service calls (-want +got):\n%s", diff)
			}
			if tt.wantFinal != "" {
				if got, _ := content(t, ctxA, svc, storeID, "/notes.md"); got != tt.wantFinal {
					t.Errorf("final content %q, want %q", got, tt.wantFinal)
				}
			}
		})
	}
}
