package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/skipnote"
	"github.com/trovehq/trove/sessionrun"
)

// startMount runs `trove mount args…` in the background and returns once
// the stores are mounted (the command has printed one line per store), with
// a function that stops it (as SIGINT would) and returns its exit code and
// stderr.
func startMount(t *testing.T, stores int, args ...string) func() (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		code := run(ctx, append([]string{"mount"}, args...), strings.NewReader(""), pw, &errb)
		pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	for i := 0; i < stores; i++ {
		if !sc.Scan() {
			cancel()
			t.Fatalf("mount did not come up (exit %d):\n%s", <-done, errb.String())
		}
	}
	go io.Copy(io.Discard, pr)
	stopped := false
	stop := func() (int, string) {
		if stopped {
			return 0, ""
		}
		stopped = true
		cancel()
		return <-done, errb.String()
	}
	t.Cleanup(func() { stop() })
	return stop
}

func TestMountLocal(t *testing.T) {
	if why := sessionrun.FUSEAvailable(); why != "" {
		skipnote.Skip(t, "FUSE unavailable: "+why)
	}
	data, ids := localStores(t, map[string]map[string]string{
		"Notes":          {"/todo.md": "- buy tea\n"},
		"Team Standards": {"/style.md": "tabs\n"},
	})
	// A missing mount point is created.
	dir := filepath.Join(t.TempDir(), "missing", "mnt")
	stop := startMount(t, 2, "--data", data, "--store", "Notes", "--store", "Team Standards:ro", "--refresh", "100ms", dir)

	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	if diff := cmp.Diff([]string{"notes", "team-standards"}, got); diff != "" {
		t.Errorf("mount root (-want +got):\n%s", diff)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes", "todo.md")); err != nil || string(b) != "- buy tea\n" {
		t.Errorf("read todo.md: %q %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes", "learned.md"), []byte("learned\n"), 0o644); err != nil {
		// An EIO says nothing of its cause; the mount logged it.
		_, log := stop()
		t.Fatalf("%v\nthe mount's log:\n%s", err, log)
	}
	if err := os.WriteFile(filepath.Join(dir, "team-standards", "style.md"), []byte("spaces\n"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write in a read-only store: %v, want EROFS", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "other"), 0o755); !errors.Is(err, syscall.EROFS) {
		t.Errorf("mkdir in the mount root: %v, want EROFS", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes", "bad.md"), []byte("\xff"), 0o644); !errors.Is(err, syscall.EILSEQ) {
		t.Errorf("write of bytes that are not UTF-8: %v, want EILSEQ", err)
	}

	code, stderr := stop()
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if want := "trove: [Notes] /bad.md is not saved to the store: the file is not valid UTF-8 text (EILSEQ)"; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if names, err := os.ReadDir(dir); err != nil || len(names) != 0 {
		t.Errorf("after unmount %s holds %v (%v)", dir, names, err)
	}
	notes, actors := storeContents(t, data, ids["Notes"])
	if diff := cmp.Diff(map[string]string{"/todo.md": "- buy tea\n", "/learned.md": "learned\n"}, notes); diff != "" {
		t.Errorf("notes store (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]trove.ActorType{trove.ActorSession}, actors["/learned.md"]); diff != "" {
		t.Errorf("the write through the mount is not one session version: %s", diff)
	}
	std, _ := storeContents(t, data, ids["Team Standards"])
	if std["/style.md"] != "tabs\n" {
		t.Errorf("read-only store was written: %q", std["/style.md"])
	}
	checkSessionsEnded(t, data)
}

// serveData serves the local database in data over a real HTTP server until
// the test ends, and points the commands at it: TROVE_URL, and a new
// workspace key in TROVE_API_KEY. It returns the database's services.
func serveData(t *testing.T, data string) *core.Service {
	t.Helper()
	svc, closeDB := openData(t, data)
	t.Cleanup(closeDB)
	_, key, err := svc.CreateKey(context.Background(), defaultWorkspace, "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}))
	t.Cleanup(srv.Close)
	t.Setenv("TROVE_URL", srv.URL)
	t.Setenv("TROVE_API_KEY", key)
	return svc
}

// TestMountRemote mounts through a real HTTP server: the mount holds only
// the session token, and a conflict (another writer between open and close)
// reaches the writer as ESTALE with the bytes saved in a conflict copy.
func TestMountRemote(t *testing.T) {
	if why := sessionrun.FUSEAvailable(); why != "" {
		skipnote.Skip(t, "FUSE unavailable: "+why)
	}
	data, ids := localStores(t, map[string]map[string]string{"Notes": {"/todo.md": "- buy tea\n"}})
	svc := serveData(t, data)
	dir := t.TempDir()
	stop := startMount(t, 1, "--store", "Notes", dir)

	f, err := os.OpenFile(filepath.Join(dir, "notes", "todo.md"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(f); err != nil || string(b) != "- buy tea\n" {
		t.Fatalf("read: %q %v", b, err)
	}
	// Another writer, with the workspace key, changes the file meanwhile.
	wctx := workspaceCtx()
	pg, err := svc.ListMemories(wctx, ids["Notes"], trove.ListMemoriesParams{})
	if err != nil || len(pg.Data) != 1 {
		t.Fatalf("list: %v %v", pg, err)
	}
	theirs := "- buy coffee\n"
	if _, err := svc.UpdateMemory(wctx, ids["Notes"], pg.Data[0].Memory.ID, trove.UpdateMemoryParams{Content: &theirs}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("- buy milk\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, syscall.ESTALE) {
		t.Errorf("close after a lost race: %v, want ESTALE", err)
	}
	code, stderr := stop()
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	notes, actors := storeContents(t, data, ids["Notes"])
	var copyPath string
	for p := range notes {
		if strings.HasPrefix(p, "/todo.conflict-") && strings.HasSuffix(p, ".md") {
			copyPath = p
		}
	}
	if notes["/todo.md"] != theirs || copyPath == "" || notes[copyPath] != "- buy milk\n" || len(notes) != 2 {
		t.Errorf("want the other writer's todo.md and a conflict copy with the mount's bytes, got %v", notes)
	}
	if diff := cmp.Diff([]trove.ActorType{trove.ActorSession}, actors[copyPath]); diff != "" {
		t.Errorf("the conflict copy is not a session version: %s", diff)
	}
}

func TestMountUsage(t *testing.T) {
	aFile := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(aFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no store", []string{"mount", t.TempDir()}, "give at least one --store"},
		{"no dir", []string{"mount", "--store", "x"}, "usage: trove mount --store NAME_OR_ID[:ro]"},
		{"not a dir", []string{"mount", "--store", "x", aFile}, "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := syncCLI(t, tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want failure mentioning %q", code, stderr, tc.want)
			}
		})
	}
}

// TestMountReadOnly: with every store ":ro" the whole mount is read-only
// (the kernel refuses every write with EROFS), files read before are served
// by the kernel, and another writer's edit shows through the mount within
// the change feed's latency (here, with a 10 s margin and --refresh at an
// hour, only the feed can show it).
func TestMountReadOnly(t *testing.T) {
	if why := sessionrun.FUSEAvailable(); why != "" {
		skipnote.Skip(t, "FUSE unavailable: "+why)
	}
	data, ids := localStores(t, map[string]map[string]string{"Notes": {"/todo.md": "- buy tea\n"}})
	svc := serveData(t, data)
	dir := t.TempDir()
	stop := startMount(t, 1, "--store", "Notes:ro", "--refresh", "1h", dir)
	p := filepath.Join(dir, "notes", "todo.md")
	for range 2 {
		if b, err := os.ReadFile(p); err != nil || string(b) != "- buy tea\n" {
			t.Fatalf("read: %q %v", b, err)
		}
	}
	if err := os.WriteFile(p, []byte("- buy milk\n"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write: %v, want EROFS", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes", "new.md"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("create: %v, want EROFS", err)
	}
	wctx := workspaceCtx()
	pg, err := svc.ListMemories(wctx, ids["Notes"], trove.ListMemoriesParams{})
	if err != nil || len(pg.Data) != 1 {
		t.Fatalf("list: %v %v", pg, err)
	}
	theirs := "- buy coffee\n"
	if _, err := svc.UpdateMemory(wctx, ids["Notes"], pg.Data[0].Memory.ID, trove.UpdateMemoryParams{Content: &theirs}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(p)
		if err == nil && string(b) == theirs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the remote edit did not show within 10 s: %q %v", b, err)
		}
	}
	if code, stderr := stop(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	std, _ := storeContents(t, data, ids["Notes"])
	if std["/todo.md"] != theirs {
		t.Errorf("store: %q", std["/todo.md"])
	}
}
