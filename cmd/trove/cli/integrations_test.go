package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trovehq/trove/internal/claudetest"
	"github.com/trovehq/trove/internal/skipnote"
)

// snippetRE finds the snippets docs/integrations.md marks as tested: the
// marker comment, then one fenced block.
var snippetRE = regexp.MustCompile("(?s)<!-- tested: ([a-z0-9-]+) -->\n```[a-z]*\n(.*?)\n```")

// docSnippets returns docs/integrations.md's tested snippets by name.
func docSnippets(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "integrations.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range snippetRE.FindAllStringSubmatch(string(b), -1) {
		if out[m[1]] != "" {
			t.Fatalf("docs/integrations.md: snippet %q marked twice", m[1])
		}
		out[m[1]] = m[2]
	}
	return out
}

// TestIntegrationSnippets runs every snippet docs/integrations.md marks as
// tested, exactly as written but for the example values a reader replaces
// (server URL, key, port, home directory), against a real trove serve:
// each MCP configuration is launched as its client would launch it and
// driven by the MCP Go SDK's client, which then writes a memory that must
// be a version in the store by the configured key.
func TestIntegrationSnippets(t *testing.T) {
	bin := buildTrove(t)
	snippets := docSnippets(t)
	want := []string{"claude-code-cli", "claude-code-json", "claude-code-memory", "claude-desktop", "cursor", "http-server", "http-client", "typescript"}
	for _, name := range want {
		if snippets[name] == "" {
			t.Fatalf("docs/integrations.md has no tested snippet %q", name)
		}
	}
	if len(snippets) != len(want) {
		t.Fatalf("docs/integrations.md marks %d snippets as tested; this test runs %d: add the new one here", len(snippets), len(want))
	}

	data := t.TempDir()
	srv, url := startServeProcess(t, bin, data)
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	keyBytes, err := os.ReadFile(filepath.Join(data, "api_key"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(keyBytes))
	// The environment of a user who followed the page's first block; HOME
	// is the test's so nothing of this machine's is read or written.
	home := t.TempDir()
	userEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TROVE_URL=" + url, "TROVE_API_KEY=" + key}
	runTrove := func(t *testing.T, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = userEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("trove %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	runTrove(t, "stores", "create", "Agent memory")
	// reader replaces the page's example values by this test's.
	reader := strings.NewReplacer("http://127.0.0.1:7007", url, "trove_sk_YOUR_KEY", key)

	// memoryOf checks that path holds text in the store, written by the key.
	memoryOf := func(t *testing.T, store, path, text string) {
		t.Helper()
		out := runTrove(t, "memories", "cat", store, path)
		if out != text {
			t.Errorf("%s %s = %q, want %q", store, path, out, text)
		}
		var hist struct {
			Data []struct {
				CreatedBy *struct {
					Type     string `json:"type"`
					APIKeyID string `json:"api_key_id"`
				} `json:"created_by"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(runTrove(t, "memories", "history", store, path, "-o", "json")), &hist); err != nil {
			t.Fatal(err)
		}
		// The server has one key, the one the snippets were given.
		if len(hist.Data) != 1 || hist.Data[0].CreatedBy == nil || hist.Data[0].CreatedBy.Type != "api_actor" || !strings.HasPrefix(hist.Data[0].CreatedBy.APIKeyID, "apikey_") {
			t.Errorf("history of %s: want one version by the API key, got %+v", path, hist.Data)
		}
	}
	// drive writes /memories/<name>.md through a connected MCP client and
	// reads it back.
	drive := func(t *testing.T, cs *mcp.ClientSession, name string) {
		t.Helper()
		ctx := context.Background()
		text := "written through " + name + "\n"
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory", Arguments: map[string]any{
			"command": "create", "path": "/memories/" + name + ".md", "file_text": text}})
		if err != nil {
			t.Fatal(err)
		}
		if got := mcpText(t, res); res.IsError || got != "File created successfully at: /memories/"+name+".md" {
			t.Fatalf("create: %q (error %v)", got, res.IsError)
		}
		memoryOf(t, "Agent memory", "/"+name+".md", text)
	}
	// launch starts a stdio server entry as an MCP client launches it: its
	// command found on PATH, only its env added to a bare environment.
	launch := func(t *testing.T, name string, entry stdioEntry) {
		t.Helper()
		cmd := exec.Command(entry.Command, entry.Args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, entry.Env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).
			Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
		}
		defer cs.Close()
		drive(t, cs, name)
	}

	t.Run("claude-code-cli", func(t *testing.T) {
		// bash runs the line exactly as written, with claude a function
		// that prints the arguments claude would get.
		line := reader.Replace(snippets["claude-code-cli"])
		cmd := exec.Command("bash", "-euc", `claude() { printf '%s\0' "$@"; }; `+line)
		cmd.Env = userEnv
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash: %v", err)
		}
		args := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		entry, err := parseClaudeMCPAdd(args)
		if err != nil {
			t.Fatal(err)
		}
		launch(t, "claude-code-cli", entry)
	})
	for _, tc := range []struct {
		name   string
		expand func(string) string // the client's variable syntax
	}{
		{"claude-code-json", func(s string) string { return expandVars(s, claudeCodeVarRE, userEnv) }},
		{"claude-desktop", func(s string) string { return s }},
		{"cursor", func(s string) string { return expandVars(s, cursorVarRE, userEnv) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg struct {
				MCPServers map[string]struct {
					Type    string            `json:"type"`
					Command string            `json:"command"`
					Args    []string          `json:"args"`
					Env     map[string]string `json:"env"`
				} `json:"mcpServers"`
			}
			if err := json.Unmarshal([]byte(reader.Replace(snippets[tc.name])), &cfg); err != nil {
				t.Fatalf("the snippet is not JSON: %v", err)
			}
			s, ok := cfg.MCPServers["trove"]
			if !ok || len(cfg.MCPServers) != 1 || (s.Type != "" && s.Type != "stdio") {
				t.Fatalf("want one stdio server named trove, got %+v", cfg.MCPServers)
			}
			entry := stdioEntry{Command: s.Command, Args: s.Args}
			for k, v := range s.Env {
				entry.Env = append(entry.Env, k+"="+tc.expand(v))
			}
			launch(t, tc.name, entry)
		})
	}

	t.Run("http", func(t *testing.T) {
		addr := freeLoopbackAddr(t)
		rep := strings.NewReplacer("127.0.0.1:8765", addr)
		cmd := exec.Command("bash", "-euc", "exec "+rep.Replace(snippets["http-server"]))
		cmd.Env = userEnv
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
		sc := bufio.NewScanner(stderr)
		if !sc.Scan() || !strings.Contains(sc.Text(), "http://"+addr+"/mcp") {
			t.Fatalf("trove mcp --http did not announce http://%s/mcp: %q", addr, sc.Text())
		}
		go func() {
			for sc.Scan() {
			}
		}()
		var cfg struct {
			MCPServers map[string]struct {
				Type string `json:"type"`
				URL  string `json:"url"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(rep.Replace(snippets["http-client"])), &cfg); err != nil {
			t.Fatalf("the client snippet is not JSON: %v", err)
		}
		s := cfg.MCPServers["trove"]
		if s.Type != "http" || s.URL == "" {
			t.Fatalf("want an http server named trove, got %+v", cfg.MCPServers)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "http", Version: "1"}, nil).
			Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		drive(t, cs, "http-client")
	})

	t.Run("claude-code-memory", func(t *testing.T) {
		// Claude Code's auto-memory folder of a project, as it writes it.
		dir := filepath.Join(home, ".claude", "projects", "-home-you-src-app", "memory")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		const note = "# Memory\n\n- The app's tests need PostgreSQL.\n"
		if err := os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte(note), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "-euc", snippets["claude-code-memory"])
		cmd.Env = userEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		memoryOf(t, "Claude Code memory", "/MEMORY.md", note)
	})

	t.Run("typescript", func(t *testing.T) {
		modules := nodeModules(t)
		model := claudetest.New(t,
			claudetest.Turn{ToolUses: []claudetest.ToolUse{{Name: "memory", Input: map[string]any{
				"command": "create", "path": "/memories/preferences.md", "file_text": "green tea\n"}}}},
			claudetest.Turn{ToolUses: []claudetest.ToolUse{{Name: "memory", Input: map[string]any{
				"command": "create", "path": "/memories/preferences.md", "file_text": "again\n"}}}},
			claudetest.Turn{Text: "Noted: green tea."},
		)
		dir, err := os.MkdirTemp(modules, "snippet-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		script := filepath.Join(dir, "agent.mjs")
		if err := os.WriteFile(script, []byte(snippets["typescript"]), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", script)
		cmd.Env = append(userEnv, "ANTHROPIC_API_KEY=sk-ant-test", "ANTHROPIC_BASE_URL="+model.URL)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node: %v\nstderr: %s", err, stderr.String())
		}
		if got := strings.TrimSpace(string(out)); got != "Noted: green tea." {
			t.Errorf("the agent printed %q, want the model's reply", got)
		}
		memoryOf(t, "Agent memory", "/preferences.md", "green tea\n")
		// The second create was refused (the file exists): the model got
		// the memory tool's error string, marked as an error.
		reqs := model.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d Messages requests, want 3", len(reqs))
		}
		last := string(reqs[2].Messages[len(reqs[2].Messages)-1])
		if !strings.Contains(last, `"is_error":true`) || !strings.Contains(last, "already exists") {
			t.Errorf("the refused create's result reached the model as %s", last)
		}
	})
}

// stdioEntry is an MCP client's entry for a server it launches.
type stdioEntry struct {
	Command string
	Args    []string
	Env     []string // KEY=VALUE
}

// parseClaudeMCPAdd reads `claude mcp add` arguments as Claude Code does:
// options, the server's name, then -- and the command. --env takes one or
// more KEY=VALUE values up to the next option (commander's variadic
// option), so a name written after --env is taken for a value and refused,
// as claude refuses it.
func parseClaudeMCPAdd(args []string) (stdioEntry, error) {
	var e stdioEntry
	if len(args) < 2 || args[0] != "mcp" || args[1] != "add" {
		return e, errorf("want claude mcp add …, got %q", args)
	}
	var name string
	rest := args[2:]
	for len(rest) > 0 {
		a := rest[0]
		rest = rest[1:]
		switch {
		case a == "--":
			if name == "" || len(rest) == 0 {
				return e, errorf("claude mcp add: want NAME -- COMMAND [ARGS…], got %q", args)
			}
			e.Command, e.Args = rest[0], rest[1:]
			return e, nil
		case a == "--transport" || a == "-t" || a == "--scope" || a == "-s":
			if len(rest) == 0 {
				return e, errorf("%s needs a value", a)
			}
			if (a == "--transport" || a == "-t") && rest[0] != "stdio" {
				return e, errorf("--transport %s: this snippet launches a command", rest[0])
			}
			rest = rest[1:]
		case a == "--env" || a == "-e":
			n := 0
			for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
				if !strings.Contains(rest[0], "=") {
					return e, errorf("Invalid environment variable format: %s, environment variables should be added as: -e KEY1=value1 -e KEY2=value2", rest[0])
				}
				e.Env = append(e.Env, rest[0])
				rest, n = rest[1:], n+1
			}
			if n == 0 {
				return e, errorf("--env needs KEY=VALUE")
			}
		case strings.HasPrefix(a, "-"):
			return e, errorf("claude mcp add: option %s is not modelled by this test", a)
		case name == "":
			name = a
		default:
			return e, errorf("claude mcp add: unexpected argument %q before --", a)
		}
	}
	return e, errorf("claude mcp add: no -- before the command in %q", args)
}

func errorf(format string, args ...any) error {
	return &snippetError{msg: fmt.Sprintf(format, args...)}
}

type snippetError struct{ msg string }

func (e *snippetError) Error() string { return e.msg }

var (
	// claudeCodeVarRE is Claude Code's ${VAR} and ${VAR:-default}.
	claudeCodeVarRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)
	// cursorVarRE is Cursor's ${env:NAME}.
	cursorVarRE = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}()`)
)

// expandVars replaces re's matches in s by the values env gives their
// first group, else their second group (the default).
func expandVars(s string, re *regexp.Regexp, env []string) string {
	return re.ReplaceAllStringFunc(s, func(m string) string {
		g := re.FindStringSubmatch(m)
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == g[1] {
				return v
			}
		}
		return g[2]
	})
}

// freeLoopbackAddr returns a loopback address with a port free right now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// nodeSDKVersion is the @anthropic-ai/sdk the TypeScript snippet is run
// with.
const nodeSDKVersion = "1.15.0"

// nodeModules returns a directory whose node_modules holds the official
// TypeScript SDK (see npmPackage).
func nodeModules(t testing.TB) string {
	t.Helper()
	return npmPackage(t, "@anthropic-ai/sdk", nodeSDKVersion, "node-sdk-"+nodeSDKVersion, "Node.js runs the TypeScript snippet")
}

var (
	npmMu   sync.Mutex
	npmDirs = map[string]string{} // package@version → its directory
)

// npmPackage returns a directory whose node_modules holds the npm package
// pkg at version, installed from npm once into the user's cache directory
// under trove-test/<cacheName> (TROVE_TEST_NODE_DIR overrides the directory
// of the TypeScript SDK, nodeSDKVersion). Without node or npm the test
// skips, saying why (forWhat: what node is needed for), unless
// TROVE_REQUIRE_NODE is set (.ci/run sets it).
func npmPackage(t testing.TB, pkg, version, cacheName, forWhat string) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("TROVE_REQUIRE_NODE") != "" {
				t.Fatalf("%s is not installed and TROVE_REQUIRE_NODE is set", tool)
			}
			skipnote.Skip(t, tool+" is not installed ("+forWhat+"): install Node.js")
		}
	}
	npmMu.Lock()
	defer npmMu.Unlock()
	key := pkg + "@" + version
	if dir, ok := npmDirs[key]; ok {
		return dir
	}
	dir := ""
	if pkg == "@anthropic-ai/sdk" && version == nodeSDKVersion {
		dir = os.Getenv("TROVE_TEST_NODE_DIR")
	}
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(cache, "trove-test", cacheName)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", key).CombinedOutput()
		if err != nil {
			t.Fatalf("npm install %s: %v\n%s", key, err, out)
		}
	}
	npmDirs[key] = dir
	return dir
}
