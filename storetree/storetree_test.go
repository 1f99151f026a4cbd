package storetree_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
	"github.com/trovehq/trove/storetree"
)

const workspace = "wrkspc_storetree_test"

func agent() context.Context {
	return trove.WithPrincipal(context.Background(), &trove.Principal{
		WorkspaceID: workspace,
		Actor:       trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_storetree"},
	})
}

// newCore returns core over a fresh SQLite database.
func newCore(t testing.TB) *core.Service {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return core.New(db, core.Options{})
}

// servicesOnly exposes only trove.Services, hiding any trove.DirectoryService
// the wrapped value implements: a Tree over it must fall back to one memory
// at a time.
type servicesOnly struct{ trove.Services }

// unsupported answers the directory operations as a server that lacks the
// endpoints does (httpapi.Client maps a 404 of the extension to it).
type unsupported struct{ trove.Services }

func (unsupported) RenameDirectory(context.Context, string, trove.RenameDirectoryParams) (*trove.DirectoryChange, error) {
	return nil, fmt.Errorf("no directory endpoints: %w", errors.ErrUnsupported)
}

func (unsupported) DeleteDirectory(context.Context, string, trove.DeleteDirectoryParams) (*trove.DirectoryChange, error) {
	return nil, fmt.Errorf("no directory endpoints: %w", errors.ErrUnsupported)
}

// counting counts the service calls made through it, by method.
type counting struct {
	trove.Services
	mu sync.Mutex
	n  map[string]int
}

func (c *counting) add(m string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[m]++
}

func (c *counting) calls() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = nil
	return out
}

func (c *counting) GetMemory(ctx context.Context, s, id string, v trove.View) (*trove.Memory, error) {
	c.add("get")
	return c.Services.GetMemory(ctx, s, id, v)
}

func (c *counting) ListMemories(ctx context.Context, s string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	c.add("list")
	return c.Services.ListMemories(ctx, s, p)
}

// fixture is a store holding paths, with a Tree over svc(core).
func fixture(t *testing.T, wrap func(trove.Services) trove.Services, paths ...string) (context.Context, trove.Services, *storetree.Tree) {
	t.Helper()
	ctx := agent()
	var svc trove.Services = newCore(t)
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "tree"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if _, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: "content of " + p}); err != nil {
			t.Fatal(err)
		}
	}
	if wrap != nil {
		svc = wrap(svc)
	}
	return ctx, svc, storetree.New(svc, st.ID, trove.Limits{})
}

// paths lists the store's live paths with each memory's ID.
func paths(t *testing.T, ctx context.Context, svc trove.Services, storeID string) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := storetree.New(svc, storeID, trove.Limits{})
	if err := tr.Walk(ctx, trove.ViewBasic, func(m *trove.Memory) bool { out[m.Path] = m.ID; return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPathHelpers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p, parent, base, prefix string
	}{
		{"/a/b.md", "/a", "b.md", "/a/b.md/"},
		{"/a", "/", "a", "/a/"},
		{"a/b", "a", "b", "a/b/"},
		{"a", "", "a", "a/"},
	}
	for _, tt := range tests {
		if got := storetree.Parent(tt.p); got != tt.parent {
			t.Errorf("Parent(%q) = %q, want %q", tt.p, got, tt.parent)
		}
		if got := storetree.Base(tt.p); got != tt.base {
			t.Errorf("Base(%q) = %q, want %q", tt.p, got, tt.base)
		}
		if got := storetree.Prefix(tt.p); got != tt.prefix {
			t.Errorf("Prefix(%q) = %q, want %q", tt.p, got, tt.prefix)
		}
	}
	if storetree.Prefix("/") != "/" || storetree.Prefix("") != "/" {
		t.Error("the root's prefix is not /")
	}
	for _, tt := range []struct {
		p, dir string
		want   bool
	}{
		{"/a/b", "/a", true}, {"/ab", "/a", false}, {"/a", "/a", false}, {"/a", "/", true}, {"/", "/", false},
	} {
		if got := storetree.IsBelow(tt.p, tt.dir); got != tt.want {
			t.Errorf("IsBelow(%q, %q) = %v", tt.p, tt.dir, got)
		}
	}
	if got := storetree.Join("/", "x"); got != "/x" {
		t.Errorf("Join = %q", got)
	}
	if got := storetree.MemPath(storetree.Rel("/a/b")); got != "/a/b" {
		t.Errorf("MemPath(Rel) = %q", got)
	}
}

func TestLocalProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p    string
		want bool
	}{
		{"/a/" + strings.Repeat("x", 255), false},
		{"/a/" + strings.Repeat("x", 256), true},
		{"/" + strings.Repeat("é", 128) + "/b", true}, // 256 bytes
		{"/" + strings.Repeat("x", 300), true},
		{"/notes.md", false},
	}
	for _, tt := range tests {
		if got := storetree.LocalProblem(tt.p) != ""; got != tt.want {
			t.Errorf("LocalProblem(%.20q…) = %q, want a problem: %v", tt.p, storetree.LocalProblem(tt.p), tt.want)
		}
	}
}

func TestConflictName(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	long := func(n int, ext string) string { return "/d/" + strings.Repeat("n", n-len(ext)) + ext }
	tests := []struct {
		name, p, want string
	}{
		{"short", "/d/notes.md", "/d/notes.conflict-abcd1234-20260304T050607Z.md"},
		{"dotfile", "/.env", "/.env.conflict-abcd1234-20260304T050607Z"},
		{"no dir", "/x", "/x.conflict-abcd1234-20260304T050607Z"},
	}
	for _, tt := range tests {
		if got := storetree.ConflictName(tt.p, "abcd1234", now, nil); got != tt.want {
			t.Errorf("%s: ConflictName = %q, want %q", tt.name, got, tt.want)
		}
	}
	// Long names fit NAME_MAX, stay distinct and recognisable.
	seen := map[string]string{}
	for _, p := range []string{long(253, ".md"), long(255, ".md"), long(253, ""), "/d/" + strings.Repeat("é", 126) + ".md",
		long(200, ".md"), long(253, ".md")[:len(long(253, ".md"))-4] + "m.md", long(250, "."+strings.Repeat("e", 40))} {
		taken := map[string]bool{}
		for i := 0; i < 12; i++ {
			q := storetree.ConflictName(p, "abcd1234", now, func(s string) bool { return taken[s] })
			if n := len(storetree.Base(q)); n > storetree.MaxNameBytes {
				t.Errorf("copy of a %d-byte name is %d bytes", len(storetree.Base(p)), n)
			}
			if taken[q] {
				t.Errorf("ConflictName returned a taken name %q", q)
			}
			taken[q] = true
			if !storetree.IsConflictCopyOf(p, q) {
				t.Errorf("IsConflictCopyOf(%.30q…, %.30q…) = false", p, q)
			}
			if other, ok := seen[q]; ok && other != p {
				t.Errorf("copies of two names collide: %q", q)
			}
			seen[q] = p
			if storetree.LocalProblem(q) != "" {
				t.Errorf("copy %q cannot be a local file", q)
			}
		}
	}
	if storetree.IsConflictCopyOf("/d/notes.md", "/d/notes-old.md") || storetree.IsConflictCopyOf("/d/notes.md", "/e/notes.conflict-x-1.md") {
		t.Error("IsConflictCopyOf recognises a plain file")
	}
}

// TestLookupCost checks the index: a miss lists the parent once, a hit
// costs one read, and the Tree's own writes keep the index true.
func TestLookupCost(t *testing.T) {
	t.Parallel()
	c := &counting{}
	ctx, _, tr := fixture(t, func(s trove.Services) trove.Services { c.Services = s; return c }, "/a/x.md", "/a/y.md")
	m, err := tr.Lookup(ctx, "/a/x.md", trove.ViewFull)
	if err != nil || m == nil || *m.Content != "content of /a/x.md" {
		t.Fatalf("Lookup = %v, %v", m, err)
	}
	if diff := cmp.Diff(map[string]int{"list": 1, "get": 1}, c.calls()); diff != "" {
		t.Errorf("a miss (-want +got):\n%s", diff)
	}
	if _, err := tr.Lookup(ctx, "/a/y.md", trove.ViewBasic); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"get": 1}, c.calls()); diff != "" {
		t.Errorf("a sibling seen by the listing (-want +got):\n%s", diff)
	}
	np := "/b/x.md"
	if _, err := tr.Update(ctx, m.ID, trove.UpdateMemoryParams{Path: &np}); err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Cached("/a/x.md"); ok {
		t.Error("the old path is still indexed after a rename")
	}
	if e, ok := tr.Cached(np); !ok || e.ID != m.ID {
		t.Errorf("the new path is not indexed: %v", e)
	}
	if !tr.Implied("/b") || tr.Implied("/c") {
		t.Error("Implied is wrong after the rename")
	}
	got, err := tr.Lookup(ctx, "/a/x.md", trove.ViewBasic)
	if err != nil || got != nil {
		t.Errorf("Lookup of the old path = %v, %v; want nothing", got, err)
	}
	// A memory renamed behind the Tree's back is found where it went.
	other := storetree.New(c.Services, tr.StoreID(), trove.Limits{})
	back := "/a/z.md"
	if _, err := other.Update(ctx, m.ID, trove.UpdateMemoryParams{Path: &back}); err != nil {
		t.Fatal(err)
	}
	if got, err := tr.Lookup(ctx, np, trove.ViewBasic); err != nil || got != nil {
		t.Errorf("Lookup of a path renamed away = %v, %v; want nothing", got, err)
	}
	if e, ok := tr.Cached(back); !ok || e.ID != m.ID {
		t.Error("the read did not move the index entry")
	}
}

// dirServices are the ways a Tree reaches the store for directory
// operations: whatever core offers (the atomic path once core implements
// trove.DirectoryService), only trove.Services, and a server without the
// extension endpoints. The results must be the same.
var dirServices = []struct {
	name string
	wrap func(trove.Services) trove.Services
}{
	{"core", nil},
	{"services only", func(s trove.Services) trove.Services { return servicesOnly{s} }},
	{"unsupported", func(s trove.Services) trove.Services { return unsupported{s} }},
}

func TestRenameDir(t *testing.T) {
	t.Parallel()
	for _, ds := range dirServices {
		t.Run(ds.name, func(t *testing.T) {
			t.Parallel()
			ctx, svc, tr := fixture(t, ds.wrap, "/a/1.md", "/a/b/2.md", "/ab.md", "/keep.md")
			before := paths(t, ctx, svc, tr.StoreID())
			tr.RememberDir("/a/empty")
			moved, err := tr.RenameDir(ctx, "/a", "/z/a")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range moved {
				got = append(got, m.Path)
			}
			sort.Strings(got)
			if diff := cmp.Diff([]string{"/z/a/1.md", "/z/a/b/2.md"}, got); diff != "" {
				t.Errorf("moved (-want +got):\n%s", diff)
			}
			after := paths(t, ctx, svc, tr.StoreID())
			want := map[string]string{"/z/a/1.md": before["/a/1.md"], "/z/a/b/2.md": before["/a/b/2.md"], "/ab.md": before["/ab.md"], "/keep.md": before["/keep.md"]}
			if diff := cmp.Diff(want, after); diff != "" {
				t.Errorf("store after the rename (-want +got):\n%s", diff)
			}
			if !tr.IsRemembered("/z/a/empty") || tr.IsRemembered("/a/empty") {
				t.Error("the remembered directory did not move along")
			}
			if _, ok := tr.Cached("/a/1.md"); ok {
				t.Error("an old path is still indexed")
			}
			if e, ok := tr.Cached("/z/a/1.md"); !ok || e.ID != before["/a/1.md"] {
				t.Error("a new path is not indexed")
			}
			// Nothing below: nothing moves, no error.
			if moved, err := tr.RenameDir(ctx, "/nothing", "/else"); err != nil || len(moved) != 0 {
				t.Errorf("RenameDir of an empty directory = %v, %v", moved, err)
			}
		})
	}
}

// TestRenameDirAllOrNothing makes the last memory's new path collide with a
// memory that stays: nothing moves, on every path.
func TestRenameDirAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, ds := range dirServices {
		t.Run(ds.name, func(t *testing.T) {
			t.Parallel()
			ctx, svc, tr := fixture(t, ds.wrap, "/a/1.md", "/a/2.md", "/a/3.md", "/z/3.md")
			before := paths(t, ctx, svc, tr.StoreID())
			_, err := tr.RenameDir(ctx, "/a", "/z")
			if code := trove.ErrorCode(err); code != trove.EPATHCONFLICT {
				t.Fatalf("RenameDir onto a taken path: %v (code %q), want EPATHCONFLICT", err, code)
			}
			if diff := cmp.Diff(before, paths(t, ctx, svc, tr.StoreID())); diff != "" {
				t.Errorf("a failed rename changed the store (-before +after):\n%s", diff)
			}
			// A new path over the limits is refused before anything moves.
			_, err = tr.RenameDir(ctx, "/a", "/"+strings.Repeat("x/", 19)+"y")
			if code := trove.ErrorCode(err); code != trove.EINVALID {
				t.Fatalf("RenameDir past the segment limit: %v, want EINVALID", err)
			}
			if diff := cmp.Diff(before, paths(t, ctx, svc, tr.StoreID())); diff != "" {
				t.Errorf("a refused rename changed the store (-before +after):\n%s", diff)
			}
		})
	}
}

func TestDeleteDir(t *testing.T) {
	t.Parallel()
	for _, ds := range dirServices {
		t.Run(ds.name, func(t *testing.T) {
			t.Parallel()
			ctx, svc, tr := fixture(t, ds.wrap, "/a/1.md", "/a/b/2.md", "/ab.md")
			before := paths(t, ctx, svc, tr.StoreID())
			tr.RememberDir("/a/b/c")
			gone, err := tr.DeleteDir(ctx, "/a")
			if err != nil {
				t.Fatal(err)
			}
			if len(gone) != 2 {
				t.Errorf("deleted %d memories, want 2", len(gone))
			}
			if diff := cmp.Diff(map[string]string{"/ab.md": before["/ab.md"]}, paths(t, ctx, svc, tr.StoreID())); diff != "" {
				t.Errorf("store after the delete (-want +got):\n%s", diff)
			}
			if tr.IsRemembered("/a/b/c") || tr.Implied("/a") {
				t.Error("the deleted directory is still known")
			}
			if gone, err := tr.DeleteDir(ctx, "/a"); err != nil || len(gone) != 0 {
				t.Errorf("DeleteDir again = %v, %v", gone, err)
			}
		})
	}
}

func TestRememberedDirs(t *testing.T) {
	t.Parallel()
	tr := storetree.New(nil, "memstore_x", trove.Limits{})
	tr.RememberParents("/a/b/c.md")
	tr.RememberDir("/a/x")
	if diff := cmp.Diff([]string{"b", "x"}, tr.RememberedIn("/a")); diff != "" {
		t.Errorf("RememberedIn (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a"}, tr.RememberedIn("/")); diff != "" {
		t.Errorf("RememberedIn root (-want +got):\n%s", diff)
	}
	if !tr.RememberedBelow("/a") || tr.RememberedBelow("/a/b") {
		t.Error("RememberedBelow is wrong")
	}
	tr.ForgetAbove("/a/b/c.md")
	if tr.IsRemembered("/a") || tr.IsRemembered("/a/b") || !tr.IsRemembered("/a/x") {
		t.Error("ForgetAbove forgot the wrong directories")
	}
	tr.ForgetTree("/a")
	if tr.IsRemembered("/a/x") {
		t.Error("ForgetTree kept a directory below")
	}
}

func TestCreateConflictCopy(t *testing.T) {
	t.Parallel()
	name := "/" + strings.Repeat("n", 250) + ".md"
	ctx, _, tr := fixture(t, nil, name)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	first, err := tr.CreateConflictCopy(ctx, name, "sess1234", now, "mine", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Another Tree does not know the first copy: the store's EPATHCONFLICT
	// makes it take the next name.
	other := storetree.New(tr.Services(), tr.StoreID(), trove.Limits{})
	second, err := other.CreateConflictCopy(ctx, name, "sess1234", now, "mine too", nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.Path == second.Path || !storetree.IsConflictCopyOf(name, first.Path) || !storetree.IsConflictCopyOf(name, second.Path) {
		t.Errorf("copies %q and %q", first.Path, second.Path)
	}
	for _, p := range []string{first.Path, second.Path} {
		if storetree.LocalProblem(p) != "" {
			t.Errorf("copy %q does not fit a local name", p)
		}
	}
}

func TestReload(t *testing.T) {
	t.Parallel()
	ctx, svc, tr := fixture(t, nil, "/a/1.md", "/b.md")
	if _, err := tr.Lookup(ctx, "/b.md", trove.ViewBasic); err != nil {
		t.Fatal(err)
	}
	if tr.Complete() {
		t.Error("a partial index reports Complete")
	}
	b, _ := tr.Cached("/b.md")
	if err := svc.DeleteMemory(ctx, tr.StoreID(), b.ID, ""); err != nil {
		t.Fatal(err)
	}
	all, err := tr.Reload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Path != "/a/1.md" || !tr.Complete() || tr.Len() != 1 {
		t.Errorf("Reload = %v; Complete %v, Len %d", all, tr.Complete(), tr.Len())
	}
	if _, ok := tr.Cached("/b.md"); ok {
		t.Error("a memory deleted behind the Tree's back survived Reload")
	}
	if diff := cmp.Diff([]string{"/a/1.md"}, tr.Below("/")); diff != "" {
		t.Errorf("Below (-want +got):\n%s", diff)
	}
	if _, err := tr.RenameDir(ctx, "/a", "/a/b"); trove.ErrorCode(err) != trove.EINVALID {
		t.Errorf("RenameDir into itself: %v, want EINVALID", err)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	ctx, _, tr := fixture(t, nil, "/a/b.md", "/f.md")
	tr.RememberDir("/empty")
	tr.RememberDir("/f.md/under")
	for _, tc := range []struct {
		name string
		path string
		want storetree.Kind
	}{
		{"root", "/", storetree.KindDir},
		{"implied directory", "/a", storetree.KindDir},
		{"memory", "/a/b.md", storetree.KindFile},
		{"nothing", "/a/c.md", storetree.KindNone},
		{"nothing below nothing", "/x/y/z.md", storetree.KindNone},
		{"below a memory", "/f.md/g.md", storetree.KindNotDir},
		{"remembered directory", "/empty", storetree.KindDir},
		{"invalid", "/a/../b", storetree.KindInvalid},
		{"relative", "a/b.md", storetree.KindInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, m, err := tr.Classify(ctx, tc.path, trove.ViewFull)
			if err != nil {
				t.Fatal(err)
			}
			if k != tc.want {
				t.Errorf("Classify(%q) = %v, want %v", tc.path, k, tc.want)
			}
			if (m != nil) != (k == storetree.KindFile) {
				t.Errorf("Classify(%q) memory = %v for kind %v", tc.path, m, k)
			}
			if m != nil && (m.Content == nil || *m.Content != "content of "+tc.path) {
				t.Errorf("Classify(%q) read no content in the full view", tc.path)
			}
		})
	}
	if tr.IsRemembered("/f.md/under") {
		t.Error("a memory found above a remembered directory left it remembered")
	}
}

// failing fails every listing or every read of the store.
type failing struct {
	trove.Services
	list bool
}

func (f failing) ListMemories(ctx context.Context, s string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	if f.list {
		return nil, trove.Errorf(trove.EUNAVAILABLE, "listing down")
	}
	return f.Services.ListMemories(ctx, s, p)
}

func (f failing) GetMemory(ctx context.Context, s, id string, v trove.View) (*trove.Memory, error) {
	if !f.list {
		return nil, trove.Errorf(trove.EUNAVAILABLE, "reads down")
	}
	return f.Services.GetMemory(ctx, s, id, v)
}

func TestClassifyError(t *testing.T) {
	t.Parallel()
	for _, listing := range []bool{true, false} {
		t.Run(fmt.Sprintf("listing=%v", listing), func(t *testing.T) {
			t.Parallel()
			ctx, _, tr := fixture(t, func(s trove.Services) trove.Services { return failing{s, listing} }, "/a.md")
			k, m, err := tr.Classify(ctx, "/a.md", trove.ViewBasic)
			var ce *storetree.ClassifyError
			if !errors.As(err, &ce) || ce.Listing != listing || trove.ErrorCode(err) != trove.EUNAVAILABLE {
				t.Fatalf("Classify = %v, %v, %v; want a ClassifyError with Listing %v", k, m, err, listing)
			}
			if k != storetree.KindNone || m != nil {
				t.Errorf("Classify returned %v, %v with an error", k, m)
			}
		})
	}
}
