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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// TestAgentGuardFlags runs trove agent with every guard flag against a
// scripted Messages API: the model overwrites a file (--overwrite), writes
// an AWS key (--no-secret-filter) and a file over --max-file-size, all in
// one turn; --expire-after deletes a long-unread file before the first
// request and, after the run, one that aged during it.
func TestAgentGuardFlags(t *testing.T) {
	dir := t.TempDir()
	expired, stale, keep := filepath.Join(dir, "expired.md"), filepath.Join(dir, "stale.md"), filepath.Join(dir, "keep.md")
	for _, p := range []string{expired, stale, keep} {
		if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	longAgo := time.Now().Add(-1000 * time.Hour)
	if err := os.Chtimes(expired, longAgo, longAgo); err != nil {
		t.Fatal(err)
	}
	replies := []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` +
			`{"type":"tool_use","id":"toolu_1","name":"memory","input":{"command":"create","path":"/memories/keep.md","file_text":"new\n"}},` +
			`{"type":"tool_use","id":"toolu_2","name":"memory","input":{"command":"create","path":"/memories/k.md","file_text":"AKIAIOSFODNN7EXAMPLE\n"}},` +
			`{"type":"tool_use","id":"toolu_3","name":"memory","input":{"command":"create","path":"/memories/big.md","file_text":"0123456789012345678901234567890123456789"}}` +
			`],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`,
		`{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`,
	}
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		if i == 1 {
			// stale.md survived the first sweep; it ages during the run.
			if err := os.Chtimes(stale, longAgo, longAgo); err != nil {
				t.Error(err)
			}
		}
		if i > len(replies) {
			http.Error(w, "script exhausted", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, replies[i-1])
	}))
	defer srv.Close()
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)

	var stdout, stderr bytes.Buffer
	code := Main([]string{"agent", "--root", dir, "--overwrite", "--no-secret-filter", "--max-file-size", "30", "--expire-after", "720h", "go"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("stderr = %q, want 5 lines", stderr.String())
	}
	slices.Sort(lines[1:4]) // the calls of one turn report in any order
	want := []string{
		"[expire] deleted /memories/expired.md (not read for 720h0m0s)",
		"[memory] create /memories/big.md -> error: Error: The content of /memories/big.md would be 40 bytes, more than the maximum file size of 30 bytes; nothing was written. Keep memory files small: split the content into several files.",
		"[memory] create /memories/k.md -> ok",
		"[memory] create /memories/keep.md -> ok",
		"[expire] deleted /memories/stale.md (not read for 720h0m0s)",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	for name, want := range map[string]string{"keep.md": "new\n", "k.md": "AKIAIOSFODNN7EXAMPLE\n", "big.md": "", "expired.md": "", "stale.md": ""} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if want == "" {
			if !os.IsNotExist(err) {
				t.Errorf("%s: exists (%q, %v), want it gone", name, b, err)
			}
		} else if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
}

func TestAgentExpireAfterNeedsRoot(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "k")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"agent", "--data", t.TempDir(), "--store", "notes", "--expire-after", "24h", "hi"}, strings.NewReader(""), &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--expire-after") {
		t.Errorf("exit %d, stderr %q; want 2 and a message naming --expire-after", code, stderr.String())
	}
}
