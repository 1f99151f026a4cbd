package agentloop_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove/storage/sqlite/sqlitetest"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/agentloop"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/internal/claudetest"
	"github.com/trovehq/trove/storage/sqlite"
)

type env struct {
	svc     *core.Service
	ctx     context.Context // the API key's principal
	session *trove.Session
	claude  *claudetest.Server
}

// newEnv is a managed session (agent with the toolset and a custom tool
// "lookup", a self-hosted environment, a store attached read_write with
// instructions) over SQLite, with a runner whose model answers turns.
func newEnv(t *testing.T, turns ...claudetest.Turn) *env {
	t.Helper()
	return newEnvWith(t, nil, turns...)
}

// newEnvWith is newEnv with the runner's Config changed by config first.
func newEnvWith(t *testing.T, config func(*agentloop.Config), turns ...claudetest.Turn) *env {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := core.New(db, core.Options{})
	k, _, err := svc.CreateKey(context.Background(), "wrkspc_loop", "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: "wrkspc_loop", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}})
	e := &env{svc: svc, ctx: ctx}
	be := agentloop.NewCoreBackend(svc)
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "Notes", Description: "what we learned"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/seed.md", Content: "the sky is green"}); err != nil {
		t.Fatal(err)
	}
	on := true
	ag, err := svc.CreateAgent(ctx, trove.CreateAgentParams{
		Name: "helper", Model: trove.AgentModelParams{ID: "claude-test-1"}, System: "You help.",
		Tools: []trove.AgentToolParams{
			{Type: trove.ToolAgentToolset, DefaultEnabled: &on},
			{Type: trove.ToolCustom, Name: "lookup", Description: "look a thing up", InputSchema: []byte(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	en, err := svc.CreateEnvironment(ctx, trove.CreateEnvironmentParams{Name: "box"})
	if err != nil {
		t.Fatal(err)
	}
	se, _, err := svc.CreateSession(ctx, trove.CreateSessionParams{
		Agent: &trove.AgentRef{ID: ag.ID}, EnvironmentID: en.ID,
		Stores: []trove.AttachStoreParams{{StoreID: st.ID, Access: trove.AccessReadWrite, Instructions: "Write what you learn to learned.md."}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.session = se
	e.claude = claudetest.New(t, turns...)
	c := anthropic.NewClient(option.WithBaseURL(e.claude.URL), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))
	cfg := agentloop.Config{Backend: be, Claude: &c, Heartbeat: 50 * time.Millisecond, Lease: 2 * time.Second, Poll: 50 * time.Millisecond, Workers: 2}
	if config != nil {
		config(&cfg)
	}
	r := agentloop.New(cfg)
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

func (e *env) send(t *testing.T, typ, body string) {
	t.Helper()
	if _, err := e.svc.AppendEvents(e.ctx, e.session.ID, []trove.NewSessionEvent{{Type: typ, Body: body}}); err != nil {
		t.Fatalf("append %s: %v", typ, err)
	}
}

// waitFor waits until the transcript satisfies ok, and returns it.
func (e *env) waitFor(t *testing.T, what string, ok func([]trove.SessionEvent) bool) []trove.SessionEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	var after int64
	for {
		evs := e.events(t)
		if ok(evs) {
			return evs
		}
		if len(evs) > 0 {
			after = evs[len(evs)-1].Seq
		}
		if _, err := e.svc.WaitEvents(ctx, e.session.ID, after); err != nil {
			t.Fatalf("waiting for %s: %v; transcript: %s", what, err, types(evs))
		}
	}
}

func (e *env) events(t *testing.T) []trove.SessionEvent {
	t.Helper()
	var out []trove.SessionEvent
	cursor := ""
	for {
		pg, err := e.svc.ListEvents(e.ctx, e.session.ID, trove.ListEventsParams{Limit: 100, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pg.Data...)
		if cursor = pg.NextPage; cursor == "" {
			return out
		}
	}
}

func types(evs []trove.SessionEvent) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Type)
	}
	return strings.Join(s, " ")
}

func last(evs []trove.SessionEvent, typ string) *trove.SessionEvent {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == typ {
			return &evs[i]
		}
	}
	return nil
}

func idleWith(reason string) func([]trove.SessionEvent) bool {
	return func(evs []trove.SessionEvent) bool {
		if len(evs) == 0 || evs[len(evs)-1].Type != "session.status_idle" {
			return false
		}
		return strings.Contains(evs[len(evs)-1].Body, `"type":"`+reason+`"`)
	}
}

// TestTurnWithToolUses: a user message makes the session run; the model's
// tool uses become agent.tool_use (toolset, with work queued for the
// environment) and agent.custom_tool_use, the session idles with
// requires_action naming them; their results make the next request, whose
// answer ends the turn. The first request carries the memory note.
func TestTurnWithToolUses(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		claudetest.Turn{ToolUses: []claudetest.ToolUse{
			{Name: "read", Input: map[string]any{"file_path": "/mnt/memory/notes/seed.md"}},
			{Name: "lookup", Input: map[string]any{"q": "sky"}},
		}, Usage: claudetest.Usage{Input: 10, Output: 5}},
		claudetest.Turn{Text: "The sky is green.", Usage: claudetest.Usage{Input: 20, Output: 7}},
	)
	e.send(t, trove.EventUserMessage, `{"content":[{"type":"text","text":"What colour is the sky?"}]}`)
	evs := e.waitFor(t, "requires_action", idleWith("requires_action"))
	use, cuse := last(evs, trove.EventAgentToolUse), last(evs, trove.EventAgentCustomToolUse)
	if use == nil || cuse == nil || last(evs, "session.status_running") == nil {
		t.Fatalf("transcript %s: want status_running, agent.tool_use and agent.custom_tool_use", types(evs))
	}
	if !strings.Contains(use.Body, `"evaluated_permission":"allow"`) || !strings.Contains(use.Body, `"name":"read"`) {
		t.Errorf("agent.tool_use body %s", use.Body)
	}
	idle := evs[len(evs)-1]
	if !strings.Contains(idle.Body, use.ID) || !strings.Contains(idle.Body, cuse.ID) {
		t.Errorf("idle %s does not name both tool uses", idle.Body)
	}
	reqs := e.claude.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].System, "You help.") || !strings.Contains(reqs[0].System, "Notes at /mnt/memory/notes (read_write)") ||
		!strings.Contains(reqs[0].System, "Instructions: Write what you learn to learned.md.") {
		t.Fatalf("first request's system prompt: %q", reqs[0].System)
	}
	if got := strings.Join(reqs[0].Tools, ","); got != "bash,edit,read,write,glob,grep,lookup" {
		t.Errorf("tools %s", got)
	}
	// The environment has work queued for the session.
	w, err := e.svc.PollWork(e.ctx, e.session.Managed.EnvironmentID, trove.PollWorkParams{})
	if err != nil || w == nil || w.SessionID != e.session.ID {
		t.Fatalf("PollWork = %+v, %v; want the session's work", w, err)
	}

	e.send(t, "user.tool_result", `{"tool_use_id":"`+use.ID+`","content":[{"type":"text","text":"the sky is green"}]}`)
	e.send(t, trove.EventUserCustomToolResult, `{"custom_tool_use_id":"`+cuse.ID+`","content":[{"type":"text","text":"green"}]}`)
	evs = e.waitFor(t, "end_turn", idleWith("end_turn"))
	msg := last(evs, trove.EventAgentMessage)
	if msg == nil || !strings.Contains(msg.Body, "The sky is green.") {
		t.Fatalf("transcript %s: no final agent.message", types(evs))
	}
	reqs = e.claude.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	var lastMsg struct {
		Role    string
		Content []struct{ Type, Tool_use_id string }
	}
	_ = json.Unmarshal(reqs[1].Messages[len(reqs[1].Messages)-1], &lastMsg)
	if lastMsg.Role != "user" || len(lastMsg.Content) != 2 || lastMsg.Content[0].Tool_use_id != use.ID || lastMsg.Content[1].Tool_use_id != cuse.ID {
		t.Errorf("second request's last message %s", reqs[1].Messages[len(reqs[1].Messages)-1])
	}
	se, err := e.svc.GetSession(e.ctx, e.session.ID)
	if err != nil {
		t.Fatal(err)
	}
	if se.Status != trove.SessionIdle || se.Managed.Usage.InputTokens != 30 || se.Managed.Usage.OutputTokens != 12 {
		t.Errorf("session status %s usage %+v; want idle with 30 in, 12 out", se.Status, se.Managed.Usage)
	}
	// No event twice: each type's count.
	count := map[string]int{}
	for _, ev := range evs {
		count[ev.Type]++
	}
	if count["span.model_request_start"] != 2 || count["span.model_request_end"] != 2 || count["session.status_running"] != 2 || count[trove.EventAgentToolUse] != 1 {
		t.Errorf("event counts %v", count)
	}
}

// TestInterruptDuringRequest: an interrupt while the model is asked ends
// the turn: the answer is not stored, the span (if its start was stored
// before the interrupt) ends in error, and the session idles with
// end_turn either way (also when the interrupt came before the run's
// first append marked it running: 1 run in about 200 under -race).
func TestInterruptDuringRequest(t *testing.T) {
	t.Parallel()
	hold, reached := make(chan struct{}), make(chan struct{})
	e := newEnv(t, claudetest.Turn{Text: "too late", Hold: hold, Reached: reached})
	e.send(t, trove.EventUserMessage, `{"content":[{"type":"text","text":"hi"}]}`)
	<-reached
	e.send(t, "user.interrupt", `{}`)
	close(hold)
	evs := e.waitFor(t, "end_turn", idleWith("end_turn"))
	if last(evs, trove.EventAgentMessage) != nil {
		t.Errorf("transcript %s: the interrupted answer was stored", types(evs))
	}
	// The request's span start is stored while the request is in flight;
	// an interrupt stored first refuses it, and the request leaves no span.
	// A span started must end in error.
	if last(evs, "span.model_request_start") != nil {
		if end := last(evs, "span.model_request_end"); end == nil || !strings.Contains(end.Body, `"is_error":true`) {
			t.Errorf("transcript %s: no span end in error", types(evs))
		}
	}
}

// TestModelError: a failing Messages API ends the turn with session.error
// and retries_exhausted.
func TestModelError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, claudetest.Turn{Status: 400})
	e.send(t, trove.EventUserMessage, `{"content":[{"type":"text","text":"hi"}]}`)
	evs := e.waitFor(t, "retries_exhausted", idleWith("retries_exhausted"))
	if er := last(evs, "session.error"); er == nil || !strings.Contains(er.Body, "model_request_failed_error") {
		t.Errorf("transcript %s: no session.error", types(evs))
	}
}

// countingBackend counts the runs a runner claimed and tells of each
// release.
type countingBackend struct {
	agentloop.Backend
	claims   atomic.Int64
	released chan struct{} // one value per release, dropped when full
}

func (b *countingBackend) ReleaseSessionRun(ctx context.Context, sessionID, owner string, wakeSeq int64, done bool) error {
	err := b.Backend.ReleaseSessionRun(ctx, sessionID, owner, wakeSeq, done)
	select {
	case b.released <- struct{}{}:
	default:
	}
	return err
}

func (b *countingBackend) ClaimSessionRun(ctx context.Context, owner string, lease time.Duration) (*core.SessionRun, error) {
	run, err := b.Backend.ClaimSessionRun(ctx, owner, lease)
	if run != nil {
		b.claims.Add(1)
	}
	return run, err
}

// TestToolsetResultsKeepTheRun: while the environment's worker runs a
// toolset tool, the run keeps its lease (Config.ToolWait), so its result
// continues the turn with no second claim; with ToolWait < 0 the run is
// released and claimed again for the result. Either way the turn ends
// with the answer stored once and the run no longer pending (released
// with the wake of the result it answered, not claimed again).
func TestToolsetResultsKeepTheRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		toolWait time.Duration
		claims   int64
	}{
		{"kept while the worker runs the tool", time.Minute, 1},
		{"released without ToolWait", -1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var cb *countingBackend
			e := newEnvWith(t, func(c *agentloop.Config) {
				cb = &countingBackend{Backend: c.Backend, released: make(chan struct{}, 1)}
				c.Backend, c.ToolWait = cb, tc.toolWait
			},
				claudetest.Turn{ToolUses: []claudetest.ToolUse{{Name: "read", Input: map[string]any{"file_path": "/mnt/memory/notes/seed.md"}}}},
				claudetest.Turn{Text: "Green."},
			)
			e.send(t, trove.EventUserMessage, `{"content":[{"type":"text","text":"What colour is the sky?"}]}`)
			evs := e.waitFor(t, "agent.tool_use", func(evs []trove.SessionEvent) bool { return last(evs, trove.EventAgentToolUse) != nil })
			use := last(evs, trove.EventAgentToolUse)
			if tc.toolWait < 0 {
				// The result comes after the release (else the runner may
				// still read it in the same claim).
				select {
				case <-cb.released:
				case <-time.After(10 * time.Second):
					t.Fatal("the run was not released after the tool use")
				}
			}
			e.send(t, "user.tool_result", `{"tool_use_id":"`+use.ID+`","content":[{"type":"text","text":"the sky is green"}]}`)
			evs = e.waitFor(t, "end_turn", idleWith("end_turn"))
			count := map[string]int{}
			for _, ev := range evs {
				count[ev.Type]++
			}
			if count[trove.EventAgentToolUse] != 1 || count[trove.EventAgentMessage] != 1 || count["span.model_request_start"] != 2 || len(e.claude.Requests()) != 2 {
				t.Errorf("transcript %s with %d model requests; want one tool use, one message, two requests", types(evs), len(e.claude.Requests()))
			}
			if got := cb.claims.Load(); got != tc.claims {
				t.Errorf("the runner claimed the run %d times, want %d", got, tc.claims)
			}
			// The run is not pending any more: nothing is left to claim.
			run, err := e.svc.ClaimSessionRun(context.Background(), "probe", time.Minute)
			if err != nil || run != nil {
				t.Errorf("ClaimSessionRun after the turn = %+v, %v; want none pending", run, err)
			}
		})
	}
}

// TestToolWaitGivesWayToOtherRuns: a run waiting for its worker's results
// gives its worker back as soon as another run is woken while every
// worker is busy: with one worker and a minute of ToolWait, a second
// session's turn still runs at once, and both turns end.
func TestToolWaitGivesWayToOtherRuns(t *testing.T) {
	t.Parallel()
	a := newEnvWith(t, func(c *agentloop.Config) { c.Workers, c.ToolWait = 1, time.Minute },
		claudetest.Turn{ToolUses: []claudetest.ToolUse{{Name: "read", Input: map[string]any{"file_path": "/x"}}}},
		claudetest.Turn{Text: "Done."},
	)
	a.claude.AnswerByPosition() // each session's first request gets the tool use
	se, _, err := a.svc.CreateSession(a.ctx, trove.CreateSessionParams{Agent: &trove.AgentRef{ID: a.session.Managed.AgentID}, EnvironmentID: a.session.Managed.EnvironmentID})
	if err != nil {
		t.Fatal(err)
	}
	b := *a
	b.session = se
	hasUse := func(evs []trove.SessionEvent) bool { return last(evs, trove.EventAgentToolUse) != nil }
	a.send(t, trove.EventUserMessage, `{"content":[{"type":"text","text":"a"}]}`)
	useA := last(a.waitFor(t, "a's tool use", hasUse), trove.EventAgentToolUse)
	// a's run now waits for its result, holding the only worker.
	b.send(t, trove.EventUserMessage, `{"content":[{"type":"text","text":"b"}]}`)
	useB := last(b.waitFor(t, "b's tool use while a waits", hasUse), trove.EventAgentToolUse)
	a.send(t, "user.tool_result", `{"tool_use_id":"`+useA.ID+`","content":[{"type":"text","text":"A"}]}`)
	a.waitFor(t, "a's end_turn", idleWith("end_turn"))
	b.send(t, "user.tool_result", `{"tool_use_id":"`+useB.ID+`","content":[{"type":"text","text":"B"}]}`)
	b.waitFor(t, "b's end_turn", idleWith("end_turn"))
}
