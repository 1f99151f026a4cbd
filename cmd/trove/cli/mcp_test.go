package cli

import (
	"bufio"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// mcpText returns the text of a tool result.
func mcpText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var sb strings.Builder
	for _, c := range res.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok {
			t.Fatalf("non-text content %T", c)
		}
		sb.WriteString(tc.Text)
	}
	return sb.String()
}

// exerciseMCP drives a connected client through the tools and checks the
// exact results.
func exerciseMCP(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if diff := cmp.Diff([]string{"memory", "search"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	steps := []struct {
		tool    string
		args    map[string]any
		want    string
		isError bool
	}{
		{"memory", map[string]any{"command": "view", "path": "/memories"},
			"Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n4.0K\t/memories", false},
		{"memory", map[string]any{"command": "create", "path": "/memories/prefs.md", "file_text": "tea: green\n"},
			"File created successfully at: /memories/prefs.md", false},
		{"memory", map[string]any{"command": "str_replace", "path": "/memories/prefs.md", "old_str": "green", "new_str": "oolong"},
			"The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\ttea: oolong\n     2\t", false},
		{"memory", map[string]any{"command": "view", "path": "/memories/prefs.md"},
			"Here's the content of /memories/prefs.md with line numbers:\n     1\ttea: oolong\n     2\t", false},
		{"memory", map[string]any{"command": "create", "path": "/memories/prefs.md", "file_text": "x"},
			"Error: File /memories/prefs.md already exists", true},
		{"memory", map[string]any{"command": "view", "path": "/etc/passwd"},
			"Error: Invalid path /etc/passwd: memory paths must be /memories or start with /memories/ (for example /memories/notes.md).", true},
		{"search", map[string]any{"query": "OOLONG"},
			"Found 1 memories under /memories matching \"OOLONG\":\n/memories/prefs.md\n     1\ttea: oolong", false},
		{"search", map[string]any{"query": ""}, "Error: Invalid parameter \"query\" for search: it must not be empty.", true},
	}
	for i, s := range steps {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: s.tool, Arguments: s.args})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if diff := cmp.Diff(s.want, mcpText(t, res)); diff != "" || res.IsError != s.isError {
			t.Errorf("step %d %s(%v): isError=%v want %v (-want +got):\n%s", i, s.tool, s.args, res.IsError, s.isError, diff)
		}
	}
}

// checkVersions reads the store through core: the two writes are versions
// by the expected actor.
func checkVersions(t *testing.T, data, storeID, keyID string) {
	t.Helper()
	svc, closeDB := openData(t, data)
	defer closeDB()
	vs, err := svc.ListVersions(workspaceCtx(), storeID, trove.ListVersionsParams{Limit: 100, View: trove.ViewFull})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := len(vs.Data) - 1; i >= 0; i-- {
		v := vs.Data[i]
		got = append(got, string(v.Operation)+" "+*v.Path+" "+strings.TrimSpace(*v.Content)+" by "+v.CreatedBy.APIKeyID)
	}
	want := []string{"created /prefs.md tea: green by " + keyID, "modified /prefs.md tea: oolong by " + keyID}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("versions in the store (-want +got):\n%s", diff)
	}
}

// TestMCPSubprocess builds trove and drives `trove mcp` as a real
// subprocess with the go-sdk client: over stdio on a local data dir, over
// streamable HTTP, and over stdio against a remote server (TROVE_URL).
func TestMCPSubprocess(t *testing.T) {
	t.Parallel()
	bin := buildTrove(t)
	// setup creates a data dir with a saved API key and one store.
	setup := func(t *testing.T, storeName string) (data, storeID, keyID, secret string) {
		data = t.TempDir()
		svc, closeDB := openData(t, data)
		defer closeDB()
		k, secret, err := svc.CreateKey(context.Background(), defaultWorkspace, "mcp test")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "api_key"), []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := svc.Authenticate(context.Background(), secret)
		if err != nil {
			t.Fatal(err)
		}
		st, err := svc.CreateStore(trove.WithPrincipal(context.Background(), p), trove.CreateStoreParams{Name: storeName})
		if err != nil {
			t.Fatal(err)
		}
		return data, st.ID, k.ID, secret
	}
	client := func() *mcp.Client { return mcp.NewClient(&mcp.Implementation{Name: "trove-test", Version: "1"}, nil) }
	env := func(extra ...string) []string {
		return append(os.Environ(), append([]string{"TROVE_DATA=", "TROVE_URL=", "TROVE_API_KEY=", "TROVE_DATABASE="}, extra...)...)
	}
	// connect starts trove args with env, speaking MCP over stdio, and
	// connects a client to it.
	connect := func(t *testing.T, env []string, args ...string) *mcp.ClientSession {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		cs, err := client().Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
		}
		return cs
	}

	t.Run("stdio-local", func(t *testing.T) {
		data, storeID, keyID, _ := setup(t, "Demo Memory")
		cs := connect(t, env(), "mcp", "--store", "Demo Memory", "--data", data)
		// serverInfo carries the version trove version prints.
		out, err := exec.Command(bin, "version").Output()
		if err != nil {
			t.Fatalf("trove version: %v", err)
		}
		info := cs.InitializeResult().ServerInfo
		if want := strings.Fields(string(out))[1]; info.Name != "trove" || info.Version != want {
			t.Errorf("serverInfo = %s %s, want trove %s (trove version: %q)", info.Name, info.Version, want, out)
		}
		exerciseMCP(t, cs)
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		checkVersions(t, data, storeID, keyID)
	})

	t.Run("http-local", func(t *testing.T) {
		data, storeID, keyID, _ := setup(t, "Demo Memory")
		cmd := exec.Command(bin, "mcp", "--store", storeID, "--data", data, "--http", "127.0.0.1:0")
		cmd.Env = env()
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
		}()
		sc := bufio.NewScanner(stderr)
		url := ""
		for sc.Scan() {
			if _, after, ok := strings.Cut(sc.Text(), " at http://"); ok {
				url = "http://" + after
				break
			}
		}
		if url == "" {
			t.Fatal("trove mcp --http did not announce its address")
		}
		go func() { // keep draining stderr
			for sc.Scan() {
			}
		}()
		cs, err := client().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		exerciseMCP(t, cs)
		cs.Close()
		checkVersions(t, data, storeID, keyID)
	})

	t.Run("stdio-remote", func(t *testing.T) {
		data, storeID, keyID, secret := setup(t, "Remote Memory")
		svc, closeDB := openData(t, data)
		srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}))
		cs := connect(t, env("TROVE_URL="+srv.URL, "TROVE_API_KEY="+secret), "mcp", "--store", "Remote Memory")
		exerciseMCP(t, cs)
		cs.Close()
		srv.Close()
		closeDB()
		checkVersions(t, data, storeID, keyID)
	})

	t.Run("stdio-session", func(t *testing.T) {
		data, notesID, _, secret := setup(t, "Team Notes")
		svc, closeDB := openData(t, data)
		p, err := svc.Authenticate(context.Background(), secret)
		if err != nil {
			t.Fatal(err)
		}
		pctx := trove.WithPrincipal(context.Background(), p)
		guide, err := svc.CreateStore(pctx, trove.CreateStoreParams{Name: "Style Guide"})
		if err != nil {
			t.Fatal(err)
		}
		sess, _, err := svc.CreateSession(pctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{
			{StoreID: notesID, Access: trove.AccessReadWrite},
			{StoreID: guide.ID, Access: trove.AccessReadOnly},
		}})
		closeDB()
		if err != nil {
			t.Fatal(err)
		}
		cs := connect(t, env(), "mcp", "--session", sess.ID, "--data", data)
		steps := []struct {
			args    map[string]any
			want    string
			isError bool
		}{
			{map[string]any{"command": "create", "path": "/memories/team-notes/a.md", "file_text": "hello"}, "File created successfully at: /memories/team-notes/a.md", false},
			{map[string]any{"command": "create", "path": "/memories/style-guide/b.md", "file_text": "x"}, "Error: The memory store refused the create of /memories/style-guide/b.md: memory store " + guide.ID + " is attached read_only to this session; writes are refused. Nothing was written.", true},
			{map[string]any{"command": "view", "path": "/memories"}, "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n4.0K\t/memories\n4.0K\t/memories/style-guide/\n4.0K\t/memories/team-notes/\n5B\t/memories/team-notes/a.md", false},
		}
		for i, s := range steps {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory", Arguments: s.args})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(s.want, mcpText(t, res)); diff != "" || res.IsError != s.isError {
				t.Errorf("step %d: isError=%v (-want +got):\n%s", i, res.IsError, diff)
			}
		}
		cs.Close()
		svc, closeDB = openData(t, data)
		defer closeDB()
		vs, err := svc.ListVersions(pctx, notesID, trove.ListVersionsParams{})
		if err != nil || len(vs.Data) != 1 || vs.Data[0].CreatedBy.Type != trove.ActorSession || vs.Data[0].CreatedBy.SessionID != sess.ID {
			t.Errorf("versions = %+v, %v; want one by session %s", vs, err, sess.ID)
		}
	})

	t.Run("usage-errors", func(t *testing.T) {
		data, _, _, _ := setup(t, "Demo Memory")
		tests := []struct {
			args []string
			env  []string
			code int
			want string
		}{
			{[]string{"mcp", "--data", data}, nil, 2, "trove: --store is required: name the memory store (by name or memstore_ ID) to serve, or give --session\n"},
			{[]string{"mcp", "--data", data, "--store", "Nope"}, nil, 3, "trove: no store named \"Nope\"; the stores are \"Demo Memory\" (on " + filepath.Join(data, "trove.db") + ")\n"},
			// The server down: the error names it.
			{[]string{"mcp", "--store", "x"}, []string{"TROVE_URL=http://127.0.0.1:1", "TROVE_API_KEY=trove_sk_x"}, 1, "trove: cannot reach the server http://127.0.0.1:1 (from TROVE_URL): the Trove server could not be reached: dial tcp 127.0.0.1:1: connect: connection refused; start it with trove serve, or point the client elsewhere (trove login URL)\n"},
			{[]string{"mcp", "--data", data, "--store", "Demo Memory", "--http", "0.0.0.0:7"}, nil, 2, "trove: --http \"0.0.0.0:7\": the MCP endpoint has no authentication, so it only listens on a loopback address (127.0.0.1:PORT or [::1]:PORT)\n"},
			{[]string{"mcp", "--store", "x"}, []string{"TROVE_URL=http://127.0.0.1:1"}, 2, "trove: TROVE_URL is set but TROVE_API_KEY is empty: export the server's API key (or a session token) in TROVE_API_KEY\n"},
		}
		for _, tt := range tests {
			cmd := exec.Command(bin, tt.args...)
			cmd.Env = env(tt.env...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != tt.code || stderr.String() != tt.want {
				t.Errorf("trove %v: exit %d, stderr %q; want %d, %q", tt.args, code, stderr.String(), tt.code, tt.want)
			}
		}
	})
}
