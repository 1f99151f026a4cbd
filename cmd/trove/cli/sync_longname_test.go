package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSyncOnceReportsUnrepresentablePaths (F2): a memory with a 300-byte
// name cannot be a local file; `sync --once` says so on stderr and in
// SYNC_NOTICES.md and exits 1, while syncing everything else.
func TestSyncOnceReportsUnrepresentablePaths(t *testing.T) {
	t.Parallel()
	long := "/" + strings.Repeat("a", 300) + ".md"
	data, ids := localStores(t, map[string]map[string]string{"Notes": {"/ok.md": "fine\n", long: "too long a name\n"}})
	dir := filepath.Join(t.TempDir(), "notes")
	state := filepath.Join(t.TempDir(), "state")

	code, _, stderr := syncCLI(t, "sync", "--data", data, "--store", "Notes", "--dir", dir, "--state", state, "--once")
	if code != 1 {
		t.Errorf("exit %d, want 1:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "not synced here: "+long+": ") || !strings.Contains(stderr, "1 store paths cannot be local files") {
		t.Errorf("stderr does not report the path:\n%s", stderr)
	}
	notices, err := os.ReadFile(filepath.Join(state, "SYNC_NOTICES.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(notices), "- [Notes] "+long+" is in the store but not synced here: ") {
		t.Errorf("SYNC_NOTICES.md:\n%s", notices)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ok.md")); err != nil || string(b) != "fine\n" {
		t.Errorf("ok.md = %q, %v", b, err)
	}
	got, _ := storeContents(t, data, ids["Notes"])
	if diff := cmp.Diff(map[string]string{"/ok.md": "fine\n", long: "too long a name\n"}, got); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	// Every run tells it again.
	if code, _, stderr = syncCLI(t, "sync", "--data", data, "--store", "Notes", "--dir", dir, "--state", state, "--once"); code != 1 {
		t.Errorf("second run: exit %d, want 1:\n%s", code, stderr)
	}
}
