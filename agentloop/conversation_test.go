package agentloop

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
)

func ev(seq int64, id, typ, body string) trove.SessionEvent {
	return trove.SessionEvent{ID: id, Seq: seq, Type: typ, Body: body}
}

// TestRebuild: what a transcript asks of the loop, and the conversation it
// sends: tool uses carry their event IDs, results pair with them.
func TestRebuild(t *testing.T) {
	msg := ev(1, "e1", "user.message", `{"content":[{"type":"text","text":"hi"}]}`)
	run := ev(2, "e2", "session.status_running", `{}`)
	span := ev(3, "e3", "span.model_request_start", `{}`)
	say := ev(4, "e4", "agent.message", `{"content":[{"type":"text","text":"reading"}]}`)
	use := ev(5, "e5", "agent.tool_use", `{"name":"read","input":{"file_path":"/a"}}`)
	cuse := ev(6, "e6", "agent.custom_tool_use", `{"name":"lookup","input":{}}`)
	end := ev(7, "e7", "span.model_request_end", `{"model_request_start_id":"e3"}`)
	idle := ev(8, "e8", "session.status_idle", `{"stop_reason":{"type":"requires_action","event_ids":["e5","e6"]}}`)
	res := ev(9, "e9", "user.tool_result", `{"tool_use_id":"e5","content":[{"type":"text","text":"A"}]}`)
	cres := ev(10, "e10", "user.custom_tool_result", `{"custom_tool_use_id":"e6","content":[{"type":"text","text":"B"}],"is_error":true}`)
	intr := ev(10, "e10", "user.interrupt", `{}`)
	tests := []struct {
		name       string
		events     []trove.SessionEvent
		needsModel bool
		open       []string
		spanOpen   string
		msgs       string
	}{
		{"new message", []trove.SessionEvent{msg}, true, nil, "",
			`[{"content":[{"text":"hi","type":"text"}],"role":"user"}]`},
		{"request started, no answer stored", []trove.SessionEvent{msg, run, span}, true, nil, "e3",
			`[{"content":[{"text":"hi","type":"text"}],"role":"user"}]`},
		{"waiting for both results", []trove.SessionEvent{msg, run, span, say, use, cuse, end, idle}, false, []string{"e5", "e6"}, "", ""},
		{"one result of two", []trove.SessionEvent{msg, run, span, say, use, cuse, end, idle, res}, false, []string{"e6"}, "", ""},
		{"both results", []trove.SessionEvent{msg, run, span, say, use, cuse, end, idle, res, cres}, true, nil, "",
			`[{"content":[{"text":"hi","type":"text"}],"role":"user"},` +
				`{"content":[{"text":"reading","type":"text"},{"id":"e5","input":{"file_path":"/a"},"name":"read","type":"tool_use"},{"id":"e6","input":{},"name":"lookup","type":"tool_use"}],"role":"assistant"},` +
				`{"content":[{"tool_use_id":"e5","content":[{"text":"A","type":"text"}],"is_error":false,"type":"tool_result"},{"tool_use_id":"e6","content":[{"text":"B","type":"text"}],"is_error":true,"type":"tool_result"}],"role":"user"}]`},
		{"interrupt ends the turn", []trove.SessionEvent{msg, run, span, say, use, cuse, end, idle, res, intr}, false, nil, "", ""},
		{"interrupt during a request", []trove.SessionEvent{msg, run, span, ev(4, "e4", "user.interrupt", `{}`)}, false, nil, "e3", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := rebuild(tc.events)
			var open []string
			for _, u := range c.open {
				open = append(open, u.eventID)
			}
			if c.needsModel != tc.needsModel || !cmp.Equal(open, tc.open) || c.spanOpen != tc.spanOpen {
				t.Fatalf("needsModel %v open %v spanOpen %q; want %v %v %q", c.needsModel, open, c.spanOpen, tc.needsModel, tc.open, tc.spanOpen)
			}
			if c.lastSeq != tc.events[len(tc.events)-1].Seq {
				t.Errorf("lastSeq %d", c.lastSeq)
			}
			if tc.msgs == "" {
				return
			}
			got, _ := json.Marshal(c.msgs)
			var g, w any
			_ = json.Unmarshal(got, &g)
			_ = json.Unmarshal([]byte(tc.msgs), &w)
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("messages (-want +got):\n%s\n%s", d, got)
			}
		})
	}
}

// TestTranscriptIncremental: a run's transcript fed event by event (the
// request's final messages sent as JSON encoded once and kept) gives, at
// every step, the conversation that reading the whole transcript again
// gives: the same request messages, open uses and state.
func TestTranscriptIncremental(t *testing.T) {
	text := func(s string) string { return `{"content":[{"type":"text","text":"` + s + `"}]}` }
	all := []trove.SessionEvent{
		ev(1, "e1", "user.message", text("hi")),
		ev(2, "e2", "span.model_request_start", `{}`),
		ev(3, "e3", "agent.thinking", `{"thinking":"hmm","signature":"sig"}`),
		ev(4, "e4", "agent.tool_use", `{"name":"read","input":{"file_path":"/a"}}`),
		ev(5, "e5", "agent.custom_tool_use", `{"name":"lookup","input":{"q":"x"}}`),
		ev(6, "e6", "span.model_request_end", `{"model_request_start_id":"e2"}`),
		ev(7, "e7", "user.tool_result", `{"tool_use_id":"e4","content":[{"type":"text","text":"A"}]}`),
		ev(8, "e8", "user.custom_tool_result", `{"custom_tool_use_id":"e5","content":[{"type":"text","text":"B"}]}`),
		ev(9, "e9", "span.model_request_start", `{}`),
		ev(10, "e10", "agent.message", text("done")),
		ev(11, "e11", "span.model_request_end", `{"model_request_start_id":"e9"}`),
		ev(12, "e12", "user.message", text("again")),
		ev(13, "e13", "span.model_request_start", `{}`),
		ev(14, "e14", "agent.tool_use", `{"name":"bash","input":{"command":"ls"}}`),
		ev(15, "e15", "span.model_request_end", `{"model_request_start_id":"e13"}`),
		ev(16, "e16", "user.interrupt", `{}`),
		ev(17, "e17", "user.message", text("third")),
		ev(18, "e18", "span.model_request_start", `{}`),
		ev(19, "e19", "agent.message", text("ok")),
		ev(20, "e20", "user.message", text("x")),
		ev(21, "e21", "user.message", text("y")),
		ev(22, "e22", "agent.tool_use", `{"name":"read","input":{}}`),
		ev(23, "e23", "user.tool_confirmation", `{"tool_use_id":"e22","result":"deny"}`),
		// An answer with no content: the next user turn merges into the
		// user message before it, the one message that still changes.
		ev(24, "e24", "user.message", text("p")),
		ev(25, "e25", "agent.message", `{"content":[]}`),
		ev(26, "e26", "user.message", text("q")),
		ev(27, "e27", "agent.message", text("fine")),
		ev(28, "e28", "user.message", text("r")),
	}
	norm := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	state := func(c *conversation) string {
		var open []string
		for _, u := range c.open {
			open = append(open, u.eventID)
		}
		b, _ := json.Marshal([]any{open, c.needsModel, c.spanOpen, c.lastSeq, c.turnRequests})
		return string(b)
	}
	var tr transcript
	for k := range all {
		t.Run(all[k].Type+"@"+all[k].ID, func(t *testing.T) {
			if !tr.add(all[k : k+1]) {
				t.Fatal("add refused the next event")
			}
			got := tr.conversation()
			// Encode twice: the second request reuses the kept JSON.
			_ = norm(got.requestMessages())
			want := rebuild(all[:k+1])
			if d := cmp.Diff(norm(want.msgs), norm(got.requestMessages())); d != "" {
				t.Errorf("request messages (-fresh +incremental):\n%s", d)
			}
			if g, w := state(got), state(want); g != w {
				t.Errorf("state %s, fresh %s", g, w)
			}
		})
	}
	if tr.add([]trove.SessionEvent{ev(30, "e30", "user.message", text("gap"))}) {
		t.Error("add took an event that does not follow the held ones")
	}
}

// TestMemoryNote: every store with its mount path, access and
// instructions.
func TestMemoryNote(t *testing.T) {
	got := SystemPrompt("Be brief.", []trove.SessionStore{
		{Name: "Prefs", MountPath: "/mnt/memory/prefs", Access: trove.AccessReadWrite, Description: "how the user likes things", Instructions: "Check first."},
		{Name: "Docs", MountPath: "/mnt/memory/docs", Access: trove.AccessReadOnly},
	})
	want := "Be brief.\n\n# Memory stores\n\nMemory stores are mounted as directories; read them before you start and keep them up to date with what you learn.\n" +
		"\n- Prefs at /mnt/memory/prefs (read_write): how the user likes things\n  Instructions: Check first.\n" +
		"\n- Docs at /mnt/memory/docs (read_only) Writes to it are refused.\n"
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
	if tl, ok := ToolsetTool("write"); !ok || tl.Schema["required"] == nil || tl.Description == "" {
		t.Errorf("ToolsetTool(write) = %+v, %v", tl, ok)
	}
}
