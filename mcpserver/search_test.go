package mcpserver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/mcpserver"
)

// noSearch is a service without full-text search, as httpapi.Client is
// against an older server.
type noSearch struct {
	trove.Services
	calls int
}

func (n *noSearch) Search(ctx context.Context, p trove.SearchParams) (*trove.Page[trove.SearchResult], error) {
	n.calls++
	return nil, &trove.Error{Code: trove.ENOTFOUND, Message: "no search", Err: errors.ErrUnsupported}
}

// TestSearchWithoutIndex: when the service has no search, the tool still
// answers, by reading the memories and matching the query as plain
// text (case-insensitive, anywhere in a word).
func TestSearchWithoutIndex(t *testing.T) {
	svc := newCore(t)
	storeID := newStore(t, svc, "m")
	ns := &noSearch{Services: svc}
	s, err := mcpserver.New(ns, []mcpserver.Mount{{StoreID: storeID}}, mcpserver.Options{Principal: principal})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s)
	runSteps(t, cs, []step{
		{"memory", map[string]any{"command": "create", "path": "/memories/people/alice.md", "file_text": "Alice likes tea.\n"}, "File created successfully at: /memories/people/alice.md", false},
		{"search", map[string]any{"query": "LIC"}, "Found 1 memories under /memories matching \"LIC\":\n/memories/people/alice.md\n     1\tAlice likes tea.", false},
	})
	if ns.calls != 1 {
		t.Errorf("Search called %d times, want 1 (then the fallback)", ns.calls)
	}
}
