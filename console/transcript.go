package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/trovehq/trove"
)

// transcriptPageSize is how many events the session page shows at once
// (the newest; an "older" link pages back).
const transcriptPageSize = 100

// maxShownText bounds each text an event shows (a tool's input or result,
// a message); the rest is cut with a note saying how long it was.
const maxShownText = 4 << 10

// eventView is one transcript event as the session page shows it. Every
// string is agent- or user-written text that the template escapes.
type eventView struct {
	Seq   int64
	Type  string
	Kind  string // user, agent, tool-use, tool-result, status, other: the row's class
	Label string // a fixed word for the row
	Time  string // RFC 3339, from ProcessedAt
	Text  string // the message text, the tool's input, the result's content
	Name  string // a tool use's tool name
	Ref   string // a result's tool use ID
	Error bool   // a tool result flagged is_error, a session.error
	Note  string // "truncated: N bytes in all" when Text was cut
}

// clip cuts s to maxShownText bytes (on a rune boundary) and says so.
func clip(s string) (string, string) {
	if len(s) <= maxShownText {
		return s, ""
	}
	n := maxShownText
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n], fmt.Sprintf("truncated: %d bytes in all", len(s))
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// contentText joins the text blocks of an event's content (an array of
// blocks, or a string) and names the other blocks.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	var b strings.Builder
	for i, bl := range blocks {
		if i > 0 {
			b.WriteString("\n")
		}
		if bl.Type == "text" || bl.Text != "" {
			b.WriteString(bl.Text)
		} else {
			b.WriteString("[" + bl.Type + " block]")
		}
	}
	return b.String()
}

// viewEvent makes an event readable. A body that does not parse is shown
// raw (as text).
func viewEvent(e trove.SessionEvent) eventView {
	v := eventView{Seq: e.Seq, Type: e.Type, Time: e.ProcessedAt.UTC().Format("2006-01-02 15:04:05Z")}
	var b struct {
		Content      json.RawMessage `json:"content"`
		Name         string          `json:"name"`
		Input        json.RawMessage `json:"input"`
		ToolUseID    string          `json:"tool_use_id"`
		CustomToolID string          `json:"custom_tool_use_id"`
		IsError      bool            `json:"is_error"`
		StopReason   *struct {
			Type string `json:"type"`
		} `json:"stop_reason"`
		Error json.RawMessage `json:"error"`
	}
	parsed := json.Unmarshal([]byte(e.Body), &b) == nil
	switch {
	case !parsed:
		v.Kind, v.Label, v.Text = "other", e.Type, e.Body
	case e.Type == trove.EventUserMessage:
		v.Kind, v.Label, v.Text = "user", "User", contentText(b.Content)
	case e.Type == trove.EventAgentMessage:
		v.Kind, v.Label, v.Text = "agent", "Agent", contentText(b.Content)
	case e.Type == trove.EventAgentThinking:
		v.Kind, v.Label, v.Text = "agent", "Thinking", contentText(b.Content)
	case e.Type == trove.EventAgentToolUse || e.Type == trove.EventAgentCustomToolUse:
		v.Kind, v.Label, v.Name = "tool-use", "Tool use", b.Name
		if e.Type == trove.EventAgentCustomToolUse {
			v.Label = "Custom tool use"
		}
		v.Text = prettyJSON(b.Input)
	case e.Type == trove.EventAgentToolResult || e.Type == trove.EventUserToolResult || e.Type == trove.EventUserCustomToolResult:
		v.Kind, v.Label, v.Text, v.Error = "tool-result", "Tool result", contentText(b.Content), b.IsError
		v.Ref = b.ToolUseID
		if v.Ref == "" {
			v.Ref = b.CustomToolID
		}
	case strings.HasPrefix(e.Type, "session.status_"):
		v.Kind, v.Label = "status", strings.TrimPrefix(e.Type, "session.status_")
		if b.StopReason != nil {
			v.Text = b.StopReason.Type
		}
	case e.Type == trove.EventSessionError:
		v.Kind, v.Label, v.Text, v.Error = "status", "error", string(b.Error), true
	case slices.Contains([]string{trove.EventSpanModelRequestStart, trove.EventSpanModelRequestEnd, trove.EventSessionUsage, trove.EventSessionUpdated}, e.Type):
		v.Kind, v.Label = "status", e.Type
	default:
		v.Kind, v.Label, v.Text = "other", e.Type, e.Body
	}
	v.Text, v.Note = clip(v.Text)
	return v
}

// prettyJSON indents a JSON value for reading, without the HTML escapes
// (\u003c) a stored body may carry: the template escapes it as text.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
