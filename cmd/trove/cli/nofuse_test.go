package cli

import (
	"path/filepath"
	"testing"
)

// TestWithoutFUSE stands for a machine without FUSE (Windows, or Linux
// without /dev/fuse): mount fails at once with exit 1 and points to sync;
// session run --mount fuse says the same; --mount auto falls back to the
// copy engine. Not parallel: it replaces fuseAvailable.
func TestWithoutFUSE(t *testing.T) {
	old := fuseAvailable
	fuseAvailable = func() string { return "trove has no FUSE mounts on plan9" }
	t.Cleanup(func() { fuseAvailable = old })
	data, ids := localStores(t, map[string]map[string]string{"Notes": {"/todo.md": "- buy tea\n"}})

	t.Run("mount", func(t *testing.T) {
		dir := t.TempDir()
		code, stdout, stderr := runTrove(t, "mount", "--data", data, "--store", "Notes", dir)
		want := "trove: mount: FUSE is unavailable here (trove has no FUSE mounts on plan9); use trove sync --store NAME --dir " + dir + " to keep a directory in sync with a store instead\n"
		if code != 1 || stdout != "" || stderr != want {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, stderr %q", code, stdout, stderr, want)
		}
	})
	t.Run("session run --mount fuse", func(t *testing.T) {
		code, _, stderr := runTrove(t, "session", "run", "--data", data, "--store", "Notes", "--mount", "fuse", "--", "true")
		want := "trove: sessions run: --mount fuse: FUSE is unavailable here (trove has no FUSE mounts on plan9); use --mount copy\n"
		if code != 1 || stderr != want {
			t.Errorf("exit %d, stderr %q; want exit 1, stderr %q", code, stderr, want)
		}
	})
	t.Run("session run --mount auto", func(t *testing.T) {
		t.Setenv("XDG_STATE_HOME", t.TempDir())
		root := filepath.Join(t.TempDir(), "mem")
		// A copy is on the root's device; a FUSE mount would not be.
		script := `set -e
[ "$(stat -c %d "$TROVE_MEMORY_ROOT")" = "$(stat -c %d "$TROVE_MEMORY_ROOT/notes")" ] || { echo "notes is a mount" >&2; exit 5; }
echo learned > "$TROVE_MEMORY_ROOT/notes/learned.md"`
		code, _, stderr := runTrove(t, "session", "run", "--data", data, "--store", "Notes", "--root", root, "--mount", "auto", "--", "sh", "-c", script)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		if notes, _ := storeContents(t, data, ids["Notes"]); notes["/learned.md"] != "learned\n" {
			t.Errorf("the copy engine did not save the write: %v", notes)
		}
	})
}
