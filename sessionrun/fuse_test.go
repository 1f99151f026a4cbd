package sessionrun_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/skipnote"
	"github.com/trovehq/trove/sessionrun"
)

// fuseScript plays an agent on live mounts: its write is a version at
// close, the read-only mount refuses writes, a refused file is noted.
const fuseScript = `
set -e
case "$TROVE_API_KEY" in trove_st_*) ;; *) echo "not a session token" >&2; exit 9;; esac
grep -q "buy tea" "$TROVE_MEMORY_ROOT/notes/todo.md"
echo "learned something" > "$TROVE_MEMORY_ROOT/notes/learned.md"
if echo "tampered" > "$TROVE_MEMORY_ROOT/team-standards/style.md"; then echo "read-only mount accepted a write" >&2; exit 8; fi
printf '\377' > "$TROVE_MEMORY_ROOT/notes/bad.md"
if sync "$TROVE_MEMORY_ROOT/notes/bad.md" 2>/dev/null; then echo "sync of a refused file succeeded" >&2; exit 7; fi
printf '%s' "$TROVE_MEMORY_PROMPT" | grep -q 'run .sync FILE. after writing'
cat "$TROVE_MEMORY_ROOT/SYNC_NOTICES.md"
exit 3
`

// TestFUSESession runs a session on live FUSE mounts over a real core: the
// writes are session versions, the read-only store is untouched, and once
// the command failed the mounts are gone and the root removed.
func TestFUSESession(t *testing.T) {
	if why := sessionrun.FUSEAvailable(); why != "" {
		skipnote.Skip(t, "FUSE unavailable: "+why)
	}
	t.Parallel()
	f := newFixture(t, map[string]map[string]string{
		"Notes":          {"/todo.md": "- buy tea\n"},
		"Team Standards": {"/style.md": "tabs\n"},
	}, "Notes", "Team Standards:ro")
	err := sessionrun.Run(context.Background(), f.config(sessionrun.FUSEMounter{}, fuseScript))
	if xe, ok := err.(*sessionrun.ExitError); !ok || xe.Code != 3 {
		t.Fatalf("Run: %v, want the command's exit 3\n%s", err, f.stderr)
	}
	if want := "- [Notes] /bad.md is not saved to the store: the file is not valid UTF-8 text (EILSEQ); the store is unchanged\n"; f.stdout.String() != want {
		t.Errorf("notices the agent saw:\n%s\nwant:\n%s", f.stdout, want)
	}
	content, bySession, _ := f.contents(t, "Notes")
	if diff := cmp.Diff(map[string]string{"/todo.md": "- buy tea\n", "/learned.md": "learned something\n"}, content); diff != "" {
		t.Errorf("notes store (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"/learned.md": 1}, bySession); diff != "" {
		t.Errorf("session versions (-want +got):\n%s", diff)
	}
	if std, _, _ := f.contents(t, "Team Standards"); std["/style.md"] != "tabs\n" {
		t.Errorf("read-only store was written: %q", std["/style.md"])
	}
	f.checkEnded(t)
	gone(t, f.root)
}

// TestFUSEMounter checks the FUSE mounter against the Mounter contract: the
// store is readable at spec.Dir once Mount returns, writes are session
// versions, and Run unmounts when its context ends, uploading the temporary
// files never renamed.
func TestFUSEMounter(t *testing.T) {
	if why := sessionrun.FUSEAvailable(); why != "" {
		skipnote.Skip(t, "FUSE unavailable: "+why)
	}
	t.Parallel()
	f := newFixture(t, map[string]map[string]string{"Notes": {"/todo.md": "- buy tea\n"}}, "Notes")
	ctx := trove.WithPrincipal(context.Background(), f.p)
	dir := filepath.Join(t.TempDir(), "notes")
	m, err := sessionrun.FUSEMounter{}.Mount(ctx, sessionrun.MountSpec{Store: f.sess.Stores[0], Dir: dir, SessionID: f.sess.ID, Services: f.svc})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if b, err := os.ReadFile(filepath.Join(dir, "todo.md")); err != nil || string(b) != "- buy tea\n" {
		t.Fatalf("read: %q %v", b, err)
	}
	for name, content := range map[string]string{"learned.md": "learned\n", "scratch.tmp": "scratch\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Run(runCtx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if names, err := os.ReadDir(dir); err != nil || len(names) != 0 {
		t.Errorf("after Run %s holds %v (%v)", dir, names, err)
	}
	content, bySession, _ := f.contents(t, "Notes")
	want := map[string]string{"/todo.md": "- buy tea\n", "/learned.md": "learned\n", "/scratch.tmp": "scratch\n"}
	if diff := cmp.Diff(want, content); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"/learned.md": 1, "/scratch.tmp": 1}, bySession); diff != "" {
		t.Errorf("session versions (-want +got):\n%s", diff)
	}
}

// TestNote: the note tells an agent on live mounts what the kernel cannot
// (close errors its shell ignores), and keeps the copy engine's text.
func TestNote(t *testing.T) {
	stores := []trove.SessionStore{{Name: "Notes", Access: trove.AccessReadWrite, Description: "about\nnotes", Instructions: "Check first."}}
	dirs := []string{"/mem/notes"}
	for _, c := range []struct {
		live      bool
		want, not []string
	}{
		{live: true, want: []string{
			"- \"Notes\" at /mem/notes/ (read_write)\n  Description: about\n    notes\n  Instructions: Check first.\n",
			"Files must be UTF-8 text of at most 100 kB (102400 bytes)",
			"fails at close or fsync and leaves\nthe store unchanged",
			"check the result of close, or run `sync FILE` after writing",
			"Refusals are listed in /mem/SYNC_NOTICES.md.\n",
			"Read-only stores refuse\nwrites (EROFS).",
		}, not: []string{"restored", "synced"}},
		{live: false, want: []string{
			"Read-only stores are restored if changed. Files must be UTF-8 text up to 100 KB.\n",
			"Such events are listed in /mem/SYNC_NOTICES.md.\n",
		}, not: []string{"sync FILE", "EFBIG"}},
	} {
		note := sessionrun.Note(stores, dirs, trove.DefaultLimits().MaxContentBytes, c.live)
		if !strings.HasPrefix(note, "# Memory\n") {
			t.Errorf("live=%v: note does not start with its title:\n%s", c.live, note)
		}
		for _, w := range c.want {
			if !strings.Contains(note, w) {
				t.Errorf("live=%v: note lacks %q:\n%s", c.live, w, note)
			}
		}
		for _, w := range c.not {
			if strings.Contains(note, w) {
				t.Errorf("live=%v: note has %q:\n%s", c.live, w, note)
			}
		}
	}
}
