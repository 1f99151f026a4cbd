package claude

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
)

// Recorder turns a Runner's conversation into session events in the
// Managed Agents shapes (user.message, agent.message, agent.tool_use,
// agent.tool_result) and appends them through Append, so a run inside a
// session leaves its transcript. A tool result names its tool use by the
// tool use event's ID, as agent.tool_result does. Recording never stops the
// conversation: the first failure is kept (Err) and later events are
// dropped.
type Recorder struct {
	Append func(ctx context.Context, events []trove.NewSessionEvent) ([]trove.SessionEvent, error)

	mu  sync.Mutex
	ids map[string]string // tool_use block ID → agent.tool_use event ID
	err error
}

// Err returns the first recording failure, or nil.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Recorder) append(ctx context.Context, evs []trove.NewSessionEvent) []trove.SessionEvent {
	if len(evs) == 0 || r.err != nil {
		return nil
	}
	out, err := r.Append(ctx, evs)
	if err != nil {
		r.err = err
		return nil
	}
	return out
}

func event(typ string, body any) trove.NewSessionEvent {
	b, _ := json.Marshal(body)
	return trove.NewSessionEvent{Type: typ, Body: string(b)}
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Prompt records the user's message.
func (r *Recorder) Prompt(ctx context.Context, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.append(ctx, []trove.NewSessionEvent{event(trove.EventUserMessage, map[string]any{"content": []textBlock{{"text", text}}})})
}

// Message records a reply: its text as agent.message and each tool use as
// agent.tool_use.
func (r *Recorder) Message(ctx context.Context, m *anthropic.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var texts []textBlock
	var evs []trove.NewSessionEvent
	var uses []string
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			texts = append(texts, textBlock{"text", b.AsText().Text})
		case "tool_use":
			u := b.AsToolUse()
			evs = append(evs, event(trove.EventAgentToolUse, map[string]any{"name": u.Name, "input": json.RawMessage(u.Input)}))
			uses = append(uses, u.ID)
		}
	}
	if len(texts) > 0 {
		evs = append([]trove.NewSessionEvent{event(trove.EventAgentMessage, map[string]any{"content": texts})}, evs...)
	}
	out := r.append(ctx, evs)
	if len(out) == len(evs) {
		if r.ids == nil {
			r.ids = map[string]string{}
		}
		for i, id := range uses {
			r.ids[id] = out[len(out)-len(uses)+i].ID
		}
	}
}

// ToolResult records a tool call's result as agent.tool_result.
func (r *Recorder) ToolResult(ctx context.Context, use anthropic.ToolUseBlock, res memtool.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.append(ctx, []trove.NewSessionEvent{event(trove.EventAgentToolResult, map[string]any{
		"tool_use_id": r.ids[use.ID],
		"content":     []textBlock{{"text", res.Text()}},
		"is_error":    res.IsError,
	})})
}
