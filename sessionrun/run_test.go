package sessionrun_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove/sessionrun"
)

// agentScript plays an agent on copies: it checks its environment, edits
// one file, writes a new one in a subdirectory, and exits with $CODE.
const agentScript = `
set -e
case "$TROVE_API_KEY" in trove_st_*) ;; *) echo "not a session token: $TROVE_API_KEY" >&2; exit 9;; esac
test "$TROVE_SESSION_ID" = "$WANT_SESSION"
printf '%s' "$TROVE_MEMORY_PROMPT" | grep -q '"Notes" at '"$TROVE_MEMORY_ROOT"'/notes/ (read_write)'
test "$(cat "$TROVE_MEMORY_ROOT/MEMORY_STORES.md")" = "$(printf '%s' "$TROVE_MEMORY_PROMPT")"
grep -q "buy tea" "$TROVE_MEMORY_ROOT/notes/todo.md"
# Files appear whole (written outside the store, then renamed), so that
# no sync pass sees them half written: one version each.
cp "$TROVE_MEMORY_ROOT/notes/todo.md" "$TROVE_MEMORY_ROOT/scratch.txt"
echo "- buy milk" >> "$TROVE_MEMORY_ROOT/scratch.txt"
mv "$TROVE_MEMORY_ROOT/scratch.txt" "$TROVE_MEMORY_ROOT/notes/todo.md"
mkdir "$TROVE_MEMORY_ROOT/notes/sub"
echo "learned something" > "$TROVE_MEMORY_ROOT/learned.tmp"
mv "$TROVE_MEMORY_ROOT/learned.tmp" "$TROVE_MEMORY_ROOT/notes/sub/learned.md"
echo "scratch" > "$TROVE_MEMORY_ROOT/scratch.txt"
echo ran
exit $CODE
`

// TestCopySession runs a scripted command on copies, end to end over a
// real core: whether the command succeeds or fails, its writes are session
// versions in the store once Run returns, the session ended, and the root
// and the copy state are gone.
func TestCopySession(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
	}{
		{"command succeeds", 0},
		{"command fails", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, map[string]map[string]string{"Notes": {"/todo.md": "- buy tea\n"}}, "Notes")
			cfg := f.config(sessionrun.CopyMounter{}, agentScript)
			cfg.Environ = append(cfg.Environ, "WANT_SESSION="+f.sess.ID, "CODE="+strconv.Itoa(tc.code))
			err := sessionrun.Run(context.Background(), cfg)
			if tc.code == 0 && err != nil {
				t.Fatalf("Run: %v\n%s", err, f.stderr)
			}
			if tc.code != 0 {
				var xe *sessionrun.ExitError
				if !errors.As(err, &xe) || xe.Code != tc.code {
					t.Fatalf("Run: %v, want an ExitError with code %d\n%s", err, tc.code, f.stderr)
				}
			}
			if f.stdout.String() != "ran\n" {
				t.Fatalf("the command did not run to the end (stdout %q):\n%s", f.stdout, f.stderr)
			}
			content, bySession, byOthers := f.contents(t, "Notes")
			want := map[string]string{"/todo.md": "- buy tea\n- buy milk\n", "/sub/learned.md": "learned something\n"}
			if diff := cmp.Diff(want, content); diff != "" {
				t.Errorf("store (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]int{"/todo.md": 1, "/sub/learned.md": 1}, bySession); diff != "" {
				t.Errorf("session versions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]int{"/todo.md": 1}, byOthers); diff != "" {
				t.Errorf("other versions (-want +got):\n%s", diff)
			}
			f.checkEnded(t)
			gone(t, f.root, f.state)
			if strings.Contains(f.stderr.String(), "kept") {
				t.Errorf("stderr speaks of keeping:\n%s", f.stderr)
			}
		})
	}
}

// TestCopySessionKeepsUnflushed: when the final flush leaves something
// only on disk, nothing is removed and stderr says where it is.
func TestCopySessionKeepsUnflushed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		// stdin, when set, is the command's standard input given the fixture.
		stdin func(t *testing.T, f *fixture) io.Reader
		kept  []string // relative to the root, still there with the store unchanged
		why   string   // in stderr
	}{
		{
			name:   "file the store refuses",
			script: `printf '\377' > "$TROVE_MEMORY_ROOT/notes/bad.md"`,
			kept:   []string{"notes/bad.md"},
			why:    "/bad.md",
		},
		{
			// The store is archived while the command runs, before it
			// writes: no upload can succeed.
			name:   "store archived before the flush",
			script: `read go; echo "new" > "$TROVE_MEMORY_ROOT/notes/new.md"`,
			stdin: func(t *testing.T, f *fixture) io.Reader {
				return &onRead{do: func() {
					if _, err := f.svc.ArchiveStore(workspaceCtx(), f.ids["Notes"]); err != nil {
						t.Error(err)
					}
				}, then: strings.NewReader("go\n")}
			},
			kept: []string{"notes/new.md"},
			why:  "/new.md",
		},
		{
			name:   "read-only store tampered with",
			script: `echo "tampered" > "$TROVE_MEMORY_ROOT/notes/todo.md"`,
			why:    "quarantine",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			attach := "Notes"
			if tc.name == "read-only store tampered with" {
				attach = "Notes:ro"
			}
			f := newFixture(t, map[string]map[string]string{"Notes": {"/todo.md": "- buy tea\n"}}, attach)
			cfg := f.config(sessionrun.CopyMounter{}, tc.script)
			if tc.stdin != nil {
				cfg.Stdin = tc.stdin(t, f)
			}
			if err := sessionrun.Run(context.Background(), cfg); err != nil {
				t.Fatalf("Run: %v\n%s", err, f.stderr)
			}
			content, _, _ := f.contents(t, "Notes")
			if diff := cmp.Diff(map[string]string{"/todo.md": "- buy tea\n"}, content); diff != "" {
				t.Errorf("store (-want +got):\n%s", diff)
			}
			f.checkEnded(t)
			there(t, f.root, f.state, filepath.Join(f.root, sessionrun.NoteName))
			for _, k := range tc.kept {
				there(t, filepath.Join(f.root, k))
			}
			stderr := f.stderr.String()
			for _, want := range []string{"kept " + f.root + " and the copy state in " + f.state, tc.why, "trove sync --store " + f.ids["Notes"]} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
}

// onRead runs do at the first Read, then reads from then.
type onRead struct {
	do   func()
	then io.Reader
	done bool
}

func (r *onRead) Read(p []byte) (int, error) {
	if !r.done {
		r.done = true
		r.do()
	}
	return r.then.Read(p)
}

// TestExistingRoot: in a root that existed, the session removes only what
// it created.
func TestExistingRoot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]map[string]string{"Notes": {"/todo.md": "- buy tea\n"}, "Empty": nil}, "Notes", "Empty")
	for _, d := range []string{f.root, f.state, filepath.Join(f.root, "empty")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(f.root, "mine.txt"), filepath.Join(f.state, "mine.txt")} {
		if err := os.WriteFile(p, []byte("not the session's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := f.config(sessionrun.CopyMounter{}, `echo "new" > "$TROVE_MEMORY_ROOT/empty/new.md"`)
	if err := sessionrun.Run(context.Background(), cfg); err != nil {
		t.Fatalf("Run: %v\n%s", err, f.stderr)
	}
	if content, _, _ := f.contents(t, "Empty"); content["/new.md"] != "new\n" {
		t.Errorf("Empty store = %v", content)
	}
	there(t, filepath.Join(f.root, "mine.txt"), filepath.Join(f.state, "mine.txt"))
	gone(t, filepath.Join(f.root, "notes"), filepath.Join(f.root, sessionrun.NoteName),
		filepath.Join(f.state, f.ids["Notes"]), filepath.Join(f.state, f.ids["Empty"]))
	if ents, err := os.ReadDir(filepath.Join(f.root, "empty")); err != nil || len(ents) != 0 {
		t.Errorf("the directory that existed empty holds %v (%v), want it empty", ents, err)
	}
}

// TestMountFails: a store directory that is not empty stops the session
// before the command runs; the session ends and nothing is removed but
// what the session created.
func TestMountFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]map[string]string{"Notes": {"/todo.md": "- buy tea\n"}, "Other": nil}, "Notes", "Other")
	busy := filepath.Join(f.root, "other", "there.md")
	if err := os.MkdirAll(filepath.Dir(busy), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(busy, []byte("there\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := sessionrun.Run(context.Background(), f.config(sessionrun.CopyMounter{}, "echo ran"))
	if err == nil || !strings.Contains(err.Error(), "already exists and is not empty") {
		t.Fatalf("Run: %v, want the not-empty error", err)
	}
	if f.stdout.String() != "" {
		t.Errorf("the command ran: %q", f.stdout)
	}
	f.checkEnded(t)
	there(t, busy)
	gone(t, filepath.Join(f.root, "notes"), f.state)
}

func TestMissingCommand(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]map[string]string{"Notes": nil}, "Notes")
	cfg := f.config(sessionrun.CopyMounter{}, "")
	cfg.Command = []string{"/nonexistent/agent"}
	err := sessionrun.Run(context.Background(), cfg)
	var xe *sessionrun.ExitError
	if !errors.As(err, &xe) || xe.Code != 127 || !strings.Contains(err.Error(), "cannot run /nonexistent/agent") {
		t.Fatalf("Run: %v, want ExitError 127", err)
	}
	f.checkEnded(t)
	gone(t, f.root, f.state)
}

func TestEnv(t *testing.T) {
	got := sessionrun.Env([]string{"PATH=/bin", "TROVE_API_KEY=trove_sk_secret", "TROVE_MEMORY_ROOT=/old", "HOME=/h"},
		"trove_st_tok", "sesn_1", "/mem", "# Memory\n")
	want := []string{"PATH=/bin", "HOME=/h", "TROVE_API_KEY=trove_st_tok", "TROVE_SESSION_ID=sesn_1", "TROVE_MEMORY_ROOT=/mem", "TROVE_MEMORY_PROMPT=# Memory\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
}

// TestStopped: when ctx ends while the command runs, the command gets
// SIGTERM, and what it writes before exiting still reaches the store.
func TestStopped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]map[string]string{"Notes": nil}, "Notes")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := f.config(sessionrun.CopyMounter{}, `
trap 'echo "last words" > "$TROVE_MEMORY_ROOT/last.tmp"; mv "$TROVE_MEMORY_ROOT/last.tmp" "$TROVE_MEMORY_ROOT/notes/last.md"; exit 0' TERM
echo ready
while :; do sleep 1 & wait $!; done
`)
	// The command's first output means its trap is set: stop it then.
	cfg.Stdout = writerFunc(func(p []byte) (int, error) { cancel(); return len(p), nil })
	err := sessionrun.Run(ctx, cfg)
	var xe *sessionrun.ExitError
	if !errors.As(err, &xe) || xe.Code != 143 || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want ExitError 143 wrapping context.Canceled\n%s", err, f.stderr)
	}
	content, bySession, _ := f.contents(t, "Notes")
	if diff := cmp.Diff(map[string]string{"/last.md": "last words\n"}, content); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	if bySession["/last.md"] != 1 {
		t.Errorf("session versions: %v", bySession)
	}
	f.checkEnded(t)
	gone(t, f.root, f.state)
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }
