package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/lib/environments"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/tools/agenttoolset"

	"github.com/trovehq/trove/internal/claudetest"
)

// managed is a real trove serve with a scripted model, an agent with the
// toolset and a custom tool, a self-hosted environment and its key, and a
// store with a seeded memory: what the Managed Agents e2e tests share.
type managed struct {
	bin, data string
	flags     []string
	serve     *exec.Cmd
	url, key  string
	sdk       anthropic.Client
	claude    *claudetest.Server
	agentID   string
	envID     string
	envKey    string
	storeID   string
	slug      string
	// mountRoot is where the worker mounts stores: /mnt/memory when this
	// process can create directories there, else a temp dir the worker
	// maps /mnt/memory/ to (as trove worker --mount-root does).
	mountRoot string
	// wrapTool, when set, wraps each toolset tool of the worker (after the
	// mount mapping); workerMiddleware, when set, is a client middleware of
	// the worker. The fault tests count and pause tool runs with them.
	wrapTool         func(anthropic.BetaTool) anthropic.BetaTool
	workerMiddleware option.Middleware
}

const seedContent = "The sky is green on Tuesdays.\n"

func newManaged(t *testing.T, turns func(m *managed) []claudetest.Turn, extra ...string) *managed {
	t.Helper()
	m := prepareManaged(t)
	m.claude = claudetest.New(t, turns(m)...)
	m.flags = append([]string{"--anthropic-api-key", "sk-ant-test", "--anthropic-base-url", m.claude.URL,
		"--session-lease", "2s", "--session-heartbeat", "200ms"}, extra...)
	m.start(t)
	b, err := os.ReadFile(filepath.Join(m.data, "api_key"))
	if err != nil {
		t.Fatal(err)
	}
	m.key = strings.TrimSpace(string(b))
	m.provision(t)
	return m
}

// prepareManaged returns a managed with its trove command, data directory,
// store slug and mount root, before any server starts.
func prepareManaged(t *testing.T) *managed {
	t.Helper()
	m := &managed{bin: sharedTrove(t), data: t.TempDir()}
	m.slug = fmt.Sprintf("notes-%d", rand.Uint32())
	m.mountRoot = defaultMountRoot
	if err := os.MkdirAll(defaultMountRoot, 0o755); err != nil || !writable(defaultMountRoot) {
		m.mountRoot = t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Join(defaultMountRoot, m.slug)) })
	return m
}

// provision creates, through the server at m.url with m.key, the agent,
// the self-hosted environment and its key, and the store with its seeded
// memory.
func (m *managed) provision(t *testing.T) {
	t.Helper()
	m.sdk = anthropic.NewClient(option.WithBaseURL(m.url), option.WithAPIKey(m.key), option.WithMaxRetries(0))
	ctx := context.Background()
	ag, err := m.sdk.Beta.Agents.New(ctx, anthropic.BetaAgentNewParams{
		Name:   "helper",
		Model:  anthropic.BetaManagedAgentsModelConfigParams{ID: "claude-sonnet-4-6"},
		System: anthropic.String("You keep notes."),
		Tools: []anthropic.BetaAgentNewParamsToolUnion{
			{OfAgentToolset20260401: &anthropic.BetaManagedAgentsAgentToolset20260401Params{}},
			{OfCustom: &anthropic.BetaManagedAgentsCustomToolParams{Name: "lookup", Description: "Look a word up.",
				InputSchema: anthropic.BetaManagedAgentsCustomToolInputSchemaParam{Properties: map[string]any{"word": map[string]any{"type": "string"}}}}},
		},
	})
	if err != nil {
		t.Fatalf("create agent: %v", err)
	}
	m.agentID = ag.ID
	en, err := m.sdk.Beta.Environments.New(ctx, anthropic.BetaEnvironmentNewParams{Name: "laptop",
		Config: anthropic.BetaEnvironmentNewParamsConfigUnion{OfSelfHosted: &anthropic.BetaSelfHostedConfigParams{}}})
	if err != nil {
		t.Fatalf("create environment: %v", err)
	}
	m.envID = en.ID
	var k struct{ Secret string }
	m.post(t, "/trove/v1/environments/"+en.ID+"/keys", `{"name":"e2e"}`, &k)
	if k.Secret == "" {
		t.Fatal("environment key: no secret")
	}
	m.envKey = k.Secret
	st, err := m.sdk.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: m.slug, Description: anthropic.String("what the agent learned")})
	if err != nil {
		t.Fatalf("create store: %v", err)
	}
	m.storeID = st.ID
	if _, err := m.sdk.Beta.MemoryStores.Memories.New(ctx, st.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/seed.md", Content: anthropic.String(seedContent)}); err != nil {
		t.Fatalf("seed memory: %v", err)
	}
}

// sharedTrove is the trove command the managed-session tests run as
// processes: the test binary itself, as every process test here (buildTrove).
func sharedTrove(t *testing.T) string {
	t.Helper()
	return buildTrove(t)
}

func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".probe")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

func (m *managed) start(t *testing.T) {
	t.Helper()
	cmd, url := startServeProcess(t, m.bin, m.data, m.flags...)
	m.serve, m.url = cmd, url
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	m.sdk = anthropic.NewClient(option.WithBaseURL(m.url), option.WithAPIKey(m.key), option.WithMaxRetries(0))
}

func (m *managed) post(t *testing.T, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, m.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+m.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-beta", "managed-agents-2026-04-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %d %s", path, res.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
}

// mount is the path the model uses for the store (what the mount note
// says): /mnt/memory/<slug>.
func (m *managed) mount() string { return defaultMountRoot + "/" + m.slug }

// session creates a session of the agent in the environment with the
// store attached with access and instructions.
func (m *managed) session(t *testing.T, access anthropic.BetaManagedAgentsMemoryStoreResourceParamAccess) *anthropic.BetaManagedAgentsSession {
	t.Helper()
	se, err := m.sdk.Beta.Sessions.New(context.Background(), anthropic.BetaSessionNewParams{
		Agent:         anthropic.BetaSessionNewParamsAgentUnion{OfString: anthropic.String(m.agentID)},
		EnvironmentID: m.envID,
		Resources: []anthropic.BetaSessionNewParamsResourceUnion{{OfMemoryStore: &anthropic.BetaManagedAgentsMemoryStoreResourceParam{
			MemoryStoreID: m.storeID, Access: access, Instructions: anthropic.String("Record what you learn in learned.md."),
		}}},
	})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	return se
}

// worker runs the Go SDK's EnvironmentWorker against the server until the
// returned stop is called. Where /mnt/memory is not writable it gets the
// same mount mapping as trove worker --mount-root.
func (m *managed) worker(t *testing.T) (stop func()) {
	t.Helper()
	opts := []option.RequestOption{option.WithBaseURL(m.url), option.WithAPIKey("unused")}
	var wraps []func(anthropic.BetaTool) anthropic.BetaTool
	if m.mountRoot != defaultMountRoot {
		mm := mountMap{from: defaultMountRoot + "/", to: m.mountRoot + "/"}
		opts = append(opts, option.WithMiddleware(mm.middleware))
		wraps = append(wraps, func(tl anthropic.BetaTool) anthropic.BetaTool { return &mappedTool{BetaTool: tl, m: mm} })
	}
	if m.wrapTool != nil {
		wraps = append(wraps, m.wrapTool)
	}
	if m.workerMiddleware != nil {
		opts = append(opts, option.WithMiddleware(m.workerMiddleware))
	}
	var toolsFunc func(*agenttoolset.AgentToolContext) []anthropic.BetaTool
	if len(wraps) > 0 {
		toolsFunc = func(env *agenttoolset.AgentToolContext) []anthropic.BetaTool {
			tools := agenttoolset.BetaAgentToolset20260401(env)
			for i := range tools {
				for _, w := range wraps {
					tools[i] = w(tools[i])
				}
			}
			return tools
		}
	}
	idle := 300 * time.Millisecond
	w := environments.NewEnvironmentWorker(anthropic.NewClient(opts...), environments.EnvironmentWorkerOptions{
		EnvironmentID: m.envID, EnvironmentKey: m.envKey, Workdir: t.TempDir(), MaxIdle: &idle, ToolsFunc: toolsFunc,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// say sends a user message with the SDK.
func (m *managed) say(t *testing.T, sessionID, text string) {
	t.Helper()
	_, err := m.sdk.Beta.Sessions.Events.Send(context.Background(), sessionID, anthropic.BetaSessionEventSendParams{
		Events: []anthropic.BetaManagedAgentsEventParamsUnion{{OfUserMessage: &anthropic.BetaManagedAgentsUserMessageEventParams{
			Content: []anthropic.BetaManagedAgentsUserMessageEventParamsContentUnion{{OfText: &anthropic.BetaManagedAgentsTextBlockParam{Text: text}}},
		}}},
	})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
}

// streamUntilIdle reads the SDK's event stream until a session.status_idle
// that ends the turn, and returns the events seen.
// streamUntilIdle opens the SDK's event stream (StreamEvents connects
// before it returns) and returns a channel that gets the events read until
// a session.status_idle that ends the turn.
func (m *managed) streamUntilIdle(t *testing.T, ctx context.Context, sessionID string) <-chan []anthropic.BetaManagedAgentsStreamSessionEventsUnion {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	stream := m.sdk.Beta.Sessions.Events.StreamEvents(ctx, sessionID, anthropic.BetaSessionEventStreamParams{})
	out := make(chan []anthropic.BetaManagedAgentsStreamSessionEventsUnion, 1)
	go func() {
		defer cancel()
		defer stream.Close()
		out <- readUntilIdle(t, stream)
	}()
	return out
}

func readUntilIdle(t *testing.T, stream interface {
	Next() bool
	Current() anthropic.BetaManagedAgentsStreamSessionEventsUnion
	Err() error
}) []anthropic.BetaManagedAgentsStreamSessionEventsUnion {
	var got []anthropic.BetaManagedAgentsStreamSessionEventsUnion
	for stream.Next() {
		ev := stream.Current()
		got = append(got, ev)
		if ev.Type == "session.status_idle" && ev.StopReason.Type != "requires_action" {
			return got
		}
	}
	t.Errorf("stream ended before idle: %v; events %s", stream.Err(), streamTypes(got))
	return got
}

func streamTypes(evs []anthropic.BetaManagedAgentsStreamSessionEventsUnion) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Type)
	}
	return strings.Join(s, " ")
}

// allEvents lists a session's whole transcript with the SDK.
func (m *managed) allEvents(t *testing.T, sessionID string) []anthropic.BetaManagedAgentsSessionEventUnion {
	t.Helper()
	pager := m.sdk.Beta.Sessions.Events.ListAutoPaging(context.Background(), sessionID, anthropic.BetaSessionEventListParams{Limit: anthropic.Int(100)})
	var out []anthropic.BetaManagedAgentsSessionEventUnion
	for pager.Next() {
		out = append(out, pager.Current())
	}
	if err := pager.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// memory returns the store's memory at path, or nil.
func (m *managed) memory(t *testing.T, path string) *anthropic.BetaManagedAgentsMemory {
	t.Helper()
	pager := m.sdk.Beta.MemoryStores.Memories.ListAutoPaging(context.Background(), m.storeID, anthropic.BetaMemoryStoreMemoryListParams{View: anthropic.BetaManagedAgentsMemoryViewFull})
	for pager.Next() {
		if mem := pager.Current(); mem.Path == path {
			full, err := m.sdk.Beta.MemoryStores.Memories.Get(context.Background(), mem.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: m.storeID, View: anthropic.BetaManagedAgentsMemoryViewFull})
			if err != nil {
				t.Fatal(err)
			}
			return full
		}
	}
	if err := pager.Err(); err != nil {
		t.Fatal(err)
	}
	return nil
}

// waitMemory waits until the store holds path (the worker syncs its
// writes back when the session goes idle).
func (m *managed) waitMemory(t *testing.T, path string) *anthropic.BetaManagedAgentsMemory {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if mem := m.memory(t, path); mem != nil {
			return mem
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store never got %s", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// learnTurns: read the seeded memory, write learned.md, then answer.
func learnTurns(m *managed) []claudetest.Turn {
	return []claudetest.Turn{
		{ToolUses: []claudetest.ToolUse{{Name: "read", Input: map[string]any{"file_path": m.mount() + "/seed.md"}}}, Usage: claudetest.Usage{Input: 100, Output: 10}},
		{ToolUses: []claudetest.ToolUse{{Name: "write", Input: map[string]any{"file_path": m.mount() + "/learned.md", "content": "Tuesdays: green sky.\n"}}}, Usage: claudetest.Usage{Input: 120, Output: 20}},
		{Text: "Noted: the sky is green on Tuesdays.", Usage: claudetest.Usage{Input: 140, Output: 12}},
	}
}

// TestManagedSessionEndToEnd is issue 21's Show with the official clients:
// the SDK creates an agent, a self-hosted environment, a store and a
// session attaching it read_write with instructions; the SDK's own
// EnvironmentWorker serves the environment; a user message makes the model
// read the seeded memory and write learned.md with the toolset's tools; the
// SDK's stream shows the message, the tool uses and results, the reply and
// idle; the store then holds /learned.md as a version by the session; the
// first request carried the mount note with the instructions.
func TestManagedSessionEndToEnd(t *testing.T) {
	t.Parallel()
	m := newManaged(t, learnTurns)
	se := m.session(t, anthropic.BetaManagedAgentsMemoryStoreResourceParamAccessReadWrite)
	if len(se.Resources) != 1 || se.Resources[0].MountPath != m.mount() {
		t.Fatalf("session resources %s", se.RawJSON())
	}
	m.worker(t)
	ctx := context.Background()
	streamed := m.streamUntilIdle(t, ctx, se.ID)
	m.say(t, se.ID, "What colour is the sky on Tuesdays? Keep a note.")
	got := <-streamed
	types := streamTypes(got)
	for _, want := range []string{"user.message", "session.status_running", "agent.tool_use", "user.tool_result", "agent.message", "session.status_idle"} {
		if !strings.Contains(types, want) {
			t.Errorf("stream %s: no %s", types, want)
		}
	}
	var uses, results int
	for _, ev := range got {
		switch ev.Type {
		case "agent.tool_use":
			uses++
		case "user.tool_result":
			results++
			if ev.IsError {
				t.Errorf("tool result in error: %s", ev.RawJSON())
			}
		case "agent.message":
			if !strings.Contains(ev.RawJSON(), "green on Tuesdays") {
				t.Errorf("reply %s", ev.RawJSON())
			}
		}
	}
	if uses != 2 || results != 2 {
		t.Errorf("stream %s: %d tool uses, %d results; want 2 and 2", types, uses, results)
	}
	reqs := m.claude.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	for _, want := range []string{"You keep notes.", m.slug + " at " + m.mount() + " (read_write)", "Instructions: Record what you learn in learned.md."} {
		if !strings.Contains(reqs[0].System, want) {
			t.Errorf("first request's system prompt lacks %q:\n%s", want, reqs[0].System)
		}
	}
	if !bytes.Contains(reqs[1].Messages[len(reqs[1].Messages)-1], []byte("green on Tuesdays")) {
		t.Errorf("the read's result did not reach the model: %s", reqs[1].Messages[len(reqs[1].Messages)-1])
	}
	mem := m.waitMemory(t, "/learned.md")
	if mem.Content != "Tuesdays: green sky.\n" {
		t.Errorf("learned.md = %q", mem.Content)
	}
	vers := m.sdk.Beta.MemoryStores.MemoryVersions.ListAutoPaging(ctx, m.storeID, anthropic.BetaMemoryStoreMemoryVersionListParams{MemoryID: anthropic.String(mem.ID)})
	n := 0
	for vers.Next() {
		v := vers.Current()
		n++
		if v.CreatedBy.Type != "session_actor" || v.CreatedBy.SessionID != se.ID {
			t.Errorf("version by %s, want the session %s", v.CreatedBy.RawJSON(), se.ID)
		}
	}
	if err := vers.Err(); err != nil || n != 1 {
		t.Errorf("%d versions of learned.md (%v), want 1", n, err)
	}
	// The transcript: each event once, in order.
	seen := map[string]bool{}
	for _, ev := range m.allEvents(t, se.ID) {
		if seen[ev.ID] {
			t.Errorf("event %s listed twice", ev.ID)
		}
		seen[ev.ID] = true
	}
}

// TestManagedSessionReadOnly: the same with the store read_only: the
// worker refuses the write, the model sees the refusal, the store is
// unchanged.
func TestManagedSessionReadOnly(t *testing.T) {
	t.Parallel()
	m := newManaged(t, learnTurns)
	se := m.session(t, anthropic.BetaManagedAgentsMemoryStoreResourceParamAccessReadOnly)
	m.worker(t)
	ctx := context.Background()
	streamed := m.streamUntilIdle(t, ctx, se.ID)
	m.say(t, se.ID, "Keep a note.")
	got := <-streamed
	var refused bool
	for _, ev := range got {
		if ev.Type == "user.tool_result" && ev.IsError {
			refused = true
		}
	}
	if !refused {
		t.Errorf("stream %s: the write was not refused", streamTypes(got))
	}
	reqs := m.claude.Requests()
	if len(reqs) < 1 || !strings.Contains(reqs[0].System, "(read_only)") {
		t.Errorf("first request's system prompt: %q", reqs[0].System)
	}
	time.Sleep(time.Second) // the worker's final sync after its idle
	if mem := m.memory(t, "/learned.md"); mem != nil {
		t.Errorf("read_only store got /learned.md")
	}
	if mem := m.memory(t, "/seed.md"); mem == nil || mem.Content != seedContent {
		t.Errorf("seed changed: %+v", mem)
	}
}

// TestManagedSessionCustomTool: a custom tool use is answered by the
// SDK's SessionToolRunner with the client's own tool; its result makes the
// model's next request.
func TestManagedSessionCustomTool(t *testing.T) {
	t.Parallel()
	m := newManaged(t, func(m *managed) []claudetest.Turn {
		return []claudetest.Turn{
			{ToolUses: []claudetest.ToolUse{{Name: "lookup", Input: map[string]any{"word": "sky"}}}},
			{Text: "The dictionary says: the blue above."},
		}
	})
	se := m.session(t, anthropic.BetaManagedAgentsMemoryStoreResourceParamAccessReadWrite)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	idle := 500 * time.Millisecond
	runner := m.sdk.Beta.Sessions.Events.NewToolRunner(ctx, se.ID, anthropic.SessionToolRunnerOptions{
		Tools: []anthropic.BetaTool{lookupTool{}}, MaxIdle: &idle,
	})
	defer runner.Close()
	m.say(t, se.ID, "Look up sky.")
	var calls []anthropic.DispatchedToolCall
	for runner.Next() {
		calls = append(calls, runner.Current())
	}
	if err := runner.Err(); err != nil && err != anthropic.ErrIdleTimeout {
		t.Fatalf("runner: %v", err)
	}
	if len(calls) != 1 || !calls[0].Custom || calls[0].Name != "lookup" || !calls[0].Posted {
		t.Fatalf("dispatched %+v", calls)
	}
	reqs := m.claude.Requests()
	if len(reqs) != 2 || !bytes.Contains(reqs[1].Messages[len(reqs[1].Messages)-1], []byte("the blue above")) {
		t.Fatalf("the custom tool's result did not reach the model: %d requests", len(reqs))
	}
	evs := m.allEvents(t, se.ID)
	if last := evs[len(evs)-1]; last.Type != "session.status_idle" || last.StopReason.Type != "end_turn" {
		t.Errorf("last event %s", last.RawJSON())
	}
}

type lookupTool struct{}

func (lookupTool) Name() string        { return "lookup" }
func (lookupTool) Description() string { return "Look a word up." }
func (lookupTool) InputSchema() anthropic.BetaToolInputSchemaParam {
	return anthropic.BetaToolInputSchemaParam{Properties: map[string]any{"word": map[string]any{"type": "string"}}}
}
func (lookupTool) Execute(ctx context.Context, input json.RawMessage) ([]anthropic.BetaToolResultBlockParamContentUnion, error) {
	return []anthropic.BetaToolResultBlockParamContentUnion{{OfText: &anthropic.BetaTextBlockParam{Text: "sky: the blue above"}}}, nil
}
