package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/dream"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/claudetest"
)

// TestDreamSurvivesKill9: kill -9 of a real trove serve while a dream
// runs; after a restart the dream ends failed (runner_lost) with a clear
// error, never running forever, and the output keeps the write the model
// made before the kill.
func TestDreamSurvivesKill9(t *testing.T) {
	bin := buildTrove(t)
	data := t.TempDir()
	reached, hold := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(hold) })
	claude := claudetest.New(t,
		claudetest.Turn{ToolUses: []claudetest.ToolUse{claudetest.Memory(map[string]any{"command": "create", "path": "/memories/before-kill.md", "file_text": "written before the kill\n"})}},
		claudetest.Turn{Hold: hold, Reached: reached},
	)
	flags := []string{"--anthropic-api-key", "sk-ant-test", "--anthropic-base-url", claude.URL, "--dream-lease", "1s", "--dream-heartbeat", "200ms"}
	cmd, url := startServeProcess(t, bin, data, flags...)
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	b, err := os.ReadFile(filepath.Join(data, "api_key"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(b))
	ctx := context.Background()
	c := httpapi.NewClient(url, key)
	st, err := c.CreateStore(ctx, trove.CreateStoreParams{Name: "notes"})
	if err != nil {
		t.Fatal(err)
	}
	se, _, err := c.CreateSession(ctx, trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}
	sdk := anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey(key))
	d, err := sdk.Beta.Dreams.New(ctx, anthropic.BetaDreamNewParams{
		Inputs: []anthropic.BetaDreamInputUnionParam{
			{OfMemoryStore: &anthropic.BetaDreamMemoryStoreInputParam{MemoryStoreID: st.ID}},
			{OfSessions: &anthropic.BetaDreamSessionsInputParam{SessionIDs: []string{se.ID}}},
		},
		Model: anthropic.BetaDreamNewParamsModelUnion{OfString: anthropic.String("claude-sonnet-4-6")},
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the dream never reached its second model turn")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true

	cmd2, url2 := startServeProcess(t, bin, data, flags...)
	defer func() { cmd2.Process.Kill(); cmd2.Wait() }()
	sdk2 := anthropic.NewClient(option.WithBaseURL(url2), option.WithAPIKey(key))
	deadline := time.Now().Add(30 * time.Second)
	var got *anthropic.BetaDream
	for {
		got, err = sdk2.Beta.Dreams.Get(ctx, d.ID, anthropic.BetaDreamGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != "pending" && got.Status != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dream still %s 30s after the restart", got.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got.Status != "failed" || got.Error.Type != trove.DreamErrRunnerLost || got.Error.Message != dream.MsgRunnerLost || len(got.Outputs) != 1 {
		t.Fatalf("dream after kill -9 and restart = %s", got.RawJSON())
	}
	c2 := httpapi.NewClient(url2, key)
	pg, err := c2.ListMemories(ctx, got.Outputs[0].MemoryStoreID, trove.ListMemoriesParams{View: trove.ViewFull})
	if err != nil || len(pg.Data) != 1 || *pg.Data[0].Memory.Content != "written before the kill\n" {
		t.Fatalf("output store after the crash = %+v, %v", pg, err)
	}
	if len(claude.Requests()) != 2 {
		t.Errorf("the model got %d requests, want 2 (the lost dream is not rerun)", len(claude.Requests()))
	}
}
