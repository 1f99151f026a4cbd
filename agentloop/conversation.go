package agentloop

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/trovehq/trove"
)

// toolUse is one tool use the agent asked for: the event that carries it
// (whose ID the result names), and whether it is answered yet.
type toolUse struct {
	eventID string
	name    string
	custom  bool
	ask     bool // evaluated_permission "ask": waits for a confirmation
}

// conversation is a transcript read back: the Messages conversation it
// amounts to and what the loop must do next.
type conversation struct {
	msgs []anthropic.MessageParam
	// open are the tool uses of the last answer without a result yet, in
	// order.
	open []toolUse
	// needsModel: input the model has not answered yet (a user message,
	// or the results of every tool use of the last answer), no interrupt
	// after it.
	needsModel bool
	// spanOpen is the ID of a span.model_request_start with no end after
	// it: a model request a runner started and never finished.
	spanOpen string
	// lastSeq is the transcript's newest event seq.
	lastSeq int64
	// turnRequests counts the model requests since the last user message.
	turnRequests int
	// interrupted: a user.interrupt with no session.status_idle after it,
	// which the turn's end must still answer even if the run never
	// marked the session running (the interrupt came before its first
	// append).
	interrupted bool

	// b is the builder that made the conversation: msgs[i] is its message
	// i+off, final (its JSON cached) when i+off < final.
	b          *builder
	off, final int
}

// transcript is a session's transcript as a run holds it: the
// conversation read so far (a builder), fed the events appended since at
// each step, so that no step reads or decodes the whole transcript again.
type transcript struct{ b builder }

// lastSeq is the newest event's seq (0 for none).
func (t *transcript) lastSeq() int64 { return t.b.c.lastSeq }

// add reads events that follow the held ones; false (nothing read) when
// they do not follow them seq by seq, so the caller reads the transcript
// again from the start (reset).
func (t *transcript) add(events []trove.SessionEvent) bool {
	next := t.lastSeq() + 1
	for i, e := range events {
		if e.Seq != next+int64(i) {
			return false
		}
	}
	for i := range events {
		t.b.add(&events[i])
	}
	return true
}

// reset holds the whole transcript read again: events, oldest first, as
// they are.
func (t *transcript) reset(events []trove.SessionEvent) {
	*t = transcript{}
	for i := range events {
		t.b.add(&events[i])
	}
}

// conversation is the conversation of the events read so far.
func (t *transcript) conversation() *conversation { return t.b.finish() }

// rebuild reads a transcript (oldest first) into the conversation the
// next Messages request continues. Tool uses carry their event ID as the
// tool_use block's ID, so results (which name the event) pair with them.
func rebuild(events []trove.SessionEvent) *conversation {
	var b builder
	for i := range events {
		b.add(&events[i])
	}
	return b.finish()
}

// builder reads a transcript event by event. Its messages only grow, and
// only the last one changes (a user turn merged into it), so every other
// one is final: its JSON is encoded once (rawMessage) and reused by every
// later request of the run.
type builder struct {
	c         conversation // msgs, needsModel, spanOpen, lastSeq, turnRequests
	assistant []anthropic.ContentBlockParamUnion
	user      []anthropic.ContentBlockParamUnion
	uses      []toolUse // of the current answer
	results   map[string]anthropic.ContentBlockParamUnion
	raw       []json.RawMessage // raw[i]: c.msgs[i]'s JSON once final, else nil
}

func (b *builder) flushAssistant() {
	if len(b.assistant) == 0 {
		return
	}
	b.c.msgs = append(b.c.msgs, anthropic.NewAssistantMessage(b.assistant...))
	b.assistant = nil
}

// closeUses turns the answered tool uses into the user message's leading
// tool_result blocks, once every use of the answer has one.
func (b *builder) closeUses() bool {
	for _, u := range b.uses {
		if _, ok := b.results[u.eventID]; !ok {
			return false
		}
	}
	if len(b.uses) == 0 {
		return true
	}
	blocks := make([]anthropic.ContentBlockParamUnion, 0, len(b.uses)+len(b.user))
	for _, u := range b.uses {
		blocks = append(blocks, b.results[u.eventID])
	}
	b.user = append(blocks, b.user...)
	b.uses = nil
	return true
}

func (b *builder) flushUser() {
	if len(b.user) == 0 {
		return
	}
	// Two user turns in a row (a message sent after an interrupt with no
	// answer between) merge into one. The merged message is a copy: the
	// one replaced may be shared with an earlier conversation or builder.
	if n := len(b.c.msgs); n > 0 && b.c.msgs[n-1].OfUser != nil {
		m := b.c.msgs[n-1]
		u := *m.OfUser
		u.Content = append(slices.Clip(u.Content), b.user...)
		m.OfUser = &u
		b.c.msgs[n-1] = m
	} else {
		b.c.msgs = append(b.c.msgs, anthropic.NewUserMessage(b.user...))
	}
	b.user = nil
}

// add reads one event.
func (b *builder) add(ev *trove.SessionEvent) {
	if b.results == nil {
		b.results = map[string]anthropic.ContentBlockParamUnion{}
	}
	b.c.lastSeq = ev.Seq
	var body map[string]any
	_ = json.Unmarshal([]byte(ev.Body), &body)
	switch ev.Type {
	case trove.EventUserMessage:
		if len(b.uses) == 0 {
			b.flushAssistant()
		}
		b.user = append(b.user, contentBlocks(body["content"])...)
		b.c.needsModel = true
		b.c.turnRequests = 0
	case trove.EventAgentThinking:
		if th, _ := body["thinking"].(string); th != "" {
			sig, _ := body["signature"].(string)
			b.assistant = append(b.assistant, anthropic.NewThinkingBlock(sig, th))
		}
	case trove.EventAgentMessage:
		b.flushUser()
		b.assistant = append(b.assistant, contentBlocks(body["content"])...)
		b.c.needsModel = false
	case trove.EventAgentToolUse, trove.EventAgentCustomToolUse:
		b.flushUser()
		name, _ := body["name"].(string)
		input := body["input"]
		if input == nil {
			input = map[string]any{}
		}
		b.assistant = append(b.assistant, anthropic.NewToolUseBlock(ev.ID, input, name))
		perm, _ := body["evaluated_permission"].(string)
		b.uses = append(b.uses, toolUse{eventID: ev.ID, name: name, custom: ev.Type == trove.EventAgentCustomToolUse, ask: perm == "ask"})
		b.c.needsModel = false
	case "user.tool_result", trove.EventUserCustomToolResult:
		id, _ := body["tool_use_id"].(string)
		if ev.Type == trove.EventUserCustomToolResult {
			id, _ = body["custom_tool_use_id"].(string)
		}
		if !pending(b.uses, id) {
			return
		}
		if _, dup := b.results[id]; dup {
			return
		}
		isErr, _ := body["is_error"].(bool)
		b.results[id] = toolResult(id, body["content"], isErr)
		if len(b.uses) > 0 && allAnswered(b.uses, b.results) {
			b.flushAssistant()
			b.closeUses()
			b.c.needsModel = true
		}
	case "user.tool_confirmation":
		id, _ := body["tool_use_id"].(string)
		if r, _ := body["result"].(string); r == "deny" && pending(b.uses, id) {
			msg := "The user denied this tool call."
			if dm, _ := body["deny_message"].(string); dm != "" {
				msg += " " + dm
			}
			b.results[id] = anthropic.NewToolResultBlock(id, msg, true)
			if allAnswered(b.uses, b.results) {
				b.flushAssistant()
				b.closeUses()
				b.c.needsModel = true
			}
		}
	case "user.interrupt":
		// Every open tool use is answered as interrupted, and the turn
		// ends: the model is not asked until the next user message.
		for _, u := range b.uses {
			if _, ok := b.results[u.eventID]; !ok {
				b.results[u.eventID] = anthropic.NewToolResultBlock(u.eventID, "The user interrupted this tool call.", true)
			}
		}
		if len(b.uses) > 0 {
			b.flushAssistant()
			b.closeUses()
		}
		b.c.needsModel = false
		b.c.interrupted = true
	case "session.status_idle":
		b.c.interrupted = false
	case "span.model_request_start":
		b.c.spanOpen = ev.ID
		b.c.turnRequests++
	case "span.model_request_end":
		b.c.spanOpen = ""
	}
}

// finish returns the conversation of the events read so far, leaving the
// builder as it is (its messages are copied, its pending turns flushed in
// the copy).
func (b *builder) finish() *conversation {
	f := builder{c: b.c, assistant: slices.Clip(b.assistant), user: slices.Clip(b.user), uses: slices.Clip(b.uses), results: b.results}
	f.c.msgs = slices.Clone(b.c.msgs)
	f.flushAssistant()
	if f.closeUses() {
		f.flushUser()
	}
	c := f.c
	for _, u := range f.uses {
		if _, ok := f.results[u.eventID]; !ok {
			c.open = append(c.open, u)
		}
	}
	if len(c.open) > 0 {
		c.needsModel = false
	}
	// A request must start with a user turn.
	for len(c.msgs) > 0 && c.msgs[0].OfUser == nil {
		c.msgs = c.msgs[1:]
		c.off++
	}
	c.b, c.final = b, len(b.c.msgs)-1
	return &c
}

// rawMessage returns the builder's final message i as its JSON, encoded
// at the first call.
func (b *builder) rawMessage(i int) anthropic.MessageParam {
	if len(b.raw) <= i {
		b.raw = append(b.raw, make([]json.RawMessage, i+1-len(b.raw))...)
	}
	if b.raw[i] == nil {
		raw, err := json.Marshal(b.c.msgs[i])
		if err != nil {
			return b.c.msgs[i]
		}
		b.raw[i] = raw
	}
	return param.Override[anthropic.MessageParam](b.raw[i])
}

// requestMessages is msgs for a request: the builder's final messages as
// the JSON encoded once, the others as they are.
func (c *conversation) requestMessages() []anthropic.MessageParam {
	if c.b == nil {
		return c.msgs
	}
	out := make([]anthropic.MessageParam, len(c.msgs))
	for i, m := range c.msgs {
		if j := i + c.off; j < c.final {
			out[i] = c.b.rawMessage(j)
		} else {
			out[i] = m
		}
	}
	return out
}

func pending(uses []toolUse, id string) bool {
	for _, u := range uses {
		if u.eventID == id {
			return true
		}
	}
	return false
}

func allAnswered(uses []toolUse, results map[string]anthropic.ContentBlockParamUnion) bool {
	for _, u := range uses {
		if _, ok := results[u.eventID]; !ok {
			return false
		}
	}
	return true
}

// contentBlocks reads an event's content array (text blocks; other kinds
// are described in text so the model still sees that they were there).
func contentBlocks(v any) []anthropic.ContentBlockParamUnion {
	arr, _ := v.([]any)
	var out []anthropic.ContentBlockParamUnion
	for _, b := range arr {
		m, _ := b.(map[string]any)
		switch t, _ := m["type"].(string); t {
		case "text":
			if s, _ := m["text"].(string); s != "" {
				out = append(out, anthropic.NewTextBlock(s))
			}
		case "":
		default:
			out = append(out, anthropic.NewTextBlock("["+t+" block omitted]"))
		}
	}
	return out
}

// toolResult is a tool_result block from a result event's content.
func toolResult(id string, content any, isErr bool) anthropic.ContentBlockParamUnion {
	var texts []string
	arr, _ := content.([]any)
	for _, b := range arr {
		m, _ := b.(map[string]any)
		if s, ok := m["text"].(string); ok {
			texts = append(texts, s)
		} else if t, _ := m["type"].(string); t != "" {
			texts = append(texts, "["+t+" block omitted]")
		}
	}
	text := strings.Join(texts, "\n")
	if text == "" {
		text = "(no output)"
	}
	return anthropic.NewToolResultBlock(id, text, isErr)
}
