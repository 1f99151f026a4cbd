package agentloop

import (
	"encoding/json"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"

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
}

// parsedEvent is a transcript event with its body decoded once: a run
// keeps its transcript parsed between steps and reads only the events
// appended since (see transcript), instead of reading and decoding the
// whole transcript at every step.
type parsedEvent struct {
	seq  int64
	id   string
	typ  string
	body map[string]any
}

// transcript is a session's transcript as a run holds it: parsed events,
// oldest first, contiguous from seq 1.
type transcript struct{ events []parsedEvent }

// lastSeq is the newest event's seq (0 for none).
func (t *transcript) lastSeq() int64 {
	if n := len(t.events); n > 0 {
		return t.events[n-1].seq
	}
	return 0
}

// add appends events that follow the held ones; false (nothing added)
// when they do not follow them seq by seq, so the caller reads the
// transcript again from the start.
func (t *transcript) add(events []trove.SessionEvent) bool {
	next := t.lastSeq() + 1
	for i, e := range events {
		if e.Seq != next+int64(i) {
			return false
		}
	}
	for _, e := range events {
		var body map[string]any
		_ = json.Unmarshal([]byte(e.Body), &body)
		t.events = append(t.events, parsedEvent{seq: e.Seq, id: e.ID, typ: e.Type, body: body})
	}
	return true
}

// rebuild reads a transcript (oldest first) into the conversation the
// next Messages request continues. Tool uses carry their event ID as the
// tool_use block's ID, so results (which name the event) pair with them.
func rebuild(events []trove.SessionEvent) *conversation {
	var t transcript
	for _, e := range events {
		var body map[string]any
		_ = json.Unmarshal([]byte(e.Body), &body)
		t.events = append(t.events, parsedEvent{seq: e.Seq, id: e.ID, typ: e.Type, body: body})
	}
	return t.conversation()
}

// conversation is rebuild over the held, parsed events. The bodies are
// only read, never changed: the conversation's blocks may share them.
func (t *transcript) conversation() *conversation {
	c := &conversation{}
	var assistant, user []anthropic.ContentBlockParamUnion
	var uses []toolUse // of the current answer
	results := map[string]anthropic.ContentBlockParamUnion{}
	flushAssistant := func() {
		if len(assistant) == 0 {
			return
		}
		c.msgs = append(c.msgs, anthropic.NewAssistantMessage(assistant...))
		assistant = nil
	}
	// closeUses turns the answered tool uses into the user message's
	// leading tool_result blocks, once every use of the answer has one.
	closeUses := func() bool {
		for _, u := range uses {
			if _, ok := results[u.eventID]; !ok {
				return false
			}
		}
		if len(uses) == 0 {
			return true
		}
		blocks := make([]anthropic.ContentBlockParamUnion, 0, len(uses)+len(user))
		for _, u := range uses {
			blocks = append(blocks, results[u.eventID])
		}
		user = append(blocks, user...)
		uses = nil
		return true
	}
	flushUser := func() {
		if len(user) == 0 {
			return
		}
		// Two user turns in a row (a message sent after an interrupt with no
		// answer between) merge into one.
		if n := len(c.msgs); n > 0 && c.msgs[n-1].OfUser != nil {
			c.msgs[n-1].OfUser.Content = append(c.msgs[n-1].OfUser.Content, user...)
		} else {
			c.msgs = append(c.msgs, anthropic.NewUserMessage(user...))
		}
		user = nil
	}
	for i := range t.events {
		e := &t.events[i]
		c.lastSeq = e.seq
		body := e.body
		switch e.typ {
		case trove.EventUserMessage:
			if len(uses) == 0 {
				flushAssistant()
			}
			user = append(user, contentBlocks(body["content"])...)
			c.needsModel = true
			c.turnRequests = 0
		case trove.EventAgentThinking:
			if th, _ := body["thinking"].(string); th != "" {
				sig, _ := body["signature"].(string)
				assistant = append(assistant, anthropic.NewThinkingBlock(sig, th))
			}
		case trove.EventAgentMessage:
			flushUser()
			assistant = append(assistant, contentBlocks(body["content"])...)
			c.needsModel = false
		case trove.EventAgentToolUse, trove.EventAgentCustomToolUse:
			flushUser()
			name, _ := body["name"].(string)
			input := body["input"]
			if input == nil {
				input = map[string]any{}
			}
			assistant = append(assistant, anthropic.NewToolUseBlock(e.id, input, name))
			perm, _ := body["evaluated_permission"].(string)
			uses = append(uses, toolUse{eventID: e.id, name: name, custom: e.typ == trove.EventAgentCustomToolUse, ask: perm == "ask"})
			c.needsModel = false
		case "user.tool_result", trove.EventUserCustomToolResult:
			id, _ := body["tool_use_id"].(string)
			if e.typ == trove.EventUserCustomToolResult {
				id, _ = body["custom_tool_use_id"].(string)
			}
			if !pending(uses, id) {
				continue
			}
			if _, dup := results[id]; dup {
				continue
			}
			isErr, _ := body["is_error"].(bool)
			results[id] = toolResult(id, body["content"], isErr)
			if len(uses) > 0 && allAnswered(uses, results) {
				flushAssistant()
				closeUses()
				c.needsModel = true
			}
		case "user.tool_confirmation":
			id, _ := body["tool_use_id"].(string)
			if r, _ := body["result"].(string); r == "deny" && pending(uses, id) {
				msg := "The user denied this tool call."
				if dm, _ := body["deny_message"].(string); dm != "" {
					msg += " " + dm
				}
				results[id] = anthropic.NewToolResultBlock(id, msg, true)
				if allAnswered(uses, results) {
					flushAssistant()
					closeUses()
					c.needsModel = true
				}
			}
		case "user.interrupt":
			// Every open tool use is answered as interrupted, and the turn
			// ends: the model is not asked until the next user message.
			for _, u := range uses {
				if _, ok := results[u.eventID]; !ok {
					results[u.eventID] = anthropic.NewToolResultBlock(u.eventID, "The user interrupted this tool call.", true)
				}
			}
			if len(uses) > 0 {
				flushAssistant()
				closeUses()
			}
			c.needsModel = false
		case "span.model_request_start":
			c.spanOpen = e.id
			c.turnRequests++
		case "span.model_request_end":
			c.spanOpen = ""
		}
	}
	flushAssistant()
	if closeUses() {
		flushUser()
	}
	for _, u := range uses {
		if _, ok := results[u.eventID]; !ok {
			c.open = append(c.open, u)
		}
	}
	if len(c.open) > 0 {
		c.needsModel = false
	}
	// A request must start with a user turn.
	for len(c.msgs) > 0 && c.msgs[0].OfUser == nil {
		c.msgs = c.msgs[1:]
	}
	return c
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
