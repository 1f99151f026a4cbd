package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/mcpserver"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

var principal = &trove.Principal{
	WorkspaceID: "wrkspc_mcp_test",
	Actor:       trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_mcp"},
}

func newCore(t *testing.T) *core.Service {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return core.New(db, core.Options{})
}

func newStore(t *testing.T, svc trove.Services, name string) string {
	t.Helper()
	st, err := svc.CreateStore(trove.WithPrincipal(context.Background(), principal), trove.CreateStoreParams{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return st.ID
}

// connect serves s to an in-process client.
func connect(t *testing.T, s *mcpserver.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call runs a tool and returns its text and error flag.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s, %v): %v", name, args, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			t.Fatalf("CallTool(%s): non-text content %T", name, c)
		}
		sb.WriteString(tc.Text)
	}
	return sb.String(), res.IsError
}

type step struct {
	tool    string
	args    map[string]any
	want    string
	isError bool
}

func runSteps(t *testing.T, cs *mcp.ClientSession, steps []step) {
	t.Helper()
	for i, s := range steps {
		got, isErr := call(t, cs, s.tool, s.args)
		if diff := cmp.Diff(s.want, got); diff != "" || isErr != s.isError {
			t.Errorf("step %d %s(%v): isError=%v want %v (-want +got):\n%s", i, s.tool, s.args, isErr, s.isError, diff)
		}
	}
}

func TestListTools(t *testing.T) {
	svc := newCore(t)
	s, err := mcpserver.New(svc, []mcpserver.Mount{{StoreID: newStore(t, svc, "m")}}, mcpserver.Options{Principal: principal})
	if err != nil {
		t.Fatal(err)
	}
	res, err := connect(t, s).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		schema, _ := tl.InputSchema.(map[string]any)
		if schema["type"] != "object" {
			t.Errorf("tool %s: schema type %v", tl.Name, schema["type"])
		}
		if tl.Name == "search" && (tl.Annotations == nil || !tl.Annotations.ReadOnlyHint) {
			t.Errorf("search is not marked read-only")
		}
	}
	if diff := cmp.Diff([]string{"memory", "search"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestMemoryAndSearch(t *testing.T) {
	svc := newCore(t)
	storeID := newStore(t, svc, "m")
	s, err := mcpserver.New(svc, []mcpserver.Mount{{StoreID: storeID}}, mcpserver.Options{Principal: principal})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s)
	m := func(kv ...any) map[string]any {
		out := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	runSteps(t, cs, []step{
		{"memory", m("command", "create", "path", "/memories/notes/todo.md", "file_text", "buy milk\ncall Bob\n"), "File created successfully at: /memories/notes/todo.md", false},
		{"memory", m("command", "create", "path", "/memories/notes/todo.md", "file_text", "x"), "Error: File /memories/notes/todo.md already exists", true},
		{"memory", m("command", "str_replace", "path", "/memories/notes/todo.md", "old_str", "Bob", "new_str", "Alice"),
			"The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tbuy milk\n     2\tcall Alice\n     3\t", false},
		{"memory", m("command", "view", "path", "/memories/notes/todo.md"), "Here's the content of /memories/notes/todo.md with line numbers:\n     1\tbuy milk\n     2\tcall Alice\n     3\t", false},
		{"memory", m("command", "create", "path", "/memories/people/alice.md", "file_text", "Alice likes tea.\n"), "File created successfully at: /memories/people/alice.md", false},
		{"memory", m("command", "view", "path", "/memories/nope.md"), "The path /memories/nope.md does not exist. Please provide a valid path.", true},
		{"memory", m("path", "/memories"), "Error: Missing required parameter \"command\": use one of view, create, str_replace, insert, delete, rename.", true},
		{"memory", m("command", "fly"), "Error: Unknown command \"fly\": use one of view, create, str_replace, insert, delete, rename.", true},
		{"search", m("query", "alice"), "Found 2 memories under /memories matching \"alice\":\n/memories/people/alice.md\n     1\tAlice likes tea.\n/memories/notes/todo.md\n     2\tcall Alice", false},
		{"search", m("query", "milk call"), "Found 1 memories under /memories matching \"milk call\":\n/memories/notes/todo.md\n     1\tbuy milk\n     2\tcall Alice", false},
		{"search", m("query", "\"likes tea\""), "Found 1 memories under /memories matching \"\\\"likes tea\\\"\":\n/memories/people/alice.md\n     1\tAlice likes tea.", false},
		{"search", m("query", "\"tea likes\""), "No memory under /memories matches \"\\\"tea likes\\\"\".", false},
		{"search", m("query", "."), "Found 2 memories under /memories matching \".\":\n/memories/notes/todo.md (the path matches)\n/memories/people/alice.md\n     1\tAlice likes tea.", false},
		{"search", m("query", "alice", "path_prefix", "/memories/people/"), "Found 1 memories under /memories/people/ matching \"alice\":\n/memories/people/alice.md\n     1\tAlice likes tea.", false},
		{"search", m("query", "people"), "Found 1 memories under /memories matching \"people\":\n/memories/people/alice.md (the path matches)", false},
		{"search", m("query", "al", "limit", 1), "Found 1 memories under /memories matching \"al\" (showing the first 1; raise limit or narrow path_prefix to see more):\n/memories/people/alice.md\n     1\tAlice likes tea.", false},
		{"search", m("query", "zebra"), "No memory under /memories matches \"zebra\".", false},
		{"search", m(), "Error: Missing required parameter \"query\" for search: give the text to find.", true},
		{"search", m("query", "  "), "Error: Invalid parameter \"query\" for search: it must not be empty.", true},
		{"search", m("query", 7), "Error: Invalid parameter \"query\" for search: expected a string.", true},
		{"search", m("query", "a", "limit", 0), "Error: Invalid parameter \"limit\" for search: 0; it must be an integer from 1 to 100.", true},
		{"search", m("query", "a", "limit", 2.5), "Error: Invalid parameter \"limit\" for search: 2.5; it must be an integer from 1 to 100.", true},
		{"search", m("query", "a", "path_prefix", "/etc/"), "Error: Invalid path /etc/: memory paths must be /memories or start with /memories/ (for example /memories/notes.md).", true},
		{"search", m("query", "a", "color", "red"), "Error: Unknown parameter \"color\" for search: use query, path_prefix and limit.", true},
	})

	// The writes are versions in the store, attributed to the principal.
	ctx := trove.WithPrincipal(context.Background(), principal)
	vs, err := svc.ListVersions(ctx, storeID, trove.ListVersionsParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := len(vs.Data) - 1; i >= 0; i-- {
		got = append(got, string(vs.Data[i].Operation)+" "+*vs.Data[i].Path+" by "+vs.Data[i].CreatedBy.APIKeyID)
	}
	want := []string{"created /notes/todo.md by apikey_mcp", "modified /notes/todo.md by apikey_mcp", "created /people/alice.md by apikey_mcp"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
}

func TestSeveralStores(t *testing.T) {
	svc := newCore(t)
	prefs, work := newStore(t, svc, "User Preferences"), newStore(t, svc, "Work")
	s, err := mcpserver.New(svc, []mcpserver.Mount{{StoreID: prefs, Slug: "user-preferences"}, {StoreID: work, Slug: "work"}}, mcpserver.Options{Principal: principal})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s)
	runSteps(t, cs, []step{
		{"memory", map[string]any{"command": "create", "path": "/memories/work/plan.md", "file_text": "ship v1\n"}, "File created successfully at: /memories/work/plan.md", false},
		{"memory", map[string]any{"command": "create", "path": "/memories/user-preferences/tea.md", "file_text": "green, no sugar\n"}, "File created successfully at: /memories/user-preferences/tea.md", false},
		{"memory", map[string]any{"command": "view", "path": "/memories"}, "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n4.0K\t/memories\n4.0K\t/memories/user-preferences/\n16B\t/memories/user-preferences/tea.md\n4.0K\t/memories/work/\n8B\t/memories/work/plan.md", false},
		{"search", map[string]any{"query": "v1"}, "Found 1 memories under /memories matching \"v1\":\n/memories/work/plan.md\n     1\tship v1", false},
		{"search", map[string]any{"query": "green", "path_prefix": "/memories/work"}, "No memory under /memories/work matches \"green\".", false},
		{"search", map[string]any{"query": "x", "path_prefix": "/memories/home/"}, "Error: The path_prefix /memories/home/ is not inside a store's directory; use one of /memories/user-preferences/, /memories/work/.", true},
	})
	if _, err := mcpserver.New(svc, []mcpserver.Mount{{StoreID: prefs, Slug: "a"}, {StoreID: work, Slug: "a"}}, mcpserver.Options{}); trove.ErrorCode(err) != trove.EINVALID {
		t.Errorf("duplicate slug: err = %v, want EINVALID", err)
	}
	if _, err := mcpserver.New(svc, []mcpserver.Mount{{StoreID: prefs, Slug: "a/b"}, {StoreID: work, Slug: "c"}}, mcpserver.Options{}); trove.ErrorCode(err) != trove.EINVALID {
		t.Errorf("slug with a slash: err = %v, want EINVALID", err)
	}
	if _, err := mcpserver.New(svc, nil, mcpserver.Options{}); trove.ErrorCode(err) != trove.EINVALID {
		t.Errorf("no mounts: err = %v, want EINVALID", err)
	}
}
