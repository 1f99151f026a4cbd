package vfs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
	"github.com/trovehq/trove/vfs"
	"github.com/trovehq/trove/vfs/vfstest"
)

// backend is a real core over a real SQLite database in t's temp dir.
func backend(t *testing.T) vfstest.Backend {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p := &trove.Principal{WorkspaceID: "wrkspc_vfstest", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_vfstest0001"}}
	return vfstest.Backend{Services: core.New(db, core.Options{}), Ctx: trove.WithPrincipal(ctx, p)}
}

// TestDirect runs the shared suite against the vfs without a kernel.
func TestDirect(t *testing.T) {
	vfstest.Run(t, vfstest.Harness{
		Backend: backend,
		Mount: func(t *testing.T, cfg vfs.Config) *vfstest.Mount {
			return vfstest.Direct(t, cfg, nil)
		},
	})
}

func TestIsTempName(t *testing.T) {
	for name, want := range map[string]bool{
		"sedAb12_9": true, "sediment": false, "sedAb12_": false, "tmpab_cd123": true, "tmp-notes.md": false,
		"a.tmp": true, "a.temp": true, "notes.md~": true, ".notes.md.swp": true, "4913": true, "index.lock": true,
		"#notes.md#": true, ".#notes.md": true, "#": false, "notes.md": false, "tmp": false,
	} {
		if got := vfs.IsTempName(name); got != want {
			t.Errorf("IsTempName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestCloseUploadsTempFiles: a temporary file never renamed reaches the
// store when the tree is closed, so nothing written is lost.
func TestCloseUploadsTempFiles(t *testing.T) {
	b := backend(t)
	st, err := b.Services.CreateStore(b.Ctx, trove.CreateStoreParams{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := vfs.New(b.Ctx, vfs.Config{Services: b.Services, Stores: []vfs.StoreConfig{{StoreID: st.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := v.Open(context.Background(), "n/keep.tmp", os.O_CREATE|os.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteAt(context.Background(), []byte("kept"), 0); err != nil {
		t.Fatal(err)
	}
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.Release()
	count := func() int {
		p, err := b.Services.ListMemories(b.Ctx, st.ID, trove.ListMemoriesParams{})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Data)
	}
	if n := count(); n != 0 {
		t.Fatalf("temporary file uploaded at close: %d memories", n)
	}
	if err := v.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("after Close: %d memories, want 1", n)
	}
	if err := v.Close(context.Background()); err != nil || count() != 1 {
		t.Fatalf("second Close: %v, %d memories", err, count())
	}
}

// TestFlat: with Config.Flat the store is the root of the tree.
func TestFlat(t *testing.T) {
	b := backend(t)
	st, err := b.Services.CreateStore(b.Ctx, trove.CreateStoreParams{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vfs.New(b.Ctx, vfs.Config{Services: b.Services, Flat: true}); err == nil {
		t.Error("Flat without a store: no error")
	}
	m := vfstest.Direct(t, vfs.Config{Services: b.Services, Principal: trove.PrincipalFrom(b.Ctx), Flat: true, Stores: []vfs.StoreConfig{{StoreID: st.ID}}}, nil)
	if err := m.FS.WriteFile("a.md", []byte("A")); err != nil {
		t.Fatal(err)
	}
	if err := m.FS.Mkdir("d"); err != nil {
		t.Fatal(err)
	}
	names, err := m.FS.ReadDir("")
	if err != nil || !cmp.Equal(names, []string{"a.md", "d"}) {
		t.Errorf("root listing %v %v", names, err)
	}
	if err := m.FS.Remove(""); !errors.Is(err, syscall.EROFS) {
		t.Errorf("remove the root: %v, want EROFS", err)
	}
	p, err := b.Services.ListMemories(b.Ctx, st.ID, trove.ListMemoriesParams{})
	if err != nil || len(p.Data) != 1 || p.Data[0].Memory.Path != "/a.md" {
		t.Errorf("store: %+v %v", p, err)
	}
}

// slowList makes every listing page take three seconds of the test clock.
type slowList struct {
	trove.Services
	clock *vfstest.Clock
}

func (s slowList) ListMemories(ctx context.Context, storeID string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	s.clock.Advance(3 * time.Second)
	return s.Services.ListMemories(ctx, storeID, p)
}

// TestSlowListingStretchesTheBound: a listing that takes 3 s holds for 6 s,
// not for the configured 1 s.
func TestSlowListingStretchesTheBound(t *testing.T) {
	b := backend(t)
	st, err := b.Services.CreateStore(b.Ctx, trove.CreateStoreParams{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	clock := vfstest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := vfstest.Direct(t, vfs.Config{Services: slowList{b.Services, clock}, Principal: trove.PrincipalFrom(b.Ctx),
		Refresh: time.Second, Stores: []vfs.StoreConfig{{StoreID: st.ID, Name: "n"}}}, clock)
	if _, err := m.FS.Stat("n/a.md"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("stat: %v", err)
	}
	if _, err := b.Services.CreateMemory(b.Ctx, st.ID, trove.CreateMemoryParams{Path: "/a.md", Content: "a"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if _, err := m.FS.Stat("n/a.md"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("after 2 s the 3 s listing was reloaded: %v", err)
	}
	clock.Advance(5 * time.Second)
	if _, err := m.FS.Stat("n/a.md"); err != nil {
		t.Errorf("after 7 s: %v", err)
	}
}

// failNthPathUpdate fails the nth path change with EUNAVAILABLE, and stands
// for a server without the directory endpoints, so that a directory rename
// goes one memory at a time.
type failNthPathUpdate struct {
	trove.Services
	n     int
	calls *int
}

func (f failNthPathUpdate) UpdateMemory(ctx context.Context, storeID, memoryID string, p trove.UpdateMemoryParams) (*trove.Memory, error) {
	if p.Path != nil {
		*f.calls++
		if *f.calls == f.n {
			return nil, trove.Errorf(trove.EUNAVAILABLE, "database unreachable")
		}
	}
	return f.Services.UpdateMemory(ctx, storeID, memoryID, p)
}

func (failNthPathUpdate) RenameDirectory(context.Context, string, trove.RenameDirectoryParams) (*trove.DirectoryChange, error) {
	return nil, fmt.Errorf("no directory endpoints: %w", errors.ErrUnsupported)
}

// TestDirRenameRollsBack: when a directory rename goes one memory at a time
// and one memory cannot be moved, those already moved go back and the
// rename fails with EIO.
func TestDirRenameRollsBack(t *testing.T) {
	b := backend(t)
	st, err := b.Services.CreateStore(b.Ctx, trove.CreateStoreParams{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/d/a.md", "/d/b.md", "/d/c.md"} {
		if _, err := b.Services.CreateMemory(b.Ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: p}); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	m := vfstest.Direct(t, vfs.Config{Services: failNthPathUpdate{b.Services, 3, &calls}, Principal: trove.PrincipalFrom(b.Ctx),
		Stores: []vfs.StoreConfig{{StoreID: st.ID, Name: "n"}}}, nil)
	if err := m.FS.Rename("n/d", "n/e"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename: %v, want EIO", err)
	}
	pg, err := b.Services.ListMemories(b.Ctx, st.ID, trove.ListMemoriesParams{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, it := range pg.Data {
		paths = append(paths, it.Memory.Path)
	}
	if diff := cmp.Diff([]string{"/d/a.md", "/d/b.md", "/d/c.md"}, paths); diff != "" {
		t.Errorf("store after the failed rename (-want +got):\n%s", diff)
	}
	names, err := m.FS.ReadDir("n/d")
	if err != nil || len(names) != 3 {
		t.Errorf("mount after the failed rename: %v %v", names, err)
	}
	if _, err := m.FS.Stat("n/e"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("n/e after the failed rename: %v", err)
	}
}

// TestOnRefused: every change the store refuses for good reaches
// Config.OnRefused with the memory path and a reason naming the errno; a
// refusal nobody hears of (a clean close) does not.
func TestOnRefused(t *testing.T) {
	b := backend(t)
	st, err := b.Services.CreateStore(b.Ctx, trove.CreateStoreParams{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	v, err := vfs.New(b.Ctx, vfs.Config{
		Services: b.Services, Flat: true, Stores: []vfs.StoreConfig{{StoreID: st.ID}},
		OnRefused: func(storeID, path, reason string) {
			errno := reason[strings.Index(reason, "(")+1 : strings.Index(reason, ")")]
			got = append(got, storeID+" "+path+" "+errno)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	write := func(name string, data []byte) error {
		h, err := v.Open(ctx, name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Release()
		h.WriteAt(ctx, data, 0)
		return h.Flush(ctx)
	}
	if err := write("ok.md", []byte("fine")); err != nil {
		t.Fatal(err)
	}
	big := []byte(strings.Repeat("a", trove.DefaultLimits().MaxContentBytes+1))
	for name, data := range map[string][]byte{"prefs/big.md": big, "bin.md": []byte("\xff"), "ok.md": []byte("\xc3")} {
		if name == "prefs/big.md" {
			if err := v.Mkdir(ctx, "prefs"); err != nil {
				t.Fatal(err)
			}
		}
		if err := write(name, data); err == nil {
			t.Errorf("%s: close succeeded", name)
		}
	}
	sort.Strings(got)
	want := []string{st.ID + " /bin.md EILSEQ", st.ID + " /ok.md EILSEQ", st.ID + " /prefs/big.md EFBIG"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("refusals (-want +got):\n%s", d)
	}
}

// TestOnHidden (F2): a store path whose name cannot be a local file name
// (over 255 bytes) is left out of listings and reported once, through
// Config.OnHidden, with the rest of the tree listed as usual.
func TestOnHidden(t *testing.T) {
	b := backend(t)
	st, err := b.Services.CreateStore(b.Ctx, trove.CreateStoreParams{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	long := "/" + strings.Repeat("x", 300) + ".md"
	deepDir := "/d/" + strings.Repeat("é", 130)
	for _, p := range []string{"/ok.md", long, deepDir + "/a.md", "/d/b.md"} {
		if _, err := b.Services.CreateMemory(b.Ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	v, err := vfs.New(b.Ctx, vfs.Config{
		Services: b.Services, Flat: true, Stores: []vfs.StoreConfig{{StoreID: st.ID}},
		OnHidden: func(storeID, path, reason string) {
			if storeID != st.ID || !strings.Contains(reason, "255 bytes") {
				t.Errorf("OnHidden(%q, %.20q…, %q)", storeID, path, reason)
			}
			got = append(got, path)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	names := func(dir string) []string {
		attrs, err := v.ReadDir(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range attrs {
			out = append(out, a.Name)
		}
		return out
	}
	for range 2 {
		if d := cmp.Diff([]string{"d", "ok.md"}, names("")); d != "" {
			t.Errorf("root (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{"b.md"}, names("d")); d != "" {
			t.Errorf("d (-want +got):\n%s", d)
		}
	}
	sort.Strings(got)
	want := []string{long, deepDir}
	sort.Strings(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("hidden (-want +got):\n%s", d)
	}
}

// TestNFDNames: a name spelled in Unicode NFD (as macOS writes "é": "e"
// and U+0301) is taken as its NFC form, the form of store paths: created,
// found, renamed and listed as that memory instead of refused.
func TestNFDNames(t *testing.T) {
	b := backend(t)
	st, err := b.Services.CreateStore(b.Ctx, trove.CreateStoreParams{Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	m := vfstest.Direct(t, vfs.Config{Services: b.Services, Principal: trove.PrincipalFrom(b.Ctx), Flat: true, Stores: []vfs.StoreConfig{{StoreID: st.ID}}}, nil)
	const nfd, nfc = "cafe\u0301/re\u0301sume\u0301.md", "café/résumé.md"
	if err := m.FS.Mkdir("cafe\u0301"); err != nil {
		t.Fatal(err)
	}
	if err := m.FS.WriteFile(nfd, []byte("un café")); err != nil {
		t.Fatalf("write %q: %v", nfd, err)
	}
	p, err := b.Services.ListMemories(b.Ctx, st.ID, trove.ListMemoriesParams{})
	if err != nil || len(p.Data) != 1 || p.Data[0].Memory.Path != "/"+nfc {
		t.Fatalf("store after the NFD write: %+v %v, want one memory at /%s", p, err, nfc)
	}
	for _, name := range []string{nfd, nfc} {
		if got, err := m.FS.ReadFile(name); err != nil || string(got) != "un café" {
			t.Errorf("read %q: %q %v", name, got, err)
		}
	}
	if names, err := m.FS.ReadDir("cafe\u0301"); err != nil || !cmp.Equal(names, []string{"résumé.md"}) {
		t.Errorf("listing of the NFD directory: %q %v, want the NFC name", names, err)
	}
	if err := m.FS.Rename(nfd, "cafe\u0301/the\u0301.md"); err != nil {
		t.Fatal(err)
	}
	p, err = b.Services.ListMemories(b.Ctx, st.ID, trove.ListMemoriesParams{})
	if err != nil || len(p.Data) != 1 || p.Data[0].Memory.Path != "/café/thé.md" {
		t.Errorf("store after the NFD rename: %+v %v", p, err)
	}
}
