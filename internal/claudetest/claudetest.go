// Package claudetest is an offline stand-in for the Claude Messages API: an
// httptest server that answers POST /v1/messages with planned turns
// (tool_use blocks, a final text, usage, an error status, or a turn that
// blocks until released), and records every request it got. Tests point the
// official Go SDK at its URL, so the whole dream loop runs deterministically
// without a network. Imported only from tests.
package claudetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// ToolUse is one tool call of a planned turn.
type ToolUse struct {
	Name  string
	Input any // encoded as the block's input object
}

// Usage is a turn's token usage.
type Usage struct {
	Input, Output, CacheRead, CacheCreation int64
}

// Turn is one planned answer. With ToolUses it stops for tool_use;
// otherwise it ends the turn with Text. Status, when not 0, answers with
// an API error of that status instead. Hold, when not nil, makes the
// answer wait until Hold is closed or the request is abandoned; Reached is
// closed (once) when the request arrives.
type Turn struct {
	ToolUses []ToolUse
	Text     string
	Usage    Usage
	Status   int
	Hold     chan struct{} `json:"-"`
	Reached  chan struct{} `json:"-"`
	// Delay makes the answer wait this long (the model's latency in
	// benchmarks).
	Delay time.Duration `json:"-"`
}

// Request is one request the server got.
type Request struct {
	APIKey   string // from x-api-key or Authorization: Bearer
	Model    string
	System   string
	Messages []json.RawMessage
	Tools    []string
	// At is when the request arrived (its handler started, before the body
	// is read and decoded), Done when its answer was written.
	At, Done time.Time
}

// Server is a scripted Messages API.
type Server struct {
	URL string
	// Loop, when set, answers every request after the script ran out
	// (a model that never stops); otherwise such a request ends the turn.
	hs       *httptest.Server
	mu       sync.Mutex
	turns    []Turn
	loop     *Turn
	requests []Request
	byPos    bool
}

// AnswerByPosition makes the server answer each request with the turn of
// its place in the conversation (the number of assistant messages it
// holds) instead of the request's count, so a request asked again (after
// a crash) gets the same planned turn.
func (s *Server) AnswerByPosition() {
	s.mu.Lock()
	s.byPos = true
	s.mu.Unlock()
}

// New starts a server answering with turns in order; t's cleanup closes it.
func New(t testing.TB, turns ...Turn) *Server {
	s := Start(turns...)
	t.Cleanup(s.Close)
	return s
}

// Start starts a server answering with turns in order; Close stops it.
func Start(turns ...Turn) *Server {
	s := &Server{turns: turns}
	s.hs = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.hs.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.hs.Close() }

// Loop sets the answer given once the script has run out.
func (s *Server) Loop(t Turn) {
	s.mu.Lock()
	s.loop = &t
	s.mu.Unlock()
}

// Requests returns the requests so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"scripted server: only POST /v1/messages"}}`, http.StatusNotFound)
		return
	}
	at := time.Now() // the request's arrival: before its body is read and decoded
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model  string `json:"model"`
		System []struct {
			Text string `json:"text"`
		} `json:"system"`
		Messages []json.RawMessage `json:"messages"`
		Tools    []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad JSON"}}`, http.StatusBadRequest)
		return
	}
	key := r.Header.Get("X-Api-Key")
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		key = a
	}
	rec := Request{APIKey: key, Model: req.Model, Messages: req.Messages, At: at}
	for _, b := range req.System {
		rec.System += b.Text
	}
	for _, tl := range req.Tools {
		rec.Tools = append(rec.Tools, tl.Name)
	}
	s.mu.Lock()
	n := len(s.requests)
	if s.byPos {
		n = 0
		for _, m := range req.Messages {
			var role struct{ Role string }
			if json.Unmarshal(m, &role) == nil && role.Role == "assistant" {
				n++
			}
		}
	}
	idx := len(s.requests)
	s.requests = append(s.requests, rec)
	var turn Turn
	switch {
	case n < len(s.turns):
		turn = s.turns[n]
	case s.loop != nil:
		turn = *s.loop
	default:
		turn = Turn{Text: "Nothing more to do."}
	}
	s.mu.Unlock()
	if turn.Reached != nil {
		select {
		case <-turn.Reached:
		default:
			close(turn.Reached)
		}
	}
	if turn.Hold != nil {
		select {
		case <-turn.Hold:
		case <-r.Context().Done():
			return
		}
	}
	if turn.Delay > 0 {
		t := time.NewTimer(turn.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if turn.Status != 0 {
		w.Header().Set("X-Should-Retry", "false")
		w.WriteHeader(turn.Status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":"scripted failure %d"}}`, turn.Status)
		return
	}
	content := []map[string]any{}
	stop := "end_turn"
	for i, u := range turn.ToolUses {
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", n, i), "name": u.Name, "input": u.Input})
		stop = "tool_use"
	}
	if len(turn.ToolUses) == 0 {
		content = append(content, map[string]any{"type": "text", "text": turn.Text})
	}
	defer func() {
		s.mu.Lock()
		s.requests[idx].Done = time.Now()
		s.mu.Unlock()
	}()
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": turn.Usage.Input, "output_tokens": turn.Usage.Output,
			"cache_read_input_tokens": turn.Usage.CacheRead, "cache_creation_input_tokens": turn.Usage.CacheCreation,
		},
	})
}

// Memory returns a memory tool call.
func Memory(input map[string]any) ToolUse { return ToolUse{Name: "memory", Input: input} }
