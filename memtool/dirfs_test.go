//go:build unix

package memtool_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove/memtool"
)

func exec(t *testing.T, tool *memtool.Tool, in string) memtool.Result {
	t.Helper()
	return tool.Execute(context.Background(), []byte(in))
}

const symlinkMsg = " is or goes through a symbolic link, which the memory tool does not follow. Use the path of the target instead."

// TestDirFSSymlinksAreOpaque: no command follows a link, in-root or not,
// as a final component or as a directory; delete and rename act on the
// link itself; listings omit links.
func TestDirFSSymlinksAreOpaque(t *testing.T) { forEachDirFS(t, testDirFSSymlinksAreOpaque) }

func testDirFSSymlinksAreOpaque(t *testing.T, newDirFS func(t *testing.T) *memtool.DirFS) {
	d := newDirFS(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := d.Dir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "sub"), 0o700))
	must(os.WriteFile(filepath.Join(root, "sub", "f.txt"), []byte("in sub"), 0o600))
	must(os.Symlink(secret, filepath.Join(root, "out")))
	must(os.Symlink(outside, filepath.Join(root, "outdir")))
	must(os.Symlink("sub", filepath.Join(root, "alias")))
	must(os.Symlink("nowhere", filepath.Join(root, "dangling")))

	tool := memtool.New(d, memtool.Options{})
	tests := []struct{ in, want string }{
		{`{"command":"view","path":"/memories/out"}`, "Error: The path /memories/out" + symlinkMsg},
		{`{"command":"view","path":"/memories/outdir/secret.txt"}`, "Error: The path /memories/outdir/secret.txt" + symlinkMsg},
		{`{"command":"view","path":"/memories/outdir"}`, "Error: The path /memories/outdir" + symlinkMsg},
		{`{"command":"view","path":"/memories/alias/f.txt"}`, "Error: The path /memories/alias/f.txt" + symlinkMsg},
		{`{"command":"view","path":"/memories/dangling"}`, "Error: The path /memories/dangling" + symlinkMsg},
		{`{"command":"create","path":"/memories/outdir/new.txt","file_text":"x"}`, "Error: The path /memories/outdir/new.txt" + symlinkMsg},
		{`{"command":"create","path":"/memories/dangling","file_text":"x"}`, "Error: File /memories/dangling already exists"},
		{`{"command":"str_replace","path":"/memories/out","old_str":"top","new_str":"no"}`, "Error: The path /memories/out" + symlinkMsg},
		{`{"command":"insert","path":"/memories/out","insert_line":0,"insert_text":"x"}`, "Error: The path /memories/out" + symlinkMsg},
		{`{"command":"delete","path":"/memories/outdir/secret.txt"}`, "Error: The path /memories/outdir/secret.txt" + symlinkMsg},
		{`{"command":"rename","old_path":"/memories/outdir/secret.txt","new_path":"/memories/stolen"}`, "Error: The path /memories/outdir/secret.txt" + symlinkMsg},
		{`{"command":"rename","old_path":"/memories/sub/f.txt","new_path":"/memories/outdir/f.txt"}`, "Error: The path /memories/outdir/f.txt" + symlinkMsg},
		{`{"command":"view","path":"/memories"}`, "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n4.0K\t/memories\n4.0K\t/memories/sub/\n6B\t/memories/sub/f.txt"},
		{`{"command":"rename","old_path":"/memories/out","new_path":"/memories/moved-link"}`, "Successfully renamed /memories/out to /memories/moved-link"},
		{`{"command":"delete","path":"/memories/moved-link"}`, "Successfully deleted /memories/moved-link"},
		{`{"command":"delete","path":"/memories/outdir"}`, "Successfully deleted /memories/outdir"},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, exec(t, tool, tc.in).String()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "top secret" {
		t.Errorf("outside file = %q, %v; want it untouched", b, err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("outside dir has %d entries, want 1", len(entries))
	}
}

func TestDirFSRecreatesRemovedRoot(t *testing.T) { forEachDirFS(t, testDirFSRecreatesRemovedRoot) }

func testDirFSRecreatesRemovedRoot(t *testing.T, newDirFS func(t *testing.T) *memtool.DirFS) {
	d := newDirFS(t)
	tool := memtool.New(d, memtool.Options{})
	if r := exec(t, tool, `{"command":"create","path":"/memories/a.txt","file_text":"a"}`); r.IsError {
		t.Fatal(r.String())
	}
	if err := os.RemoveAll(d.Dir()); err != nil {
		t.Fatal(err)
	}
	want := "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n4.0K\t/memories"
	if diff := cmp.Diff(want, exec(t, tool, `{"command":"view","path":"/memories"}`).String()); diff != "" {
		t.Errorf("view after removal (-want +got):\n%s", diff)
	}
	if r := exec(t, tool, `{"command":"create","path":"/memories/b/c.txt","file_text":"c"}`); r.IsError {
		t.Fatalf("create after removal: %s", r.String())
	}
	if b, err := os.ReadFile(filepath.Join(d.Dir(), "b", "c.txt")); err != nil || string(b) != "c" {
		t.Errorf("file on disk = %q, %v", b, err)
	}
}

func TestDirFSModesAndNoTempFiles(t *testing.T) { forEachDirFS(t, testDirFSModesAndNoTempFiles) }

func testDirFSModesAndNoTempFiles(t *testing.T, newDirFS func(t *testing.T) *memtool.DirFS) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	d := newDirFS(t)
	tool := memtool.New(d, memtool.Options{})
	for _, in := range []string{
		`{"command":"create","path":"/memories/x/y/f.txt","file_text":"a\nb"}`,
		`{"command":"str_replace","path":"/memories/x/y/f.txt","old_str":"a","new_str":"A"}`,
		`{"command":"insert","path":"/memories/x/y/f.txt","insert_line":2,"insert_text":"c"}`,
		`{"command":"rename","old_path":"/memories/x/y/f.txt","new_path":"/memories/z/g.txt"}`,
	} {
		if r := exec(t, tool, in); r.IsError {
			t.Fatalf("%s: %s", in, r.String())
		}
	}
	modes := map[string]os.FileMode{}
	err := filepath.Walk(d.Dir(), func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(d.Dir(), p)
		if strings.Contains(rel, ".trove-tmp-") {
			t.Errorf("temporary file left behind: %s", rel)
		}
		if rel != "." {
			modes[rel] = fi.Mode().Perm()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{"x": 0o700, "x/y": 0o700, "z": 0o700, "z/g.txt": 0o600}
	if diff := cmp.Diff(want, modes); diff != "" {
		t.Errorf("modes (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(filepath.Join(d.Dir(), "z", "g.txt")); string(b) != "A\nb\nc" {
		t.Errorf("content = %q", b)
	}
}

func TestDirFSSpecialFiles(t *testing.T) { forEachDirFS(t, testDirFSSpecialFiles) }

func testDirFSSpecialFiles(t *testing.T, newDirFS func(t *testing.T) *memtool.DirFS) {
	d := newDirFS(t)
	if err := syscall.Mkfifo(filepath.Join(d.Dir(), "fifo"), 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	if err := os.WriteFile(filepath.Join(d.Dir(), "bad\nname"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tool := memtool.New(d, memtool.Options{})
	tests := []struct{ in, want string }{
		{`{"command":"view","path":"/memories/fifo"}`, "Error: The path /memories/fifo is neither a regular file nor a directory; the memory tool cannot show it."},
		{`{"command":"str_replace","path":"/memories/fifo","old_str":"a"}`, "Error: The path /memories/fifo does not exist. Please provide a valid path."},
		{`{"command":"view","path":"/memories"}`, "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n4.0K\t/memories"},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, exec(t, tool, tc.in).String()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestDirFSAccessTimes checks that view and writes record the access as the
// file's atime, that a view less than a minute after the recorded access
// leaves it alone (relatime), and that the mtime is never touched.
func TestDirFSAccessTimes(t *testing.T) { forEachDirFS(t, testDirFSAccessTimes) }

func testDirFSAccessTimes(t *testing.T, newDirFS func(t *testing.T) *memtool.DirFS) {
	d := newDirFS(t)
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	tool := memtool.New(d, memtool.Options{Now: func() time.Time { return now }})
	accessed := func() time.Time {
		t.Helper()
		info, err := d.Stat(context.Background(), "a/f.md")
		if err != nil {
			t.Fatal(err)
		}
		return info.Accessed.UTC()
	}
	view := `{"command":"view","path":"/memories/a/f.md"}`
	steps := []struct {
		name string
		at   time.Duration // after t0
		in   string
		want time.Duration // recorded access, after t0
	}{
		{"create", 0, `{"command":"create","path":"/memories/a/f.md","file_text":"x\n"}`, 0},
		{"view-30s-later-skipped", 30 * time.Second, view, 0},
		{"view-2min-later", 2 * time.Minute, view, 2 * time.Minute},
		{"view-in-the-past", time.Minute, view, time.Minute},
		{"str_replace", 90 * time.Second, `{"command":"str_replace","path":"/memories/a/f.md","old_str":"x","new_str":"y"}`, 90 * time.Second},
		{"insert", 100 * time.Second, `{"command":"insert","path":"/memories/a/f.md","insert_line":0,"insert_text":"z"}`, 100 * time.Second},
	}
	for _, s := range steps {
		now = t0.Add(s.at)
		if r := exec(t, tool, s.in); r.IsError {
			t.Fatalf("%s: %s", s.name, r.String())
		}
		if got, want := accessed(), t0.Add(s.want); !got.Equal(want) {
			t.Errorf("%s: atime = %v, want %v", s.name, got, want)
		}
	}
	fi, err := os.Stat(filepath.Join(d.Dir(), "a", "f.md"))
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(fi.ModTime()) > time.Hour {
		t.Errorf("mtime = %v: set from the access clock", fi.ModTime())
	}
}
