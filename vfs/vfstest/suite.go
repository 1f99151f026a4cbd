// Package vfstest is the one behaviour suite for stores as a file tree. Run
// executes the same scenarios against any way of mounting a vfs.FS: directly
// through the vfs methods (Direct, no kernel) and through a kernel FUSE mount
// (fusefs, with the os package and standard tools). Scenarios check the
// store's side through the services: memories, IDs and versions.
package vfstest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/vfs"
)

// Ops are the file operations the scenarios use, named and behaving like the
// os package's (errors are *fs.PathError or *os.LinkError wrapping a
// syscall.Errno). Names are relative to the mount root.
type Ops interface {
	ReadFile(name string) ([]byte, error)
	WriteFile(name string, data []byte) error
	OpenFile(name string, flag int) (File, error)
	Mkdir(name string) error
	Remove(name string) error // os.Remove: a file or an empty directory
	Rename(from, to string) error
	Stat(name string) (Info, error)
	ReadDir(name string) ([]string, error)
	Truncate(name string, size int64) error
}

// File is an open file, like *os.File.
type File interface {
	io.Reader
	io.Writer
	Truncate(size int64) error
	Sync() error
	Close() error
}

// Info is what Stat reports.
type Info struct {
	Name    string
	Dir     bool
	Size    int64
	Mode    fs.FileMode // permission bits
	ModTime time.Time
}

// Backend is the store service the scenarios write through and check.
type Backend struct {
	Services trove.Services
	// Ctx carries the principal used to create stores and to check them.
	Ctx context.Context
}

// Mount is one mounted tree.
type Mount struct {
	// Root is the directory of a kernel mount, "" for a mount without a
	// kernel (the scenarios with standard tools are then skipped).
	Root string
	// FS performs file operations relative to the mount root.
	FS Ops
	// Refresh is the mount's refresh bound.
	Refresh time.Duration
	// Advance, when set, moves the mount's clock past the refresh bound so
	// that changes made by others become visible at once; when nil the
	// scenarios wait (polling) for at most twice the bound plus slack.
	Advance func()
}

// Harness is a way of mounting.
type Harness struct {
	// Backend returns a fresh store service.
	Backend func(t *testing.T) Backend
	// Mount mounts cfg (Services, Principal and Stores are filled in) and
	// unmounts it when t ends.
	Mount func(t *testing.T, cfg vfs.Config) *Mount
}

// Run runs every scenario.
func Run(t *testing.T, h Harness) {
	b := h.Backend(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if sc.tools {
				for _, tool := range []string{"cp", "mv", "rm", "sed", "git"} {
					if _, err := exec.LookPath(tool); err != nil {
						t.Skipf("%s is not installed", tool)
					}
				}
			}
			e := &env{t: t, b: b, h: h}
			e.rw = e.newStore("Notes " + sc.name)
			e.ro = e.newStore("Reference " + sc.name)
			e.m = e.mount()
			if sc.tools && e.m.Root == "" {
				t.Skip("needs a kernel mount: standard tools use the os")
			}
			sc.run(e)
		})
	}
}

type env struct {
	t      *testing.T
	b      Backend
	h      Harness
	rw, ro *trove.Store
	m      *Mount
}

const (
	rwDir = "notes"
	roDir = "ref"
)

func (e *env) newStore(name string) *trove.Store {
	e.t.Helper()
	s, err := e.b.Services.CreateStore(e.b.Ctx, trove.CreateStoreParams{Name: name})
	if err != nil {
		e.t.Fatalf("CreateStore: %v", err)
	}
	return s
}

func (e *env) mount() *Mount {
	return e.h.Mount(e.t, vfs.Config{
		Services:  e.b.Services,
		Principal: trove.PrincipalFrom(e.b.Ctx),
		Stores: []vfs.StoreConfig{
			{StoreID: e.rw.ID, Name: rwDir},
			{StoreID: e.ro.ID, Name: roDir, ReadOnly: true},
		},
	})
}

// memories returns the live memories of store by path, with content.
func (e *env) memories(storeID string) map[string]*trove.Memory {
	e.t.Helper()
	out := map[string]*trove.Memory{}
	for it, err := range trove.Items(e.b.Ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryListItem], error) {
		return e.b.Services.ListMemories(ctx, storeID, trove.ListMemoriesParams{Limit: 20, Cursor: cursor, View: trove.ViewFull})
	}) {
		if err != nil {
			e.t.Fatalf("ListMemories: %v", err)
		}
		if it.Memory != nil {
			out[it.Memory.Path] = it.Memory
		}
	}
	return out
}

// contents returns path → content of the live memories of store.
func (e *env) contents(storeID string) map[string]string {
	out := map[string]string{}
	for p, m := range e.memories(storeID) {
		out[p] = *m.Content
	}
	return out
}

func (e *env) memory(path string) *trove.Memory {
	e.t.Helper()
	m := e.memories(e.rw.ID)[path]
	if m == nil {
		e.t.Fatalf("no memory at %s", path)
	}
	return m
}

// history returns "operation path content" of every version of memID,
// oldest first.
func (e *env) history(memID string) []string {
	e.t.Helper()
	var out []string
	for v, err := range trove.Items(e.b.Ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryVersion], error) {
		return e.b.Services.ListVersions(ctx, e.rw.ID, trove.ListVersionsParams{MemoryID: memID, Limit: 20, Cursor: cursor, View: trove.ViewFull})
	}) {
		if err != nil {
			e.t.Fatalf("ListVersions: %v", err)
		}
		s := string(v.Operation)
		if v.Path != nil {
			s += " " + *v.Path
		}
		if v.Content != nil {
			s += " " + *v.Content
		}
		out = append(out, s)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// versionCount counts the versions of every memory of the read-write store,
// deleted ones included.
func (e *env) versionCount() int {
	e.t.Helper()
	n := 0
	for p, err := range trove.Pages(e.b.Ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryVersion], error) {
		return e.b.Services.ListVersions(ctx, e.rw.ID, trove.ListVersionsParams{Limit: 100, Cursor: cursor})
	}) {
		if err != nil {
			e.t.Fatalf("ListVersions: %v", err)
		}
		n += len(p.Data)
	}
	return n
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) write(name, content string) {
	e.t.Helper()
	e.must(e.m.FS.WriteFile(name, []byte(content)))
}

func (e *env) read(name string) string {
	e.t.Helper()
	b, err := e.m.FS.ReadFile(name)
	e.must(err)
	return string(b)
}

func (e *env) wantErrno(what string, err error, want syscall.Errno) {
	e.t.Helper()
	if !errors.Is(err, want) {
		e.t.Errorf("%s: got error %v, want %v (%d)", what, err, want, int(want))
	}
}

func (e *env) wantDiff(what string, got, want any) {
	e.t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		e.t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// await makes changes by others visible on m and checks cond: at once
// after Advance, or by polling for at most twice the bound plus slack.
func (e *env) await(m *Mount, what string, cond func() error) {
	e.t.Helper()
	if m.Advance != nil {
		m.Advance()
		if err := cond(); err != nil {
			e.t.Fatalf("%s: not visible after the refresh bound: %v", what, err)
		}
		return
	}
	start := time.Now()
	deadline := start.Add(2*m.Refresh + 2*time.Second)
	for {
		err := cond()
		if err == nil {
			e.t.Logf("%s: visible after %v (bound %v)", what, time.Since(start).Round(time.Millisecond), m.Refresh)
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not visible within %v: %v", what, 2*m.Refresh+2*time.Second, err)
		}
		// Waiting for the kernel's and the vfs's caches to expire: the
		// condition is re-checked, never assumed after the pause.
		time.Sleep(m.Refresh / 10)
	}
}

// run runs a tool with absolute paths. It never starts a process in a
// directory of the mount: the child would chdir into the mount between fork
// and exec, while it still shares this process's memory, and this process
// may be the one serving the mount (a deadlock when the Go runtime stops the
// world meanwhile).
func (e *env) run(name string, args ...string) string {
	e.t.Helper()
	cmd := exec.Command(name, args...)
	home := e.t.TempDir()
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

type scenario struct {
	name  string
	tools bool // needs a kernel mount and standard tools
	run   func(e *env)
}

var scenarios = []scenario{
	{name: "ReadWrite", run: func(e *env) {
		e.write("notes/a.md", "hello")
		e.wantDiff("read back", e.read("notes/a.md"), "hello")
		fi, err := e.m.FS.Stat("notes/a.md")
		e.must(err)
		e.wantDiff("stat", []any{fi.Dir, fi.Size, fi.Mode}, []any{false, int64(5), fs.FileMode(0o644)})
		root, err := e.m.FS.ReadDir("")
		e.must(err)
		e.wantDiff("root listing", root, []string{rwDir, roDir})
		names, err := e.m.FS.ReadDir("notes")
		e.must(err)
		e.wantDiff("store listing", names, []string{"a.md"})
		e.wantDiff("store", e.contents(e.rw.ID), map[string]string{"/a.md": "hello"})
		_, err = e.m.FS.Stat("notes/missing.md")
		e.wantErrno("stat missing", err, syscall.ENOENT)
		_, err = e.m.FS.Stat("notes/a.md/below")
		e.wantErrno("stat below a file", err, syscall.ENOTDIR)
	}},
	{name: "OneVersionPerClose", run: func(e *env) {
		f, err := e.m.FS.OpenFile("notes/n.md", os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
		e.must(err)
		for _, s := range []string{"a", "b", "c"} {
			_, err := f.Write([]byte(s))
			e.must(err)
		}
		e.must(f.Close())
		id := e.memory("/n.md").ID
		e.wantDiff("after one close of three writes", e.history(id), []string{"created /n.md abc"})

		f, err = e.m.FS.OpenFile("notes/n.md", os.O_RDWR)
		e.must(err)
		b, err := io.ReadAll(f)
		e.must(err)
		e.must(f.Close())
		e.wantDiff("read", string(b), "abc")
		e.wantDiff("a close without writes adds nothing", len(e.history(id)), 1)

		f, err = e.m.FS.OpenFile("notes/n.md", os.O_WRONLY|os.O_TRUNC)
		e.must(err)
		_, err = f.Write([]byte("x"))
		e.must(err)
		_, err = f.Write([]byte("y"))
		e.must(err)
		e.must(f.Sync())
		_, err = f.Write([]byte("z"))
		e.must(err)
		e.must(f.Close())

		f, err = e.m.FS.OpenFile("notes/n.md", os.O_WRONLY|os.O_APPEND)
		e.must(err)
		_, err = f.Write([]byte("!"))
		e.must(err)
		e.must(f.Close())
		e.must(e.m.FS.Truncate("notes/n.md", 2))
		e.wantDiff("versions", e.history(id), []string{
			"created /n.md abc", "modified /n.md xy", "modified /n.md xyz",
			"modified /n.md xyz!", "modified /n.md xy",
		})
		e.wantDiff("read", e.read("notes/n.md"), "xy")
	}},
	{name: "EditorPattern", run: func(e *env) {
		e.write("notes/doc.md", "v1\n")
		id := e.memory("/doc.md").ID
		e.write("notes/doc.md.tmp", "v2\n")
		e.must(e.m.FS.Rename("notes/doc.md.tmp", "notes/doc.md"))
		e.wantDiff("read", e.read("notes/doc.md"), "v2\n")
		_, err := e.m.FS.Stat("notes/doc.md.tmp")
		e.wantErrno("temp after rename", err, syscall.ENOENT)
		e.wantDiff("store", e.contents(e.rw.ID), map[string]string{"/doc.md": "v2\n"})
		e.wantDiff("original keeps its ID", e.memory("/doc.md").ID, id)
		e.wantDiff("one modified version", e.history(id), []string{"created /doc.md v1\n", "modified /doc.md v2\n"})
		e.wantDiff("the temporary file never reached the store", e.versionCount(), 2)
	}},
	{name: "TempFiles", run: func(e *env) {
		e.write("notes/draft.tmp", "draft\n")
		names, err := e.m.FS.ReadDir("notes")
		e.must(err)
		e.wantDiff("listed in the mount", names, []string{"draft.tmp"})
		e.wantDiff("read back", e.read("notes/draft.tmp"), "draft\n")
		e.wantDiff("kept out of the store", e.contents(e.rw.ID), map[string]string{})
		e.wantErrno("not UTF-8 refused at close", e.m.FS.WriteFile("notes/bad.tmp", []byte("\xff")), syscall.EILSEQ)
		e.must(e.m.FS.Rename("notes/draft.tmp", "notes/draft.md"))
		e.wantDiff("uploaded at the rename", e.contents(e.rw.ID), map[string]string{"/draft.md": "draft\n"})
		e.wantDiff("one version", e.history(e.memory("/draft.md").ID), []string{"created /draft.md draft\n"})
		e.write("notes/x~", "backup")
		e.must(e.m.FS.Remove("notes/x~"))
		e.wantDiff("versions in the store", e.versionCount(), 1)
	}},
	{name: "Limits", run: func(e *env) {
		big := strings.Repeat("a", trove.DefaultLimits().MaxContentBytes+1)
		e.wantErrno("new file over the limit", e.m.FS.WriteFile("notes/big.md", []byte(big)), syscall.EFBIG)
		_, err := e.m.FS.Stat("notes/big.md")
		e.wantErrno("big file after the failure", err, syscall.ENOENT)
		e.write("notes/small.md", "ok")
		e.wantErrno("existing file over the limit", e.m.FS.WriteFile("notes/small.md", []byte(big)), syscall.EFBIG)
		e.wantErrno("truncate over the limit", e.m.FS.Truncate("notes/small.md", int64(len(big))), syscall.EFBIG)
		e.wantErrno("new file not UTF-8", e.m.FS.WriteFile("notes/bin.md", []byte("\xff\xfe")), syscall.EILSEQ)
		e.wantErrno("existing file not UTF-8", e.m.FS.WriteFile("notes/small.md", []byte("ok\xc3")), syscall.EILSEQ)
		e.wantDiff("store unchanged", e.contents(e.rw.ID), map[string]string{"/small.md": "ok"})
		e.wantDiff("content", e.read("notes/small.md"), "ok")
		e.wantDiff("one version", len(e.history(e.memory("/small.md").ID)), 1)
		e.wantDiff("file after the failure", e.read("notes/small.md"), "ok")
	}},
	{name: "RefusedClose", run: func(e *env) {
		// A new file whose content the store refuses disappears at the
		// refused close: not listed, not found (the audit's phantom entry).
		// An existing file refused keeps its content and size.
		e.must(e.m.FS.Mkdir("notes/prefs"))
		e.write("notes/prefs/keep.md", "keep")
		big := []byte(strings.Repeat("a", trove.DefaultLimits().MaxContentBytes+1))
		for _, c := range []struct {
			what string
			data []byte
			want syscall.Errno
		}{
			{"over the limit", big, syscall.EFBIG},
			{"not UTF-8", []byte("\xff"), syscall.EILSEQ},
		} {
			for _, name := range []string{"notes/prefs/big.md", "notes/top.md"} {
				dir := path.Dir(name)
				before, err := e.m.FS.ReadDir(dir)
				e.must(err)
				f, err := e.m.FS.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
				e.must(err)
				_, _ = f.Write(c.data) // EFBIG here (the write that crosses the limit) or at close
				e.wantErrno("close of a new file "+c.what, f.Close(), c.want)
				names, err := e.m.FS.ReadDir(dir)
				e.must(err)
				e.wantDiff("listing after a refused new file "+c.what+" in "+dir, names, before)
				_, err = e.m.FS.Stat(name)
				e.wantErrno("stat of a refused new file "+c.what, err, syscall.ENOENT)
				_, err = e.m.FS.ReadFile(name)
				e.wantErrno("read of a refused new file "+c.what, err, syscall.ENOENT)
				names, err = e.m.FS.ReadDir(dir)
				e.must(err)
				e.wantDiff("listing again "+c.what+" in "+dir, names, before)
				e.wantErrno("WriteFile of a new file "+c.what, e.m.FS.WriteFile(name, c.data), c.want)
				names, err = e.m.FS.ReadDir(dir)
				e.must(err)
				e.wantDiff("listing after WriteFile "+c.what+" in "+dir, names, before)

				// Refused at fsync: gone at once, while the descriptor is
				// still open (as if unlinked), and after its close.
				f, err = e.m.FS.OpenFile(name, os.O_RDWR|os.O_CREATE)
				e.must(err)
				_, _ = f.Write(c.data) // a write over the limit fails, and fsync again
				e.wantErrno("fsync of a new file "+c.what, f.Sync(), c.want)
				names, err = e.m.FS.ReadDir(dir)
				e.must(err)
				e.wantDiff("listing after a refused fsync "+c.what+" in "+dir, names, before)
				_, err = e.m.FS.Stat(name)
				e.wantErrno("stat after a refused fsync "+c.what, err, syscall.ENOENT)
				_ = f.Close() // the refusal was reported at fsync (or at the write)
				names, err = e.m.FS.ReadDir(dir)
				e.must(err)
				e.wantDiff("listing after a refused fsync and close "+c.what+" in "+dir, names, before)
				_, err = e.m.FS.Stat(name)
				e.wantErrno("stat after a refused fsync and close "+c.what, err, syscall.ENOENT)
			}
			f, err := e.m.FS.OpenFile("notes/prefs/keep.md", os.O_WRONLY|os.O_TRUNC)
			e.must(err)
			_, _ = f.Write(c.data)
			e.wantErrno("close of an existing file "+c.what, f.Close(), c.want)
			// A shell ignores that close; sync FILE (an fsync of a new
			// descriptor) reports the refusal once more, then no more.
			f, err = e.m.FS.OpenFile("notes/prefs/keep.md", os.O_RDONLY)
			e.must(err)
			e.wantErrno("fsync after a refused close of an existing file "+c.what, f.Sync(), c.want)
			e.must(f.Sync()) // reported once
			e.must(f.Close())
			fi, err := e.m.FS.Stat("notes/prefs/keep.md")
			e.must(err)
			e.wantDiff("size of the existing file "+c.what, fi.Size, int64(4))
			e.wantDiff("content of the existing file "+c.what, e.read("notes/prefs/keep.md"), "keep")
			f, err = e.m.FS.OpenFile("notes/prefs/keep.md", os.O_RDWR|os.O_TRUNC)
			e.must(err)
			_, _ = f.Write(c.data)
			e.wantErrno("fsync of an existing file "+c.what, f.Sync(), c.want)
			fi, err = e.m.FS.Stat("notes/prefs/keep.md")
			e.must(err)
			e.wantDiff("size of the existing file after a refused fsync "+c.what, fi.Size, int64(4))
			e.wantDiff("content of the existing file after a refused fsync "+c.what, e.read("notes/prefs/keep.md"), "keep")
			_ = f.Close()
			names, err := e.m.FS.ReadDir("notes/prefs")
			e.must(err)
			e.wantDiff("listing with the existing file "+c.what, names, []string{"keep.md"})
		}
		e.wantDiff("store unchanged", e.contents(e.rw.ID), map[string]string{"/prefs/keep.md": "keep"})
		e.wantDiff("one version", e.versionCount(), 1)
	}},
	{name: "Tools/refused", tools: true, run: func(e *env) {
		// Shells ignore close errors: the refused file must vanish anyway.
		dir := filepath.Join(e.m.Root, rwDir)
		bad, big := filepath.Join(dir, "bad.md"), filepath.Join(dir, "big.md")
		e.run("sh", "-c", "printf '\\377' > "+bad)
		n := trove.DefaultLimits().MaxContentBytes/8 + 1
		// The write that crosses the limit fails, so the shell may exit 1.
		_ = exec.Command("sh", "-c", fmt.Sprintf("yes 1234567 | head -n %d > %s", n, big)).Run()
		ents, err := os.ReadDir(dir)
		e.must(err)
		e.wantDiff("listing", len(ents), 0)
		// sync FILE tells the shell what close did not: a refused new file
		// is gone, a refused existing file's fsync fails once.
		if out, err := exec.Command("sync", bad).CombinedOutput(); err == nil {
			e.t.Errorf("sync of a refused new file succeeded: %s", out)
		}
		keep := filepath.Join(dir, "keep.md")
		e.write("notes/keep.md", "keep")
		e.run("sh", "-c", "printf '\\377' > "+keep)
		out, err := exec.Command("sync", keep).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "multibyte") {
			e.t.Errorf("sync after a refused close of an existing file: %v %s", err, out)
		}
		e.run("sync", keep)
		e.wantDiff("existing file", e.read("notes/keep.md"), "keep")
		for _, p := range []string{bad, big} {
			_, err := os.Stat(p)
			e.wantErrno("stat "+filepath.Base(p), err, syscall.ENOENT)
		}
		out, err = exec.Command("ls", "-l", dir).CombinedOutput()
		e.must(err)
		if strings.Contains(string(out), "big.md") || strings.Contains(string(out), "bad.md") {
			e.t.Errorf("ls -l lists a refused file:\n%s", out)
		}
		e.wantDiff("store unchanged", e.contents(e.rw.ID), map[string]string{"/keep.md": "keep"})
	}},
	{name: "ReadOnly", run: func(e *env) {
		if _, err := e.b.Services.CreateMemory(e.b.Ctx, e.ro.ID, trove.CreateMemoryParams{Path: "/guide.md", Content: "read me"}); err != nil {
			e.t.Fatal(err)
		}
		e.wantDiff("read", e.read("ref/guide.md"), "read me")
		fi, err := e.m.FS.Stat("ref/guide.md")
		e.must(err)
		e.wantDiff("file mode", fi.Mode, fs.FileMode(0o444))
		fi, err = e.m.FS.Stat("ref")
		e.must(err)
		e.wantDiff("dir mode", fi.Mode, fs.FileMode(0o555))
		e.wantErrno("create", e.m.FS.WriteFile("ref/new.md", []byte("x")), syscall.EROFS)
		e.wantErrno("overwrite", e.m.FS.WriteFile("ref/guide.md", []byte("x")), syscall.EROFS)
		e.wantErrno("mkdir", e.m.FS.Mkdir("ref/d"), syscall.EROFS)
		e.wantErrno("remove", e.m.FS.Remove("ref/guide.md"), syscall.EROFS)
		e.wantErrno("rename", e.m.FS.Rename("ref/guide.md", "ref/g2.md"), syscall.EROFS)
		e.wantErrno("truncate", e.m.FS.Truncate("ref/guide.md", 0), syscall.EROFS)
		e.wantErrno("mkdir in the root", e.m.FS.Mkdir("newstore"), syscall.EROFS)
		e.wantErrno("create in the root", e.m.FS.WriteFile("root.md", []byte("x")), syscall.EROFS)
		e.wantErrno("remove a store directory", e.m.FS.Remove("notes"), syscall.EROFS)
		e.wantErrno("rename across stores", e.m.FS.Rename("ref/guide.md", "notes/guide.md"), syscall.EXDEV)
		e.wantDiff("store unchanged", e.contents(e.ro.ID), map[string]string{"/guide.md": "read me"})
	}},
	{name: "MkdirRmdir", run: func(e *env) {
		e.must(e.m.FS.Mkdir("notes/a"))
		e.wantErrno("mkdir twice", e.m.FS.Mkdir("notes/a"), syscall.EEXIST)
		e.wantErrno("mkdir without parent", e.m.FS.Mkdir("notes/x/y"), syscall.ENOENT)
		e.must(e.m.FS.Mkdir("notes/a/b"))
		fi, err := e.m.FS.Stat("notes/a/b")
		e.must(err)
		e.wantDiff("dir", []any{fi.Dir, fi.Mode}, []any{true, fs.FileMode(0o755)})
		e.wantErrno("rmdir non-empty", e.m.FS.Remove("notes/a"), syscall.ENOTEMPTY)
		e.write("notes/a/b/f.md", "f")
		e.wantErrno("rmdir with a file", e.m.FS.Remove("notes/a/b"), syscall.ENOTEMPTY)
		e.wantDiff("store", e.contents(e.rw.ID), map[string]string{"/a/b/f.md": "f"})
		e.must(e.m.FS.Remove("notes/a/b/f.md"))
		names, err := e.m.FS.ReadDir("notes/a/b")
		e.must(err)
		e.wantDiff("emptied directory stays", names, []string{})
		e.must(e.m.FS.Remove("notes/a/b"))
		e.must(e.m.FS.Remove("notes/a"))
		_, err = e.m.FS.Stat("notes/a")
		e.wantErrno("stat removed dir", err, syscall.ENOENT)
		e.wantDiff("store", e.contents(e.rw.ID), map[string]string{})
	}},
	{name: "RenameKeepsHistory", run: func(e *env) {
		e.must(e.m.FS.Mkdir("notes/d"))
		e.must(e.m.FS.Mkdir("notes/d/sub"))
		e.write("notes/d/x.md", "x1")
		e.write("notes/d/x.md", "x2")
		e.write("notes/d/sub/y.md", "y")
		x, y := e.memory("/d/x.md").ID, e.memory("/d/sub/y.md").ID
		e.must(e.m.FS.Rename("notes/d", "notes/e"))
		_, err := e.m.FS.Stat("notes/d")
		e.wantErrno("old dir", err, syscall.ENOENT)
		e.wantDiff("read", e.read("notes/e/sub/y.md"), "y")
		e.wantDiff("ids", []string{e.memory("/e/x.md").ID, e.memory("/e/sub/y.md").ID}, []string{x, y})
		e.wantDiff("history of x", e.history(x), []string{"created /d/x.md x1", "modified /d/x.md x2", "modified /e/x.md x2"})
		e.must(e.m.FS.Rename("notes/e/x.md", "notes/e/sub/z.md"))
		e.wantDiff("file move keeps the id", e.memory("/e/sub/z.md").ID, x)
		e.wantErrno("dir into itself", e.m.FS.Rename("notes/e", "notes/e/sub/in"), syscall.EINVAL)
		e.must(e.m.FS.Mkdir("notes/full"))
		e.write("notes/full/f.md", "f")
		e.wantErrno("dir over non-empty dir", e.m.FS.Rename("notes/e", "notes/full"), syscall.ENOTEMPTY)
		e.wantErrno("file over dir", e.m.FS.Rename("notes/full/f.md", "notes/e"), syscall.EISDIR)
		e.wantErrno("dir over file", e.m.FS.Rename("notes/e", "notes/full/f.md"), syscall.ENOTDIR)
		e.wantDiff("store", e.contents(e.rw.ID), map[string]string{"/e/sub/y.md": "y", "/e/sub/z.md": "x2", "/full/f.md": "f"})
	}},
	{name: "ExternalWriter", run: func(e *env) {
		svc, ctx := e.b.Services, e.b.Ctx
		_, err := e.m.FS.Stat("notes/ext.md")
		e.wantErrno("before", err, syscall.ENOENT)
		m, err := svc.CreateMemory(ctx, e.rw.ID, trove.CreateMemoryParams{Path: "/ext.md", Content: "remote"})
		e.must(err)
		if e.m.Advance != nil {
			_, err := e.m.FS.Stat("notes/ext.md")
			e.wantErrno("within the bound the listing is cached", err, syscall.ENOENT)
		}
		e.await(e.m, "external create", func() error {
			b, err := e.m.FS.ReadFile("notes/ext.md")
			if err == nil && string(b) != "remote" {
				err = fmt.Errorf("content %q", b)
			}
			return err
		})
		c := "remote, changed"
		_, err = svc.UpdateMemory(ctx, e.rw.ID, m.ID, trove.UpdateMemoryParams{Content: &c})
		e.must(err)
		e.await(e.m, "external update", func() error {
			b, err := e.m.FS.ReadFile("notes/ext.md")
			if err == nil && string(b) != c {
				err = fmt.Errorf("content %q", b)
			}
			return err
		})
		e.must(svc.DeleteMemory(ctx, e.rw.ID, m.ID, ""))
		e.await(e.m, "external delete", func() error {
			if _, err := e.m.FS.Stat("notes/ext.md"); !errors.Is(err, syscall.ENOENT) {
				return fmt.Errorf("stat: %v", err)
			}
			return nil
		})
	}},
	{name: "ConflictOnClose", run: func(e *env) {
		e.write("notes/c.md", "base")
		m := e.memory("/c.md")
		f, err := e.m.FS.OpenFile("notes/c.md", os.O_RDWR)
		e.must(err)
		b, err := io.ReadAll(f)
		e.must(err)
		e.wantDiff("read", string(b), "base")
		theirs := "theirs"
		_, err = e.b.Services.UpdateMemory(e.b.Ctx, e.rw.ID, m.ID, trove.UpdateMemoryParams{Content: &theirs})
		e.must(err)
		_, err = f.Write([]byte("+mine"))
		e.must(err)
		e.wantErrno("close after a lost race", f.Close(), syscall.ESTALE)
		got := e.contents(e.rw.ID)
		e.wantDiff("the other writer keeps the path", got["/c.md"], "theirs")
		re := regexp.MustCompile(`^/c\.conflict-[0-9A-Za-z_]{8}-\d{8}T\d{6}Z\.md$`)
		var copies []string
		for p, c := range got {
			if re.MatchString(p) && c == "base+mine" {
				copies = append(copies, p)
			}
		}
		if len(copies) != 1 || len(got) != 2 {
			e.t.Errorf("want c.md and one conflict copy holding the written bytes, got %v", got)
		}
		e.wantDiff("versions of the original", len(e.history(m.ID)), 2)
	}},
	{name: "TwoMounts", run: func(e *env) {
		e.write("notes/shared.md", "from one")
		m2 := e.mount()
		b, err := m2.FS.ReadFile("notes/shared.md")
		e.must(err)
		e.wantDiff("second mount reads", string(b), "from one")
		e.must(m2.FS.WriteFile("notes/shared.md", []byte("from two")))
		e.await(e.m, "second mount's write in the first", func() error {
			b, err := e.m.FS.ReadFile("notes/shared.md")
			if err == nil && string(b) != "from two" {
				err = fmt.Errorf("content %q", b)
			}
			return err
		})
		e.wantDiff("versions", len(e.history(e.memory("/shared.md").ID)), 2)
	}},
	{name: "Concurrent", run: func(e *env) {
		// Writers in parallel, each on its own files, with a lister; then
		// one version per file.
		e.must(e.m.FS.Mkdir("notes/c"))
		const writers, files = 4, 10
		errs := make(chan error, writers+1)
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := e.m.FS.ReadDir("notes/c"); err != nil {
					errs <- err
					return
				}
			}
		}()
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < files; i++ {
					if err := e.m.FS.WriteFile(fmt.Sprintf("notes/c/w%d-%d.md", w, i), []byte(fmt.Sprint(w, i))); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(done)
		if err := <-errs; err != nil {
			e.t.Fatal(err)
		}
		got := e.contents(e.rw.ID)
		names, err := e.m.FS.ReadDir("notes/c")
		e.must(err)
		e.wantDiff("files", []int{len(got), len(names), e.versionCount()}, []int{writers * files, writers * files, writers * files})
	}},
	{name: "Tools/cp-mv-rm", tools: true, run: func(e *env) {
		src := filepath.Join(e.t.TempDir(), "src")
		for p, c := range map[string]string{"a.md": "alpha\n", "sub/b.md": "beta\n", "sub/deep/c.txt": "gamma\n"} {
			e.must(os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755))
			e.must(os.WriteFile(filepath.Join(src, p), []byte(c), 0o644))
		}
		store := filepath.Join(e.m.Root, rwDir)
		tree := filepath.Join(store, "tree")
		e.run("cp", "-r", src, tree)
		e.wantDiff("after cp -r", e.contents(e.rw.ID), map[string]string{
			"/tree/a.md": "alpha\n", "/tree/sub/b.md": "beta\n", "/tree/sub/deep/c.txt": "gamma\n",
		})
		a := e.memory("/tree/a.md").ID
		e.wantDiff("one version per copied file", len(e.history(a)), 1)
		e.run("mv", filepath.Join(tree, "a.md"), filepath.Join(tree, "sub/deep/a2.md"))
		e.wantDiff("mv keeps the id", e.memory("/tree/sub/deep/a2.md").ID, a)
		e.run("mv", filepath.Join(tree, "sub"), filepath.Join(store, "moved"))
		e.wantDiff("after mv of a dir", e.contents(e.rw.ID), map[string]string{
			"/moved/b.md": "beta\n", "/moved/deep/a2.md": "alpha\n", "/moved/deep/c.txt": "gamma\n",
		})
		e.run("rm", "-r", tree, filepath.Join(store, "moved"))
		e.wantDiff("after rm -r", e.contents(e.rw.ID), map[string]string{})
		names, err := os.ReadDir(store)
		e.must(err)
		e.wantDiff("listing", len(names), 0)
	}},
	{name: "Tools/shell", tools: true, run: func(e *env) {
		// A shell redirection opens, dups and closes the first descriptor
		// before writing: still one version per command.
		f := filepath.Join(e.m.Root, rwDir, "sh.md")
		e.run("sh", "-c", "echo hello > "+f)
		id := e.memory("/sh.md").ID
		e.wantDiff("after >", e.history(id), []string{"created /sh.md hello\n"})
		e.run("sh", "-c", "echo more >> "+f)
		e.wantDiff("after >>", e.history(id), []string{"created /sh.md hello\n", "modified /sh.md hello\nmore\n"})
		// No descriptor writes here: the change is uploaded at the last
		// release, which the kernel sends after close(2) returns.
		e.run("sh", "-c", ": > "+f)
		e.run("touch", filepath.Join(e.m.Root, rwDir, "empty.md"))
		e.await(e.m, "truncation and touch", func() error {
			got := e.contents(e.rw.ID)
			if d := cmp.Diff(map[string]string{"/sh.md": "", "/empty.md": ""}, got); d != "" {
				return errors.New(d)
			}
			return nil
		})
		e.wantDiff("versions", e.versionCount(), 4)
	}},
	{name: "Tools/sed", tools: true, run: func(e *env) {
		e.write("notes/s.md", "hello world\n")
		id := e.memory("/s.md").ID
		e.run("sed", "-i", "s/world/trove/", filepath.Join(e.m.Root, rwDir, "s.md"))
		e.wantDiff("store", e.contents(e.rw.ID), map[string]string{"/s.md": "hello trove\n"})
		e.wantDiff("one modified version", e.history(id), []string{"created /s.md hello world\n", "modified /s.md hello trove\n"})
		e.wantDiff("sed's temporary file never reached the store", e.versionCount(), 2)
	}},
	{name: "Tools/git", tools: true, run: func(e *env) {
		repo := filepath.Join(e.m.Root, rwDir, "repo")
		e.must(os.MkdirAll(filepath.Join(repo, "src"), 0o755))
		e.must(os.WriteFile(filepath.Join(repo, "README.md"), []byte("# repo\n"), 0o644))
		e.must(os.WriteFile(filepath.Join(repo, "src", "main.go"), []byte("package main\n"), 0o644))
		// Stores hold UTF-8 text only, so git's binary object database
		// lives outside the mount; the work tree (and the .git link file)
		// is in it.
		gitDir := filepath.Join(e.t.TempDir(), "git")
		e.run("git", "init", "-q", "--separate-git-dir="+gitDir, repo)
		e.run("git", "-C", repo, "config", "user.email", "agent@example.com")
		e.run("git", "-C", repo, "config", "user.name", "Agent")
		e.run("git", "-C", repo, "add", ".")
		e.run("git", "-C", repo, "commit", "-q", "-m", "first")
		e.wantDiff("status", e.run("git", "-C", repo, "status", "--porcelain"), "")
		files := strings.Fields(e.run("git", "-C", repo, "ls-files"))
		sort.Strings(files)
		e.wantDiff("tracked", files, []string{"README.md", "src/main.go"})
		e.must(os.WriteFile(filepath.Join(repo, "README.md"), []byte("# repo\nmore\n"), 0o644))
		e.wantDiff("status after an edit", strings.TrimSpace(e.run("git", "-C", repo, "status", "--porcelain")), "M README.md")
		if !strings.HasPrefix(e.contents(e.rw.ID)["/repo/.git"], "gitdir: ") {
			e.t.Errorf("the .git link file is not a memory: %v", e.contents(e.rw.ID))
		}
	}},
}
