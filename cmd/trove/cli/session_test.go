package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/skipnote"
	"github.com/trovehq/trove/sessionrun"
)

// agentScript plays an agent: it checks its environment, reads the note,
// edits the read_write store, tampers with the read_only one, and exits 3.
const agentScript = `
set -e
case "$TROVE_API_KEY" in trove_st_*) ;; *) echo "not a session token: $TROVE_API_KEY" >&2; exit 9;; esac
test -n "$TROVE_SESSION_ID"
grep -q "read_only" "$TROVE_MEMORY_ROOT/MEMORY_STORES.md"
printf '%s' "$TROVE_MEMORY_PROMPT" | grep -q "Check notes first"
cat "$TROVE_MEMORY_ROOT/notes/todo.md" > /dev/null
echo "learned something" > "$TROVE_MEMORY_ROOT/notes/learned.md"
echo "tampered" > "$TROVE_MEMORY_ROOT/team-standards/style.md"
echo "$TROVE_MEMORY_ROOT" > "$OUT"
exit 3
`

// sessionStores creates the stores the agent scripts expect ("Notes" with
// /todo.md, "Team Standards" with /style.md) and returns the data dir, the
// store IDs by name, a --root to use, and the file $OUT names for the
// script's last word. State goes to a fresh XDG_STATE_HOME.
func sessionStores(t *testing.T) (data string, ids map[string]string, root, out string) {
	t.Helper()
	data, ids = localStores(t, map[string]map[string]string{
		"Notes":          {"/todo.md": "- buy tea\n"},
		"Team Standards": {"/style.md": "tabs\n"},
	})
	root = filepath.Join(t.TempDir(), "mem")
	out = filepath.Join(t.TempDir(), "out")
	t.Setenv("OUT", out)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	return data, ids, root, out
}

func TestSessionRunLocal(t *testing.T) {
	data, ids, root, out := sessionStores(t)
	t.Setenv("TROVE_API_KEY", "trove_sk_workspace_key_must_not_leak")
	code, _, stderr := syncCLI(t, "session", "run", "--data", data,
		"--store", "Notes", "--instructions", "Check notes first.",
		"--store", "Team Standards:ro",
		"--root", root, "--mount", "copy", "--", "sh", "-c", agentScript)
	if code != 3 {
		t.Fatalf("exit %d, want the command's 3:\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(out); strings.TrimSpace(string(b)) != root {
		t.Fatalf("the command did not run to the end (TROVE_MEMORY_ROOT %q):\n%s", b, stderr)
	}
	notes, actors := storeContents(t, data, ids["Notes"])
	want := map[string]string{"/todo.md": "- buy tea\n", "/learned.md": "learned something\n"}
	if diff := cmp.Diff(want, notes); diff != "" {
		t.Errorf("notes store (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]trove.ActorType{trove.ActorSession}, actors["/learned.md"]); diff != "" {
		t.Errorf("the agent's write is not a session version: %s", diff)
	}
	std, _ := storeContents(t, data, ids["Team Standards"])
	if std["/style.md"] != "tabs\n" {
		t.Errorf("read-only store was written: %q", std["/style.md"])
	}
	if b, _ := os.ReadFile(filepath.Join(root, "team-standards", "style.md")); string(b) != "tabs\n" {
		t.Errorf("read-only file not restored: %q", b)
	}
	notices, _ := os.ReadFile(filepath.Join(root, "SYNC_NOTICES.md"))
	if !strings.Contains(string(notices), "- [Team Standards] /style.md: read-only store") {
		t.Errorf("the restore is not in the notices:\n%s", notices)
	}
	// The tampered bytes are in the quarantine of the copy state: the
	// session keeps the root and the state, and says so.
	if want := "kept " + root + " and the copy state in "; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	note, err := os.ReadFile(filepath.Join(root, "MEMORY_STORES.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`- "Notes" at ` + filepath.Join(root, "notes") + `/ (read_write)`,
		`  Description: about Notes`,
		`  Instructions: Check notes first.`,
		`- "Team Standards" at ` + filepath.Join(root, "team-standards") + `/ (read_only)`,
	} {
		if !strings.Contains(string(note), s+"\n") {
			t.Errorf("note lacks %q:\n%s", s, note)
		}
	}
	checkSessionsEnded(t, data)
}

// TestSessionRunRemote runs the same agent against a real HTTP server: the
// engine uses the session token over the wire.
func TestSessionRunRemote(t *testing.T) {
	data, ids, root, _ := sessionStores(t)
	serveData(t, data)
	code, _, stderr := syncCLI(t, "session", "run",
		"--store", "Notes", "--instructions", "Check notes first.",
		"--store", ids["Team Standards"]+":ro",
		"--root", root, "--mount", "copy", "--", "sh", "-c", agentScript)
	if code != 3 {
		t.Fatalf("exit %d, want 3:\n%s", code, stderr)
	}
	notes, actors := storeContents(t, data, ids["Notes"])
	if notes["/learned.md"] != "learned something\n" {
		t.Errorf("notes = %v", notes)
	}
	if diff := cmp.Diff([]trove.ActorType{trove.ActorSession}, actors["/learned.md"]); diff != "" {
		t.Errorf("the agent's write is not a session version: %s", diff)
	}
	if std, _ := storeContents(t, data, ids["Team Standards"]); std["/style.md"] != "tabs\n" {
		t.Errorf("read-only store was written: %q", std["/style.md"])
	}
}

// fuseAgentScript plays an agent on live mounts: its write is a version at
// close, and the read-only mount refuses writes outright.
const fuseAgentScript = `
set -e
case "$TROVE_API_KEY" in trove_st_*) ;; *) echo "not a session token" >&2; exit 9;; esac
grep -q "buy tea" "$TROVE_MEMORY_ROOT/notes/todo.md"
echo "learned something" > "$TROVE_MEMORY_ROOT/notes/learned.md"
if echo "tampered" > "$TROVE_MEMORY_ROOT/team-standards/style.md"; then echo "read-only mount accepted a write" >&2; exit 8; fi
printf '\377' > "$TROVE_MEMORY_ROOT/notes/bad.md"
if sync "$TROVE_MEMORY_ROOT/notes/bad.md" 2>/dev/null; then echo "sync of a refused file succeeded" >&2; exit 7; fi
if ls "$TROVE_MEMORY_ROOT/notes" | grep -q bad; then echo "a refused file is listed" >&2; exit 6; fi
printf '%s' "$TROVE_MEMORY_PROMPT" | grep -q 'run .sync FILE. after writing'
test -f "$TROVE_MEMORY_ROOT/MEMORY_STORES.md"
cp "$TROVE_MEMORY_ROOT/SYNC_NOTICES.md" "$OUT.notices"
echo done > "$OUT"
exit 3
`

// TestSessionRunFuse runs a session on live FUSE mounts (the default where
// FUSE works, as on CI).
func TestSessionRunFuse(t *testing.T) {
	if why := sessionrun.FUSEAvailable(); why != "" {
		skipnote.Skip(t, "FUSE unavailable: "+why)
	}
	data, ids, root, out := sessionStores(t)
	code, _, stderr := syncCLI(t, "session", "run", "--data", data,
		"--store", "Notes", "--store", "Team Standards:ro",
		"--root", root, "--mount", "auto", "--", "sh", "-c", fuseAgentScript)
	if code != 3 {
		t.Fatalf("exit %d, want the command's 3:\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(out); strings.TrimSpace(string(b)) != "done" {
		t.Fatalf("the command did not run to the end:\n%s", stderr)
	}
	notes, actors := storeContents(t, data, ids["Notes"])
	want := map[string]string{"/todo.md": "- buy tea\n", "/learned.md": "learned something\n"}
	if diff := cmp.Diff(want, notes); diff != "" {
		t.Errorf("notes store (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]trove.ActorType{trove.ActorSession}, actors["/learned.md"]); diff != "" {
		t.Errorf("the agent's write is not one session version: %s", diff)
	}
	if std, _ := storeContents(t, data, ids["Team Standards"]); std["/style.md"] != "tabs\n" {
		t.Errorf("read-only store was written: %q", std["/style.md"])
	}
	// Everything reached the store (the refused file was refused at its
	// close): the session removed its root.
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Errorf("the session root is still there: %v\n%s", err, stderr)
	}
	notices, _ := os.ReadFile(out + ".notices")
	if want := "- [Notes] /bad.md is not saved to the store: the file is not valid UTF-8 text (EILSEQ); the store is unchanged\n"; string(notices) != want {
		t.Errorf("notices:\n%s\nwant:\n%s", notices, want)
	}
}

func TestSessionRunBadMount(t *testing.T) {
	t.Parallel()
	code, _, stderr := syncCLI(t, "session", "run", "--store", "x", "--mount", "nfs", "--", "true")
	if code != 2 || !strings.Contains(stderr, "--mount must be auto, fuse or copy") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestSessionRunUsage(t *testing.T) {
	data, _ := localStores(t, map[string]map[string]string{"Notes": nil})
	for _, args := range [][]string{
		{"session", "run", "--data", data, "--", "true"},
		{"session", "run", "--data", data, "--store", "Notes", "true"},
	} {
		if code, _, _ := syncCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	code, _, stderr := syncCLI(t, "session", "run", "--data", data, "--store", "Notes", "--root", t.TempDir(), "--", "/nonexistent/agent")
	if code != 127 || !strings.Contains(stderr, "cannot run /nonexistent/agent") {
		t.Errorf("missing command: exit %d: %s", code, stderr)
	}
}
