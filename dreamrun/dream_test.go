package dreamrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/dreamdiff"
	"github.com/trovehq/trove/dreamrun"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/claudetest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// env is a real server on loopback over core and SQLite, the official SDK
// as its client, and a dream runner whose Messages API is a scripted
// server.
type env struct {
	svc    *core.Service
	sdk    anthropic.Client
	ctx    context.Context // the API key's principal, for direct core calls
	claude *claudetest.Server
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return newEnvOn(t, db)
}

// newEnvOn is newEnv over db.
func newEnvOn(t *testing.T, db storage.Driver) *env {
	t.Helper()
	svc := core.New(db, core.Options{})
	k, secret, err := svc.CreateKey(context.Background(), "wrkspc_dreams", "test")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Events: svc, Dreams: svc, Auth: svc}).HTTPServer()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &env{
		svc: svc,
		sdk: anthropic.NewClient(option.WithBaseURL("http://"+ln.Addr().String()), option.WithAPIKey(secret)),
		ctx: trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: "wrkspc_dreams", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}}),
	}
}

// run starts a runner over e whose Messages API is a scripted server
// answering turns; cfg's zero fields get fast test values. With noKey the
// runner has no Messages client at all.
func (e *env) run(t *testing.T, cfg dreamrun.Config, noKey bool, turns ...claudetest.Turn) *claudetest.Server {
	t.Helper()
	e.claude = claudetest.New(t, turns...)
	if !noKey {
		c := anthropic.NewClient(option.WithBaseURL(e.claude.URL), option.WithAPIKey("sk-ant-test-key"), option.WithMaxRetries(0))
		cfg.Claude = &c
	}
	cfg.Service = e.svc
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = 50 * time.Millisecond
	}
	if cfg.Poll == 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	r := dreamrun.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return e.claude
}

// fixture makes the input store (duplicated and contradicted memories) and
// one session whose transcript holds newer facts.
func (e *env) fixture(t *testing.T) (*trove.Store, *trove.Session) {
	t.Helper()
	st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "user prefs"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ path, content string }{
		{"/prefs/drinks.md", "The user drinks coffee every morning.\n"},
		{"/prefs/drinks-copy.md", "The user drinks coffee every morning.\n"},
		{"/home.md", "The user lives in Paris.\n"},
	} {
		if _, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: m.path, Content: m.content}); err != nil {
			t.Fatal(err)
		}
	}
	se, _, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.AppendEvents(e.ctx, se.ID, []trove.NewSessionEvent{
		{Type: trove.EventUserMessage, Body: `{"content":[{"type":"text","text":"I moved to Lyon last month."}]}`},
		{Type: trove.EventAgentMessage, Body: `{"content":[{"type":"text","text":"Noted: you live in Lyon."}]}`},
		{Type: trove.EventUserMessage, Body: `{"content":[{"type":"text","text":"Also, I switched from coffee to tea."}]}`},
	}); err != nil {
		t.Fatal(err)
	}
	return st, se
}

func (e *env) create(t *testing.T, p anthropic.BetaDreamNewParams) *anthropic.BetaDream {
	t.Helper()
	d, err := e.sdk.Beta.Dreams.New(context.Background(), p)
	if err != nil {
		t.Fatalf("Dreams.New: %v", err)
	}
	return d
}

func params(storeID, sessionID string) anthropic.BetaDreamNewParams {
	return anthropic.BetaDreamNewParams{
		Inputs: []anthropic.BetaDreamInputUnionParam{
			{OfMemoryStore: &anthropic.BetaDreamMemoryStoreInputParam{MemoryStoreID: storeID}},
			{OfSessions: &anthropic.BetaDreamSessionsInputParam{SessionIDs: []string{sessionID}}},
		},
		Model: anthropic.BetaDreamNewParamsModelUnion{OfString: anthropic.String("claude-sonnet-4-6")},
	}
}

// wait polls the dream through the SDK until it is terminal.
func (e *env) wait(t *testing.T, id string, within time.Duration) *anthropic.BetaDream {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		d, err := e.sdk.Beta.Dreams.Get(context.Background(), id, anthropic.BetaDreamGetParams{})
		if err != nil {
			t.Fatalf("Dreams.Get: %v", err)
		}
		if d.Status == "completed" || d.Status == "failed" || d.Status == "canceled" {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("dream %s still %s after %s", id, d.Status, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// contents returns path → content of a store's live memories.
func (e *env) contents(t *testing.T, storeID string) map[string]string {
	t.Helper()
	out := map[string]string{}
	cursor := ""
	for {
		pg, err := e.svc.ListMemories(e.ctx, storeID, trove.ListMemoriesParams{View: trove.ViewFull, Limit: 20, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range pg.Data {
			out[it.Memory.Path] = *it.Memory.Content
		}
		if cursor = pg.NextPage; cursor == "" {
			return out
		}
	}
}

func (e *env) versions(t *testing.T, storeID string) []trove.MemoryVersion {
	t.Helper()
	pg, err := e.svc.ListVersions(e.ctx, storeID, trove.ListVersionsParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return pg.Data
}

// toolResults returns the tool_result blocks of the last message of a
// request: (is_error, text) each.
func toolResults(t *testing.T, req claudetest.Request) [][2]string {
	t.Helper()
	var msg struct {
		Content []struct {
			Type    string `json:"type"`
			IsError bool   `json:"is_error"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"content"`
	}
	if err := json.Unmarshal(req.Messages[len(req.Messages)-1], &msg); err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, b := range msg.Content {
		if b.Type == "tool_result" {
			text := ""
			for _, c := range b.Content {
				text += c.Text
			}
			errs := "ok"
			if b.IsError {
				errs = "error"
			}
			out = append(out, [2]string{errs, text})
		}
	}
	return out
}

func mem(input map[string]any) claudetest.ToolUse { return claudetest.Memory(input) }

// TestDreamEndToEnd: duplicated and contradicted memories plus a
// transcript with newer facts → an output store with them merged, the
// input untouched, every output version attributed to the dream's
// session, usage summed, all driven through the SDK's Beta.Dreams.
func TestDreamEndToEnd(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); testDreamEndToEnd(t, newEnv(t)) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); testDreamEndToEnd(t, newPostgresEnv(t)) })
}

func testDreamEndToEnd(t *testing.T, e *env) {
	st, se := e.fixture(t)
	sessionID := se.ID
	script := []claudetest.Turn{
		{ToolUses: []claudetest.ToolUse{
			mem(map[string]any{"command": "view", "path": "/memories"}),
			{Name: "read_transcript", Input: map[string]any{"session_id": sessionID}},
		}, Usage: claudetest.Usage{Input: 1000, Output: 50, CacheCreation: 800}},
		{ToolUses: []claudetest.ToolUse{
			mem(map[string]any{"command": "delete", "path": "/memories/prefs/drinks-copy.md"}),
			mem(map[string]any{"command": "str_replace", "path": "/memories/prefs/drinks.md",
				"old_str": "drinks coffee every morning.", "new_str": "drinks tea (switched from coffee, per session " + sessionID + ")."}),
			mem(map[string]any{"command": "str_replace", "path": "/memories/home.md",
				"old_str": "lives in Paris.", "new_str": "lives in Lyon (moved from Paris)."}),
		}, Usage: claudetest.Usage{Input: 1200, Output: 120, CacheRead: 800}},
		{ToolUses: []claudetest.ToolUse{
			mem(map[string]any{"command": "view", "path": "/etc/passwd"}),
			mem(map[string]any{"command": "create", "path": "/memories/../escape.md", "file_text": "out"}),
			{Name: "read_transcript", Input: map[string]any{"session_id": "sesn_not_an_input"}},
		}, Usage: claudetest.Usage{Input: 1300, Output: 40, CacheRead: 800}},
		{Text: "Merged the duplicate drinks memory, replaced coffee with tea and Paris with Lyon.", Usage: claudetest.Usage{Input: 1400, Output: 30}},
	}
	e.run(t, dreamrun.Config{}, false, script...)
	e2 := e
	inputBefore := e2.contents(t, st.ID)
	versionsBefore := len(e2.versions(t, st.ID))
	p := params(st.ID, sessionID)
	p.Instructions = anthropic.String("Keep file names stable.")
	created := e2.create(t, p)
	d := e2.wait(t, created.ID, 20*time.Second)
	if d.Status != "completed" {
		t.Fatalf("dream = %s", d.RawJSON())
	}
	if len(d.Outputs) != 1 || d.Outputs[0].MemoryStoreID == st.ID || d.SessionID == "" || !d.JSON.EndedAt.Valid() || d.JSON.Error.Valid() {
		t.Fatalf("completed dream = %s", d.RawJSON())
	}
	want := anthropic.BetaDreamUsage{InputTokens: 4900, OutputTokens: 240, CacheReadInputTokens: 1600, CacheCreationInputTokens: 800}
	if got := d.Usage; got.InputTokens != want.InputTokens || got.OutputTokens != want.OutputTokens ||
		got.CacheReadInputTokens != want.CacheReadInputTokens || got.CacheCreationInputTokens != want.CacheCreationInputTokens {
		t.Errorf("usage = %s, want the sum of the turns %+v", d.JSON.Usage.Raw(), want)
	}
	out := d.Outputs[0].MemoryStoreID
	wantOut := map[string]string{
		"/prefs/drinks.md": "The user drinks tea (switched from coffee, per session " + sessionID + ").\n",
		"/home.md":         "The user lives in Lyon (moved from Paris).\n",
	}
	if diff := cmp.Diff(wantOut, e2.contents(t, out)); diff != "" {
		t.Errorf("output store (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(inputBefore, e2.contents(t, st.ID)); diff != "" {
		t.Errorf("input store changed (-before +after):\n%s", diff)
	}
	if n := len(e2.versions(t, st.ID)); n != versionsBefore {
		t.Errorf("input store has %d versions, had %d", n, versionsBefore)
	}
	// Every output version (the copy and the edits) is the dream session's.
	vs := e2.versions(t, out)
	if len(vs) != 3+3 {
		t.Errorf("output store has %d versions, want 3 copies + 3 edits", len(vs))
	}
	for _, v := range vs {
		if v.CreatedBy == nil || *v.CreatedBy != (trove.Actor{Type: trove.ActorSession, SessionID: d.SessionID}) {
			t.Errorf("version %s (%s) created by %+v, want the dream's session %s", v.ID, v.Operation, v.CreatedBy, d.SessionID)
		}
	}
	// The dream's session ended with it; the output store is a plain store.
	dse, err := e2.svc.GetSession(e2.ctx, d.SessionID)
	if err != nil || dse.EndedAt == nil {
		t.Errorf("dream session = %+v, %v; want ended", dse, err)
	}
	// The dream's own conversation is its session's transcript.
	evs, err := e2.svc.ListEvents(e2.ctx, d.SessionID, trove.ListEventsParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, ev := range evs.Data {
		counts[ev.Type]++
	}
	if diff := cmp.Diff(map[string]int{"user.message": 1, "agent.tool_use": 8, "agent.tool_result": 8, "agent.message": 1}, counts); diff != "" {
		t.Errorf("the dream session's events (-want +got):\n%s", diff)
	}
	// The change set, as trove dreams diff shows it.
	dd, err := e2.svc.GetDream(e2.ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := dreamdiff.ChangeSet(e2.ctx, e2.svc, dd)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		switch {
		case c.Old == nil:
			got = append(got, "added "+c.Path)
		case c.New == nil:
			got = append(got, "removed "+c.Path)
		default:
			got = append(got, "modified "+c.Path)
		}
	}
	if diff := cmp.Diff([]string{"modified /home.md", "removed /prefs/drinks-copy.md", "modified /prefs/drinks.md"}, got); diff != "" {
		t.Errorf("change set (-want +got):\n%s", diff)
	}
	// What the model saw: the prompt and instructions, both tools, the
	// transcript, and refusals for paths outside the store and a session
	// that is not an input.
	reqs := e2.claude.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d Messages requests, want 4", len(reqs))
	}
	if !strings.Contains(reqs[0].System, "newest evidence wins") || !strings.Contains(reqs[0].System, "Keep file names stable.") ||
		!cmp.Equal(reqs[0].Tools, []string{"memory", "read_transcript"}) || reqs[0].APIKey != "sk-ant-test-key" || reqs[0].Model != "claude-sonnet-4-6" {
		t.Errorf("first request: system %q, tools %v, key %q, model %q", reqs[0].System, reqs[0].Tools, reqs[0].APIKey, reqs[0].Model)
	}
	r1 := toolResults(t, reqs[1])
	if len(r1) != 2 || r1[0][0] != "ok" || !strings.Contains(r1[1][1], "I moved to Lyon last month.") || !strings.Contains(r1[1][1], "[end of transcript") {
		t.Errorf("first tool results = %q", r1)
	}
	r3 := toolResults(t, reqs[3])
	if len(r3) != 3 || r3[0][0] != "error" || r3[1][0] != "error" || r3[2][0] != "error" || !strings.Contains(r3[2][1], "not an input session") {
		t.Errorf("refused tool results = %q", r3)
	}
	for p := range e2.contents(t, out) {
		if strings.Contains(p, "escape") {
			t.Errorf("a memory escaped to %s", p)
		}
	}
}

// TestDreamCancelMidRun: a cancel while the model is answering stops the
// run within seconds; the dream is canceled, its output keeps the copy.
func TestDreamCancelMidRun(t *testing.T) {
	e := newEnv(t)
	st, se := e.fixture(t)
	hold, reached := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(hold) })
	e.run(t, dreamrun.Config{}, false,
		claudetest.Turn{ToolUses: []claudetest.ToolUse{mem(map[string]any{"command": "create", "path": "/memories/partial.md", "file_text": "partial\n"})},
			Usage: claudetest.Usage{Input: 10, Output: 5}},
		claudetest.Turn{Hold: hold, Reached: reached},
	)
	d := e.create(t, params(st.ID, se.ID))
	select {
	case <-reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the runner never reached the second turn")
	}
	start := time.Now()
	c, err := e.sdk.Beta.Dreams.Cancel(context.Background(), d.ID, anthropic.BetaDreamCancelParams{})
	if err != nil || c.Status != "canceled" {
		t.Fatalf("Dreams.Cancel = %v, %v", c, err)
	}
	// The runner lets go (ends the session, records usage, releases the
	// lease) within a few heartbeats.
	deadline := time.Now().Add(5 * time.Second)
	for {
		cur, err := e.svc.GetDream(e.ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.LeaseOwner == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the canceled dream's runner still holds its lease 5s after the cancel")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("runner stopped %v after the cancel", time.Since(start))
	got := e.wait(t, d.ID, time.Second)
	if got.Status != "canceled" || got.JSON.Error.Valid() || len(got.Outputs) != 1 || got.Usage.InputTokens != 10 {
		t.Fatalf("canceled dream = %s", got.RawJSON())
	}
	out := e.contents(t, got.Outputs[0].MemoryStoreID)
	if out["/memories/partial.md"] != "" || out["/partial.md"] != "partial\n" || out["/home.md"] == "" {
		t.Errorf("output after cancel = %v; want the copy and the partial write", out)
	}
	if s, _ := e.svc.GetSession(e.ctx, got.SessionID); s == nil || s.EndedAt == nil {
		t.Errorf("the dream's session did not end")
	}
}

// TestDreamFailures: budgets, no API key, a failing Messages API and
// inputs gone after create end the dream failed with the reason.
func TestDreamFailures(t *testing.T) {
	loopTurn := claudetest.Turn{ToolUses: []claudetest.ToolUse{mem(map[string]any{"command": "view", "path": "/memories"})}, Usage: claudetest.Usage{Input: 100, Output: 10}}
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	cases := []struct {
		name    string
		cfg     dreamrun.Config
		noKey   bool
		turns   []claudetest.Turn
		loop    bool
		prepare func(e *env, st *trove.Store, se *trove.Session)
		typ     string
		msg     string
	}{
		{name: "turn budget", cfg: dreamrun.Config{Budget: dreamrun.Budget{MaxTurns: 3}}, loop: true, typ: trove.DreamErrBudgetExhausted, msg: "budget of 3 model turns"},
		{name: "token budget", cfg: dreamrun.Config{Budget: dreamrun.Budget{MaxTokens: 250}}, loop: true, typ: trove.DreamErrBudgetExhausted, msg: "past its budget of 250"},
		{name: "time budget", cfg: dreamrun.Config{Budget: dreamrun.Budget{MaxDuration: 300 * time.Millisecond}}, turns: []claudetest.Turn{{Hold: hold}}, typ: trove.DreamErrTimeout, msg: "time budget"},
		{name: "no API key", noKey: true, typ: trove.DreamErrModelNotConfigured, msg: "--anthropic-api-key"},
		{name: "Messages API error", turns: []claudetest.Turn{{Status: 529}}, typ: trove.DreamErrModelRequestFailed, msg: "529"},
		{name: "input store archived", prepare: func(e *env, st *trove.Store, se *trove.Session) {
			if _, err := e.svc.ArchiveStore(e.ctx, st.ID); err != nil {
				t.Fatal(err)
			}
		}, typ: trove.DreamErrStoreUnavailable, msg: "archived or deleted"},
		{name: "input too large", cfg: dreamrun.Config{MaxInputBytes: 50}, typ: trove.DreamErrStoreTooLarge, msg: "more than 50 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			st, se := e.fixture(t)
			d := e.create(t, params(st.ID, se.ID)) // queued before any runner
			if c.prepare != nil {
				c.prepare(e, st, se)
			}
			srv := e.run(t, c.cfg, c.noKey, c.turns...)
			if c.loop {
				srv.Loop(loopTurn)
			}
			got := e.wait(t, d.ID, 20*time.Second)
			if got.Status != "failed" || got.Error.Type != c.typ || !strings.Contains(got.Error.Message, c.msg) || !got.JSON.EndedAt.Valid() {
				t.Fatalf("dream = %s; want failed %s mentioning %q", got.RawJSON(), c.typ, c.msg)
			}
			if c.noKey && len(srv.Requests()) != 0 {
				t.Errorf("a dream without a key sent %d requests", len(srv.Requests()))
			}
		})
	}
}

// TestDreamLongTranscript: a transcript larger than one read is read in
// pages, each within the page size, and the model is told where the next
// page starts.
func TestDreamLongTranscript(t *testing.T) {
	e := newEnv(t)
	st, se := e.fixture(t)
	var evs []trove.NewSessionEvent
	for i := range 60 {
		evs = append(evs, trove.NewSessionEvent{Type: trove.EventUserMessage,
			Body: `{"content":[{"type":"text","text":"note ` + strings.Repeat("é", 500) + ` ` + string(rune('A'+i%26)) + `"}]}`})
	}
	if _, err := e.svc.AppendEvents(e.ctx, se.ID, evs); err != nil {
		t.Fatal(err)
	}
	read := func(off int) claudetest.ToolUse {
		return claudetest.ToolUse{Name: "read_transcript", Input: map[string]any{"session_id": se.ID, "offset": off}}
	}
	srv := e.run(t, dreamrun.Config{TranscriptPage: 4000}, false,
		claudetest.Turn{ToolUses: []claudetest.ToolUse{read(0)}},
		claudetest.Turn{ToolUses: []claudetest.ToolUse{read(3999), read(10_000_000)}},
		claudetest.Turn{Text: "done"})
	d := e.wait(t, e.create(t, params(st.ID, se.ID)).ID, 20*time.Second)
	if d.Status != "completed" {
		t.Fatalf("dream = %s", d.RawJSON())
	}
	reqs := srv.Requests()
	first := toolResults(t, reqs[1])[0]
	if first[0] != "ok" || len(first[1]) > 4200 || !strings.Contains(first[1], "call read_transcript with offset 4000") {
		t.Errorf("first page (%d bytes) = %.200q…", len(first[1]), first[1])
	}
	next := toolResults(t, reqs[2])
	if next[0][0] != "ok" || !strings.Contains(next[0][1], "offset ") || next[1][0] != "error" {
		t.Errorf("second page / bad offset = %.200q", next)
	}
}

// TestDreamRunnerLost: a dream left running by a runner that died (its
// lease expired) is failed with a clear error by the next runner, never
// left running.
func TestDreamRunnerLost(t *testing.T) {
	e := newEnv(t)
	st, se := e.fixture(t)
	d := e.create(t, params(st.ID, se.ID))
	claimed, err := e.svc.ClaimDream(context.Background(), "dead-node", 50*time.Millisecond)
	if err != nil || claimed == nil || claimed.ID != d.ID {
		t.Fatalf("ClaimDream = %v, %v", claimed, err)
	}
	if _, err := e.svc.RecordDream(context.Background(), d.ID, "dead-node", 50*time.Millisecond, core.DreamProgress{Running: true}); err != nil {
		t.Fatal(err)
	}
	srv := e.run(t, dreamrun.Config{}, false)
	got := e.wait(t, d.ID, 20*time.Second)
	if got.Status != "failed" || got.Error.Type != trove.DreamErrRunnerLost || got.Error.Message != dreamrun.MsgRunnerLost {
		t.Fatalf("dream = %s", got.RawJSON())
	}
	if len(srv.Requests()) != 0 {
		t.Errorf("the lost dream was run again (%d requests)", len(srv.Requests()))
	}
}

// TestDreamInPlace: update_existing consolidates the input store itself;
// its change set is rebuilt from the versions the dream's session wrote,
// and a second in-place dream on the store is refused while it runs.
func TestDreamInPlace(t *testing.T) {
	e := newEnv(t)
	st, se := e.fixture(t)
	if _, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/untouched.md", Content: "stays\n"}); err != nil {
		t.Fatal(err)
	}
	hold, reached := make(chan struct{}), make(chan struct{})
	e.run(t, dreamrun.Config{}, false,
		claudetest.Turn{ToolUses: []claudetest.ToolUse{
			mem(map[string]any{"command": "delete", "path": "/memories/prefs/drinks-copy.md"}),
			mem(map[string]any{"command": "str_replace", "path": "/memories/home.md", "old_str": "Paris", "new_str": "Lyon"}),
			mem(map[string]any{"command": "create", "path": "/memories/insights.md", "file_text": "Moves often.\n"}),
		}},
		claudetest.Turn{Hold: hold, Reached: reached},
		claudetest.Turn{Text: "done"},
	)
	p := params(st.ID, se.ID)
	p.OutputBehavior = anthropic.BetaOutputBehaviorUnionParam{OfUpdateExisting: &anthropic.BetaOutputBehaviorUpdateExistingParam{MemoryStoreID: st.ID}}
	d := e.create(t, p)
	<-reached
	_, err := e.sdk.Beta.Dreams.New(context.Background(), p)
	var apierr *anthropic.Error
	if !errors.As(err, &apierr) || apierr.StatusCode != 409 {
		t.Fatalf("second in-place dream while the first runs: %v, want 409", err)
	}
	close(hold)
	got := e.wait(t, d.ID, 20*time.Second)
	if got.Status != "completed" || len(got.Outputs) != 1 || got.Outputs[0].MemoryStoreID != st.ID {
		t.Fatalf("in-place dream = %s", got.RawJSON())
	}
	want := map[string]string{
		"/prefs/drinks.md": "The user drinks coffee every morning.\n",
		"/home.md":         "The user lives in Lyon.\n",
		"/insights.md":     "Moves often.\n",
		"/untouched.md":    "stays\n",
	}
	if diff := cmp.Diff(want, e.contents(t, st.ID)); diff != "" {
		t.Errorf("store after the in-place dream (-want +got):\n%s", diff)
	}
	dd, _ := e.svc.GetDream(e.ctx, d.ID)
	changes, err := dreamdiff.ChangeSet(e.ctx, e.svc, dd)
	if err != nil {
		t.Fatal(err)
	}
	type ch struct{ Path, Old, New string }
	var gotCh []ch
	for _, c := range changes {
		x := ch{Path: c.Path}
		if c.Old != nil {
			x.Old = *c.Old
		}
		if c.New != nil {
			x.New = *c.New
		}
		gotCh = append(gotCh, x)
	}
	wantCh := []ch{
		{"/home.md", "The user lives in Paris.\n", "The user lives in Lyon.\n"},
		{"/insights.md", "", "Moves often.\n"},
		{"/prefs/drinks-copy.md", "The user drinks coffee every morning.\n", ""},
	}
	if diff := cmp.Diff(wantCh, gotCh); diff != "" {
		t.Errorf("in-place change set (-want +got):\n%s", diff)
	}
	// Once it has stopped, another in-place dream is accepted.
	if _, err := e.sdk.Beta.Dreams.New(context.Background(), p); err != nil {
		t.Errorf("in-place dream after the first ended: %v", err)
	}
}
