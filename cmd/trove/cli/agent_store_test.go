package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
)

// TestAgentStore opens the memory tool over a store by name, as trove
// agent --store does, and checks that the engine the runner gets writes
// versions into that store.
func TestAgentStore(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	ctx := trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: defaultWorkspace})
	svc, closeDB, err := openLocal(ctx, data, "", true)
	if err != nil {
		t.Fatal(err)
	}
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "Agent Notes"})
	closeDB()
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		ref, wantErr string
	}{
		{"Agent Notes", ""},
		{st.ID, ""},
		{"Other", `no store named "Other"; the stores are "Agent Notes"`},
	} {
		var a agentStore
		cmd := &cobra.Command{Use: "agent"}
		a.register(cmd)
		if err := cmd.Flags().Parse([]string{"--data", data, "--store", tt.ref}); err != nil {
			t.Fatal(err)
		}
		if !a.enabled() {
			t.Fatal("--store not seen")
		}
		tool, closeStore, err := a.open(context.Background(), cmd, memtool.Options{})
		if tt.wantErr != "" {
			if err == nil || errorText(err) != tt.wantErr {
				t.Errorf("open(%q) = %v, want %q", tt.ref, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("open(%q): %v", tt.ref, err)
		}
		in, _ := json.Marshal(map[string]any{"command": "create", "path": "/memories/" + tt.ref[:5] + ".md", "file_text": "hi"})
		// The engine must carry the principal itself.
		if r := tool.Execute(context.Background(), in); r.IsError {
			t.Errorf("create via %q: %s", tt.ref, r.String())
		}
		closeStore()
	}
	svc, closeDB, err = openLocal(ctx, data, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	page, err := svc.ListMemories(ctx, st.ID, trove.ListMemoriesParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 {
		t.Errorf("store holds %d memories, want 2", len(page.Data))
	}
}

// TestAgentStoreCommand runs trove agent --store against a scripted
// Messages API: Claude's memory calls land in the store as versions.
func TestAgentStoreCommand(t *testing.T) {
	replies := []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"memory","input":{"command":"create","path":"/memories/prefs.md","file_text":"likes tea\n"}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`,
		`{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Noted."}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`,
	}
	var mu sync.Mutex
	n := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		if i > len(replies) {
			http.Error(w, "script exhausted", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, replies[i-1])
	}))
	defer api.Close()
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_BASE_URL", api.URL)
	t.Setenv("TROVE_URL", "")

	data := t.TempDir()
	ctx := trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: defaultWorkspace})
	svc, closeDB, err := openLocal(ctx, data, "", true)
	if err != nil {
		t.Fatal(err)
	}
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "Agent Notes"})
	closeDB()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main([]string{"agent", "--store", "Agent Notes", "--data", data, "I like tea"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	if got, want := stderr.String(), "[memory] create /memories/prefs.md -> ok\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	svc, closeDB, err = openLocal(ctx, data, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	page, err := svc.ListMemories(ctx, st.ID, trove.ListMemoriesParams{View: trove.ViewFull})
	if err != nil || len(page.Data) != 1 || page.Data[0].Memory.Path != "/prefs.md" || *page.Data[0].Memory.Content != "likes tea\n" {
		t.Errorf("store after the agent: %+v, %v", page, err)
	}

	for _, args := range [][]string{
		{"agent", "--store", "Agent Notes", "--root", t.TempDir(), "--data", data, "hi"},
		{"agent", "--data", data, "hi"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(args, strings.NewReader(""), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "exactly one of --root DIR and --store NAME_OR_ID") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}
