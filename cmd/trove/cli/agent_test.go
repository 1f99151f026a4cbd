package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestAgentWithoutAPIKey(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"agent", "--root", t.TempDir(), "hello"}, strings.NewReader(""), &stdout, &stderr)
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "ANTHROPIC_API_KEY") {
		t.Errorf("stderr %q does not name ANTHROPIC_API_KEY", stderr.String())
	}
}

func TestAgentUsage(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "k")
	for _, args := range [][]string{{"agent", "--root", t.TempDir()}, {"agent", "--root", t.TempDir(), "a", "b"}, {"agent", "hi"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(args, strings.NewReader(""), &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %s)", args, code, stderr.String())
		}
	}
}

// TestAgentAgainstFakeAPI runs the whole command against a scripted
// Messages API reached through ANTHROPIC_BASE_URL.
func TestAgentAgainstFakeAPI(t *testing.T) {
	replies := []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Saving."},{"type":"tool_use","id":"toolu_1","name":"memory","input":{"command":"create","path":"/memories/prefs.md","file_text":"likes tea\n"}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`,
		`{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Noted: you like tea."}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`,
	}
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		mu.Lock()
		bodies = append(bodies, m)
		n := len(bodies)
		mu.Unlock()
		if n > len(replies) {
			http.Error(w, "script exhausted", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, replies[n-1])
	}))
	defer srv.Close()
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main([]string{"agent", "--root", dir, "--model", "claude-test", "--max-turns", "5", "I like tea"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	if got, want := stdout.String(), "Saving.\nNoted: you like tea.\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := stderr.String(), "[memory] create /memories/prefs.md -> ok\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "prefs.md")); err != nil || string(b) != "likes tea\n" {
		t.Errorf("prefs.md = %q, %v", b, err)
	}
	if len(bodies) != 2 || bodies[0]["model"] != "claude-test" {
		t.Fatalf("requests: %d, model %v", len(bodies), bodies[0]["model"])
	}
	msgs := bodies[1]["messages"].([]any)
	got := fmt.Sprint(msgs[len(msgs)-1])
	if !strings.Contains(got, "toolu_1") || !strings.Contains(got, "File created successfully at: /memories/prefs.md") {
		t.Errorf("second request's last message = %s", got)
	}
}
