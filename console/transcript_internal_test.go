package console

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
)

// TestViewEvent: each event type is shown readably; a body that does not
// parse, or a type the page does not know, is shown raw as text; long text
// is cut on a rune boundary with a note.
func TestViewEvent(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	long := strings.Repeat("é", maxShownText) // 2 bytes each
	tests := []struct {
		name string
		typ  string
		body string
		want eventView
	}{
		{"user text blocks", trove.EventUserMessage, `{"content":[{"type":"text","text":"hi"},{"type":"image","source":{}},{"type":"text","text":"there"}]}`,
			eventView{Kind: "user", Label: "User", Text: "hi\n[image block]\nthere"}},
		{"user string content", trove.EventUserMessage, `{"content":"plain"}`, eventView{Kind: "user", Label: "User", Text: "plain"}},
		{"agent message", trove.EventAgentMessage, `{"content":[{"type":"text","text":"ok"}]}`, eventView{Kind: "agent", Label: "Agent", Text: "ok"}},
		{"tool use input unescaped and indented", trove.EventAgentToolUse, `{"name":"read","input":{"path":"\u003cx\u003e"}}`,
			eventView{Kind: "tool-use", Label: "Tool use", Name: "read", Text: "{\n  \"path\": \"<x>\"\n}"}},
		{"custom tool use", trove.EventAgentCustomToolUse, `{"name":"lookup","input":{}}`, eventView{Kind: "tool-use", Label: "Custom tool use", Name: "lookup", Text: "{}"}},
		{"error result", trove.EventAgentToolResult, `{"tool_use_id":"sevt_1","content":[{"type":"text","text":"no"}],"is_error":true}`,
			eventView{Kind: "tool-result", Label: "Tool result", Ref: "sevt_1", Text: "no", Error: true}},
		{"custom result", trove.EventUserCustomToolResult, `{"custom_tool_use_id":"sevt_2","content":[{"type":"text","text":"42"}]}`,
			eventView{Kind: "tool-result", Label: "Tool result", Ref: "sevt_2", Text: "42"}},
		{"idle with stop reason", trove.EventSessionStatusIdle, `{"stop_reason":{"type":"requires_action"}}`, eventView{Kind: "status", Label: "idle", Text: "requires_action"}},
		{"session error", trove.EventSessionError, `{"error":{"message":"boom"}}`, eventView{Kind: "status", Label: "error", Text: `{"message":"boom"}`, Error: true}},
		{"span", trove.EventSpanModelRequestEnd, `{"model_usage":{}}`, eventView{Kind: "status", Label: trove.EventSpanModelRequestEnd}},
		{"unknown type raw", "user.define_outcome", `{"a":1}`, eventView{Kind: "other", Label: "user.define_outcome", Text: `{"a":1}`}},
		{"unparsable body raw", trove.EventUserMessage, `not json <b>`, eventView{Kind: "other", Label: trove.EventUserMessage, Text: `not json <b>`}},
		{"long text cut on a rune", trove.EventAgentMessage, `{"content":"` + long + `"}`,
			eventView{Kind: "agent", Label: "Agent", Text: long[:maxShownText], Note: "truncated: 8192 bytes in all"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := viewEvent(trove.SessionEvent{Seq: 7, Type: tt.typ, Body: tt.body, ProcessedAt: at})
			tt.want.Seq, tt.want.Type, tt.want.Time = 7, tt.typ, "2026-01-02 03:04:05Z"
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("viewEvent (-want +got):\n%s", d)
			}
		})
	}
	t.Run("cut mid-rune", func(t *testing.T) {
		s := "a" + strings.Repeat("é", maxShownText)
		got, note := clip(s)
		if len(got) != maxShownText-1 || !strings.HasPrefix(s, got) || note == "" {
			t.Errorf("clip cut to %d bytes, note %q", len(got), note)
		}
	})
}
