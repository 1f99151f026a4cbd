package cli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
)

// TestAgentStore opens the memory tool over a store by name, as trove
// agent --store does, and checks that the engine the runner gets writes
// versions into that store.
func TestAgentStore(t *testing.T) {
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
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("open(%q) = %v, want %q", tt.ref, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("open(%q): %v", tt.ref, err)
		}
		in, _ := json.Marshal(map[string]any{"command": "create", "path": "/memories/" + tt.ref[:5] + ".md", "file_text": "hi"})
		// The runner gets the bare engine: it must still carry the principal.
		if r := tool.Engine().Execute(context.Background(), in); r.IsError {
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
