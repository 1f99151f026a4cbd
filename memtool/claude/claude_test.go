package claude_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/claude"
)

// script is a fake Messages API: reply i answers request i; every request
// is recorded.
type script struct {
	t       *testing.T
	replies []string
	mu      sync.Mutex
	reqs    []map[string]any
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	n := len(s.reqs)
	s.mu.Unlock()
	if n > len(s.replies) {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"script exhausted"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, s.replies[n-1])
}

func reply(id, stop string, content ...string) string {
	blocks := "[" + join(content) + "]"
	return fmt.Sprintf(`{"id":%q,"type":"message","role":"assistant","model":"claude-sonnet-4-5","content":%s,"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`, id, blocks, stop)
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

func toolUse(id, input string) string {
	return fmt.Sprintf(`{"type":"tool_use","id":%q,"name":"memory","input":%s}`, id, input)
}

func newClient(t *testing.T, h http.Handler) *anthropic.Client {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
	return &c
}

// lastToolResults extracts the tool_result blocks of a request's last
// message, which must be a user message.
func lastToolResults(t *testing.T, req map[string]any) []any {
	t.Helper()
	msgs := req["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	if last["role"] != "user" {
		t.Fatalf("last message role = %v, want user", last["role"])
	}
	return last["content"].([]any)
}

func asJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

func TestRunnerScriptedConversation(t *testing.T) {
	png := "\x89PNG\r\n\x1a\nrest"
	fsys := memtool.NewMemFS(nil)
	if _, err := fsys.WriteFile(context.Background(), "pic.png", []byte(png), ""); err != nil {
		t.Fatal(err)
	}
	tool := memtool.New(fsys, memtool.Options{})
	s := &script{t: t, replies: []string{
		reply("msg_1", "tool_use", `{"type":"text","text":"Checking memory."}`,
			toolUse("toolu_1", `{"command":"view","path":"/memories"}`)),
		// Two calls in one turn, run concurrently.
		reply("msg_2", "tool_use",
			toolUse("toolu_2", `{"command":"create","path":"/memories/progress.md","file_text":"step 1 done\n"}`),
			toolUse("toolu_3", `{"command":"str_replace","path":"/memories/missing.md","old_str":"a","new_str":"b"}`)),
		reply("msg_3", "tool_use",
			toolUse("toolu_4", `{"command":"view","path":"/memories/pic.png"}`),
			`{"type":"tool_use","id":"toolu_5","name":"bash","input":{"cmd":"ls"}}`),
		reply("msg_4", "end_turn", `{"type":"text","text":"All recorded."}`),
	}}
	r := &claude.Runner{Client: newClient(t, s), Tool: tool, Model: "claude-sonnet-4-5", MaxTokens: 1000, System: "Be brief."}
	var seen []string
	r.OnMessage = func(m *anthropic.Message) { seen = append(seen, m.ID) }

	final, conv, err := r.Run(context.Background(), []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("Record your progress.")),
	})
	if err != nil {
		t.Fatal(err)
	}
	if final.ID != "msg_4" || final.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("final = %s %s", final.ID, final.StopReason)
	}
	if diff := cmp.Diff([]string{"msg_1", "msg_2", "msg_3", "msg_4"}, seen); diff != "" {
		t.Errorf("OnMessage (-want +got):\n%s", diff)
	}
	// user, (assistant, user) x3, assistant
	if len(conv) != 8 {
		t.Errorf("conversation has %d messages, want 8", len(conv))
	}
	if len(s.reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(s.reqs))
	}

	first := s.reqs[0]
	if diff := cmp.Diff(asJSON(t, `[{"type":"memory_20250818","name":"memory"}]`), first["tools"]); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if first["model"] != "claude-sonnet-4-5" || first["max_tokens"] != 1000.0 {
		t.Errorf("model/max_tokens = %v/%v", first["model"], first["max_tokens"])
	}
	if diff := cmp.Diff(asJSON(t, `[{"type":"text","text":"Be brief."}]`), first["system"]); diff != "" {
		t.Errorf("system (-want +got):\n%s", diff)
	}

	want := []string{
		`[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n4.0K\t/memories\n12B\t/memories/pic.png"}]}]`,
		`[{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"File created successfully at: /memories/progress.md"}]},
		  {"type":"tool_result","tool_use_id":"toolu_3","is_error":true,"content":[{"type":"text","text":"Error: The path /memories/missing.md does not exist. Please provide a valid path."}]}]`,
		`[{"type":"tool_result","tool_use_id":"toolu_4","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + base64.StdEncoding.EncodeToString([]byte(png)) + `"}}]},
		  {"type":"tool_result","tool_use_id":"toolu_5","is_error":true,"content":[{"type":"text","text":"Error: Unknown tool \"bash\": only the \"memory\" tool is available."}]}]`,
	}
	for i, w := range want {
		if diff := cmp.Diff(asJSON(t, w), any(lastToolResults(t, s.reqs[i+1]))); diff != "" {
			t.Errorf("request %d tool results (-want +got):\n%s", i+2, diff)
		}
		// The assistant turn is replayed before the results.
		msgs := s.reqs[i+1]["messages"].([]any)
		if role := msgs[len(msgs)-2].(map[string]any)["role"]; role != "assistant" {
			t.Errorf("request %d: message before results has role %v", i+2, role)
		}
	}
	data, _, err := fsys.ReadFile(context.Background(), "progress.md", -1)
	if err != nil || string(data) != "step 1 done\n" {
		t.Errorf("progress.md = %q, %v", data, err)
	}
}

func TestRunnerMaxTurns(t *testing.T) {
	loop := reply("msg_x", "tool_use", toolUse("toolu_x", `{"command":"view","path":"/memories"}`))
	s := &script{t: t, replies: []string{loop, loop, loop, loop}}
	r := &claude.Runner{Client: newClient(t, s), Tool: memtool.New(memtool.NewMemFS(nil), memtool.Options{}), MaxTurns: 3}
	last, _, err := r.Run(context.Background(), []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("go"))})
	if !errors.Is(err, claude.ErrMaxTurns) {
		t.Fatalf("err = %v, want ErrMaxTurns", err)
	}
	if last == nil || last.ID != "msg_x" || len(s.reqs) != 3 {
		t.Errorf("last = %v, %d requests; want msg_x after 3", last, len(s.reqs))
	}
	if s.reqs[0]["model"] != string(claude.DefaultModel) {
		t.Errorf("default model = %v", s.reqs[0]["model"])
	}
}

func TestRunnerAPIError(t *testing.T) {
	s := &script{t: t} // no replies: every request fails with 400
	r := &claude.Runner{Client: newClient(t, s), Tool: memtool.New(memtool.NewMemFS(nil), memtool.Options{})}
	_, _, err := r.Run(context.Background(), []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("go"))})
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Fatalf("err = %v, want a 400 API error", err)
	}
}

func TestResultBlockJSON(t *testing.T) {
	tests := []struct {
		name string
		r    memtool.Result
		want string
	}{
		{"text", memtool.Result{Content: []memtool.Block{{Type: memtool.BlockText, Text: "ok"}}},
			`{"type":"tool_result","tool_use_id":"id1","content":[{"type":"text","text":"ok"}]}`},
		{"error", memtool.Result{IsError: true, Content: []memtool.Block{{Type: memtool.BlockText, Text: "Error: no"}}},
			`{"type":"tool_result","tool_use_id":"id1","is_error":true,"content":[{"type":"text","text":"Error: no"}]}`},
		{"image", memtool.Result{Content: []memtool.Block{{Type: memtool.BlockImage, MediaType: "image/jpeg", Data: "AAAA"}}},
			`{"type":"tool_result","tool_use_id":"id1","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"AAAA"}}]}`},
	}
	for _, tc := range tests {
		b, err := json.Marshal(claude.ResultBlock("id1", tc.r))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(asJSON(t, tc.want), asJSON(t, string(b))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// racingFS lets another writer change a file between the engine's read and
// its conditional write, once, as a second agent on the same storage would.
type racingFS struct {
	memtool.FS
	mu    sync.Mutex
	other func(string) string // the other writer's edit; nil once it ran
}

func (r *racingFS) WriteFile(ctx context.Context, name string, data []byte, ifMatch memtool.Version) (memtool.Version, error) {
	r.mu.Lock()
	other := r.other
	if ifMatch != "" {
		r.other = nil
	}
	r.mu.Unlock()
	if ifMatch != "" && other != nil {
		cur, v, err := r.FS.ReadFile(ctx, name, -1)
		if err != nil {
			return "", err
		}
		if _, err := r.FS.WriteFile(ctx, name, []byte(other(string(cur))), v); err != nil {
			return "", err
		}
	}
	return r.FS.WriteFile(ctx, name, data, ifMatch)
}

// TestRunnerEditLosesRace runs a conversation whose str_replace loses a
// race with another writer: the engine re-applies it on the fresh content,
// the model gets the success snippet and neither edit is lost.
func TestRunnerEditLosesRace(t *testing.T) {
	mem := memtool.NewMemFS(nil)
	if _, err := mem.WriteFile(context.Background(), "todo.md", []byte("a: todo\nb: todo\n"), ""); err != nil {
		t.Fatal(err)
	}
	fsys := &racingFS{FS: mem, other: func(s string) string { return strings.Replace(s, "b: todo", "b: done by B", 1) }}
	s := &script{t: t, replies: []string{
		reply("msg_1", "tool_use", toolUse("toolu_1", `{"command":"str_replace","path":"/memories/todo.md","old_str":"a: todo","new_str":"a: done"}`)),
		reply("msg_2", "end_turn", `{"type":"text","text":"Done."}`),
	}}
	r := &claude.Runner{Client: newClient(t, s), Tool: memtool.New(fsys, memtool.Options{})}
	if _, _, err := r.Run(context.Background(), []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("tick a"))}); err != nil {
		t.Fatal(err)
	}
	if fsys.other != nil {
		t.Fatal("the other writer never ran: the race was not exercised")
	}
	want := `[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\ta: done\n     2\tb: done by B\n     3\t"}]}]`
	if diff := cmp.Diff(asJSON(t, want), any(lastToolResults(t, s.reqs[1]))); diff != "" {
		t.Errorf("tool result (-want +got):\n%s", diff)
	}
	data, _, err := mem.ReadFile(context.Background(), "todo.md", -1)
	if err != nil || string(data) != "a: done\nb: done by B\n" {
		t.Errorf("todo.md = %q, %v; want both edits", data, err)
	}
}
