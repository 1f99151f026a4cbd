package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
)

// lockedBuffer is a bytes.Buffer safe for the child process and us.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func syncCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb lockedBuffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// workspaceCtx carries the actor-less local principal of the default
// workspace, the one localStores creates stores in.
func workspaceCtx() context.Context {
	return trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: defaultWorkspace})
}

// openData opens the local database in data; the returned function closes it.
func openData(t testing.TB, data string) (*core.Service, func()) {
	t.Helper()
	svc, closeDB, err := openLocal(context.Background(), data, "", true)
	if err != nil {
		t.Fatal(err)
	}
	return svc, func() { closeDB() }
}

// checkSessionsEnded checks that data holds exactly one session, ended.
func checkSessionsEnded(t *testing.T, data string) {
	t.Helper()
	svc, closeDB := openData(t, data)
	defer closeDB()
	pg, err := svc.ListSessions(workspaceCtx(), trove.ListSessionsParams{})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].EndedAt == nil {
		t.Errorf("session not ended: %+v %v", pg, err)
	}
}

// localStores creates stores in a fresh local data dir (workspace of the
// actor-less local principal) with the given memories, and returns the data
// dir and the store IDs by name.
func localStores(t *testing.T, stores map[string]map[string]string) (string, map[string]string) {
	t.Helper()
	data := t.TempDir()
	svc, closeDB := openData(t, data)
	defer closeDB()
	ctx := workspaceCtx()
	ids := map[string]string{}
	for name, mems := range stores {
		st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: name, Description: "about " + name})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = st.ID
		for p, c := range mems {
			if _, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: c}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return data, ids
}

// storeContents reads a local store back, with the version actors by path.
func storeContents(t *testing.T, data, storeID string) (map[string]string, map[string][]trove.ActorType) {
	t.Helper()
	svc, closeDB := openData(t, data)
	defer closeDB()
	ctx := workspaceCtx()
	pg, err := svc.ListMemories(ctx, storeID, trove.ListMemoriesParams{Limit: 20, View: trove.ViewFull})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	actors := map[string][]trove.ActorType{}
	for _, it := range pg.Data {
		out[it.Memory.Path] = *it.Memory.Content
		vs, err := svc.ListVersions(ctx, storeID, trove.ListVersionsParams{MemoryID: it.Memory.ID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs.Data {
			if v.CreatedBy != nil {
				actors[it.Memory.Path] = append(actors[it.Memory.Path], v.CreatedBy.Type)
			}
		}
	}
	return out, actors
}

func TestSyncOnce(t *testing.T) {
	t.Parallel()
	data, ids := localStores(t, map[string]map[string]string{"Notes": {"/remote.md": "from the store\n"}})
	dir := filepath.Join(t.TempDir(), "notes")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "sub", "local.md"), []byte("from disk\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "blob.bin"), []byte{0xff, 0x00, 0xfe}, 0o644)
	state := filepath.Join(t.TempDir(), "state")

	code, _, stderr := syncCLI(t, "sync", "--data", data, "--store", "Notes", "--dir", dir, "--state", state, "--once")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "not synced: /blob.bin: file is not valid UTF-8") {
		t.Errorf("the refused binary file is not reported:\n%s", stderr)
	}
	got, _ := storeContents(t, data, ids["Notes"])
	want := map[string]string{"/remote.md": "from the store\n", "/sub/local.md": "from disk\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "remote.md")); string(b) != "from the store\n" {
		t.Errorf("remote.md = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "blob.bin")); !bytes.Equal(b, []byte{0xff, 0x00, 0xfe}) {
		t.Errorf("the binary file was changed: %q", b)
	}

	// Read-only: a local edit is not uploaded and is restored.
	os.WriteFile(filepath.Join(dir, "remote.md"), []byte("tampered\n"), 0o644)
	code, _, stderr = syncCLI(t, "sync", "--data", data, "--store", ids["Notes"]+":ro", "--dir", dir, "--state", state, "--once")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got, _ := storeContents(t, data, ids["Notes"]); got["/remote.md"] != "from the store\n" {
		t.Errorf("read-only sync uploaded: %q", got["/remote.md"])
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "remote.md")); string(b) != "from the store\n" {
		t.Errorf("read-only sync did not restore remote.md: %q", b)
	}
	if !strings.Contains(stderr, "restored: /remote.md") {
		t.Errorf("restore not reported:\n%s", stderr)
	}
}

func TestSyncUsage(t *testing.T) {
	for _, args := range [][]string{
		{"sync", "--dir", "x"},
		{"sync", "--store", "s"},
		{"sync", "--store", ":ro", "--dir", "x"},
	} {
		if code, _, _ := syncCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	data, _ := localStores(t, nil)
	code, _, stderr := syncCLI(t, "sync", "--data", data, "--store", "missing", "--dir", t.TempDir(), "--once")
	if code != 3 || !strings.Contains(stderr, `no store named "missing"`) {
		t.Errorf("unknown store: exit %d: %s", code, stderr)
	}
	dir := t.TempDir()
	data, _ = localStores(t, map[string]map[string]string{"N": nil})
	code, _, stderr = syncCLI(t, "sync", "--data", data, "--store", "N", "--dir", dir, "--state", filepath.Join(dir, "state"), "--once")
	if code != 1 || !strings.Contains(stderr, "must be outside the synced directory") {
		t.Errorf("state inside dir: exit %d: %s", code, stderr)
	}
}

// notifyBuffer signals every write, so a test can wait for output without
// sleeping.
type notifyBuffer struct {
	lockedBuffer
	ch chan struct{}
}

func (n *notifyBuffer) Write(p []byte) (int, error) {
	k, err := n.lockedBuffer.Write(p)
	select {
	case n.ch <- struct{}{}:
	default:
	}
	return k, err
}

func (n *notifyBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for !strings.Contains(n.String(), s) {
		select {
		case <-n.ch:
		case <-timeout:
			t.Fatalf("timed out waiting for %q in:\n%s", s, n.String())
		}
	}
}

// TestSyncRunsUntilStopped: without --once, sync picks up a new file from a
// file system event, and the final pass on stop pushes a deletion at once.
func TestSyncRunsUntilStopped(t *testing.T) {
	t.Parallel()
	data, ids := localStores(t, map[string]map[string]string{"Notes": {"/old.md": "old\n", "/keep.md": "keep\n"}})
	dir := filepath.Join(t.TempDir(), "notes")
	state := filepath.Join(t.TempDir(), "state")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errb := &notifyBuffer{ch: make(chan struct{}, 1)}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"sync", "--data", data, "--store", "Notes", "--dir", dir, "--state", state, "--interval", "1h"},
			strings.NewReader(""), io.Discard, errb)
	}()
	errb.waitFor(t, "sync: 2 download")
	if err := os.WriteFile(filepath.Join(dir, "new.md"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errb.waitFor(t, "sync: 1 create")
	if err := os.Remove(filepath.Join(dir, "old.md")); err != nil {
		t.Fatal(err)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	got, _ := storeContents(t, data, ids["Notes"])
	want := map[string]string{"/keep.md": "keep\n", "/new.md": "new\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("store after stop (-want +got):\n%s", diff)
	}
}
