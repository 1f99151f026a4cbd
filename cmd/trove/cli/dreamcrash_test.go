package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trovehq/trove/internal/skipnote"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/dreamrun"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/claudetest"
	"github.com/trovehq/trove/internal/pgtest"
	"github.com/trovehq/trove/storage/postgres"
)

// TestLongDreamSurvivesKill9: kill -9 of a real trove serve while a dream
// runs; after a restart the dream ends failed (runner_lost) with a clear
// error, never running forever, and the output keeps the write the model
// made before the kill.
func TestLongDreamSurvivesKill9(t *testing.T) {
	skipnote.Long(t)
	t.Parallel()
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
	if got.Status != "failed" || got.Error.Type != trove.DreamErrRunnerLost || got.Error.Message != dreamrun.MsgRunnerLost || len(got.Outputs) != 1 {
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

// TestLongDreamTwoNodesKill9Postgres: two real trove serve processes on one
// PostgreSQL schema, both running dreams. A dream is run by exactly one of
// them; kill -9 of that one mid-dream leaves the dream to the other, which
// fails it (runner_lost) once the lease has expired, and goes on running
// new dreams.
func TestLongDreamTwoNodesKill9Postgres(t *testing.T) {
	skipnote.Long(t)
	t.Parallel()
	url := pgtest.URL(t)
	bin := buildTrove(t)
	ctx := context.Background()
	schema := fmt.Sprintf("trove_clidream_%d", rand.Uint64())
	db, err := postgres.Open(ctx, url, postgres.Options{AutoMigrate: true, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		pgtest.DropSchema(t, schema)
	})
	svc := core.New(db, core.Options{})
	k, key, err := svc.CreateKey(ctx, "wrkspc_dreamnodes", "test")
	if err != nil {
		t.Fatal(err)
	}
	kctx := trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: k.WorkspaceID, Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}})
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	dbURL := url + sep + "search_path=" + schema

	reached, hold := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(hold) })
	claude := claudetest.New(t,
		claudetest.Turn{ToolUses: []claudetest.ToolUse{claudetest.Memory(map[string]any{"command": "create", "path": "/memories/first.md", "file_text": "before the kill\n"})}},
		claudetest.Turn{Hold: hold, Reached: reached},
	)
	claude.Loop(claudetest.Turn{Text: "done", Usage: claudetest.Usage{Input: 3, Output: 1}})
	flags := []string{"--database", dbURL, "--anthropic-api-key", "sk-ant-test", "--anthropic-base-url", claude.URL,
		"--dream-lease", "1s", "--dream-heartbeat", "200ms"}
	nodes := map[int]*exec.Cmd{}
	urls := map[int]string{}
	for range 2 {
		cmd, u := startServeProcess(t, bin, t.TempDir(), flags...)
		nodes[cmd.Process.Pid], urls[cmd.Process.Pid] = cmd, u
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	var anyURL string
	for _, u := range urls {
		anyURL = u
		break
	}
	c := httpapi.NewClient(anyURL, key)
	st, err := c.CreateStore(ctx, trove.CreateStoreParams{Name: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	se, _, err := c.CreateSession(ctx, trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}
	params := trove.CreateDreamParams{StoreID: st.ID, SessionIDs: []string{se.ID}, Model: "claude-sonnet-4-6"}
	d, err := c.CreateDream(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("no node ran the dream to its second turn")
	}
	held, err := svc.GetDream(kctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The lease owner is "<host>-<pid>-<random>": the node to kill.
	parts := strings.Split(held.LeaseOwner, "-")
	pid, _ := strconv.Atoi(parts[len(parts)-2])
	victim := nodes[pid]
	if victim == nil || held.Status != trove.DreamRunning {
		t.Fatalf("dream held by %q (status %s), not one of the nodes %v", held.LeaseOwner, held.Status, urls)
	}
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.Wait()
	delete(urls, pid)
	var survivor string
	for _, u := range urls {
		survivor = u
	}
	sc := httpapi.NewClient(survivor, key)
	wait := func(id string) *trove.Dream {
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err := sc.GetDream(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Terminal() {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("dream %s still %s 30s after the kill", id, got.Status)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	got := wait(d.ID)
	if got.Status != trove.DreamFailed || got.Error == nil || got.Error.Type != trove.DreamErrRunnerLost {
		t.Fatalf("dream after its node was killed = %+v", got)
	}
	if n := len(claude.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2 (one node ran the dream, nobody reran it)", n)
	}
	// The survivor runs the next dream to the end.
	d2, err := sc.CreateDream(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if got := wait(d2.ID); got.Status != trove.DreamCompleted || got.Usage.InputTokens != 3 {
		t.Fatalf("the next dream on the surviving node = %+v", got)
	}
}

// TestServeWithoutAnthropicKey: a server started without an Anthropic key
// says so once in its log, and a dream fails at once with
// model_not_configured and a message saying what to do; trove dreams create
// warns at once (the server's /healthz says it has no model), and with
// --wait exits 1 with the failure.
func TestServeWithoutAnthropicKey(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	data := t.TempDir()
	s := startServe(t, "--data", data, "--dream-heartbeat", "100ms", "--dream-lease", "1s")
	b, err := os.ReadFile(filepath.Join(data, "api_key"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := httpapi.NewClient(s.url, strings.TrimSpace(string(b)))
	st, err := c.CreateStore(ctx, trove.CreateStoreParams{Name: "notes"})
	if err != nil {
		t.Fatal(err)
	}
	se, _, err := c.CreateSession(ctx, trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.CreateDream(ctx, trove.CreateDreamParams{StoreID: st.ID, SessionIDs: []string{se.ID}, Model: "claude-sonnet-4-6"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := c.GetDream(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Terminal() {
			if got.Status != trove.DreamFailed || got.Error == nil || got.Error.Type != trove.DreamErrModelNotConfigured || got.Error.Message != dreamrun.MsgNoAPIKey {
				t.Fatalf("dream without a key = %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dream still %s", got.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := strings.Count(s.stderr.String(), "dreams: no Anthropic API key"); n != 1 {
		t.Errorf("the log says %d times that there is no key, want once:\n%s", n, s.stderr.String())
	}

	code, out, errOut := runTrove(t, "dreams", "create", "--url", s.url, "--api-key", strings.TrimSpace(string(b)),
		"--store", "notes", "--session", se.ID, "--wait", "20s")
	wantWarn := "trove: warning: the server " + s.url + " has no Anthropic API key, so dream drm_"
	if code != exitFailed || !strings.Contains(errOut, wantWarn) || !strings.Contains(errOut, "failed: model_not_configured") ||
		!strings.Contains(out, "status:") || !strings.Contains(out, "failed") {
		t.Errorf("dreams create --wait on a server without a key = %d\n%s%s\nwant exit 1, the warning %q and the failure", code, out, errOut, wantWarn)
	}
}

// TestDreamsCreateWarnsOnlyWithoutModel: a server with a model key (or
// with no runner of its own) draws no warning from dreams create.
func TestDreamsCreateWarnsOnlyWithoutModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"with a key", []string{"--anthropic-api-key", "sk-ant-test", "--anthropic-base-url", "http://127.0.0.1:1"}},
		{"no runner here", []string{"--dream-workers", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := t.TempDir()
			s := startServe(t, append([]string{"--data", data}, tc.args...)...)
			b, err := os.ReadFile(filepath.Join(data, "api_key"))
			if err != nil {
				t.Fatal(err)
			}
			key := strings.TrimSpace(string(b))
			c := httpapi.NewClient(s.url, key)
			ctx := context.Background()
			if _, err := c.CreateStore(ctx, trove.CreateStoreParams{Name: "notes"}); err != nil {
				t.Fatal(err)
			}
			se, _, err := c.CreateSession(ctx, trove.CreateSessionParams{})
			if err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runTrove(t, "dreams", "create", "--url", s.url, "--api-key", key, "--store", "notes", "--session", se.ID)
			if code != 0 || strings.Contains(errOut, "warning") {
				t.Errorf("dreams create = %d\n%s%s\nwant success without a warning", code, out, errOut)
			}
		})
	}
}
