package coretest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/trovehq/trove"
)

// Directory operations (the trove.DirectoryService extension): renames and
// deletes of a directory with their versions and actors, "/a" against
// "/ab", conflicts, preconditions, limits, archived stores, sessions, paging
// within the transaction, and a concurrent create into the directory. Every
// refused operation must leave the store exactly as it was.

// dirEnv is the suite's env (a service over a fresh database, an API key
// of workspace A) with the directory tests' own fixtures.
type dirEnv struct{ *env }

func newDirEnv(t *testing.T, open Opener, limits trove.Limits) *dirEnv {
	t.Helper()
	return &dirEnv{newEnv(t, open, limits)}
}

// fill creates a store holding a memory at each path (content = path) and
// returns it with the memories by path.
func (e *dirEnv) fill(t *testing.T, paths ...string) (*trove.Store, map[string]*trove.Memory) {
	t.Helper()
	st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "dirs"})
	if err != nil {
		t.Fatalf("CreateStore: %v", err)
	}
	ms := map[string]*trove.Memory{}
	for _, p := range paths {
		m, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: "content of " + p})
		if err != nil {
			t.Fatalf("CreateMemory(%q): %v", p, err)
		}
		ms[p] = m
	}
	return st, ms
}

// state is every live memory (path → ID@hash) and the number of versions
// of a store: what a refused operation must leave unchanged.
func (e *dirEnv) state(t *testing.T, storeID string) (map[string]string, int) {
	t.Helper()
	mems := map[string]string{}
	for it, err := range trove.Items(e.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryListItem], error) {
		return e.svc.ListMemories(ctx, storeID, trove.ListMemoriesParams{Limit: 100, Cursor: cursor})
	}) {
		if err != nil {
			t.Fatalf("ListMemories: %v", err)
		}
		mems[it.Memory.Path] = it.Memory.ID + "@" + it.Memory.SHA256
	}
	return mems, len(e.versions(t, storeID, trove.ListVersionsParams{}))
}

func (e *dirEnv) versions(t *testing.T, storeID string, p trove.ListVersionsParams) []trove.MemoryVersion {
	t.Helper()
	p.Limit = 100
	out, err := trove.AllItems(e.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryVersion], error) {
		p.Cursor = cursor
		return e.svc.ListVersions(ctx, storeID, p)
	})
	if err != nil {
		t.Fatalf("ListVersions: %v", err)
	}
	return out
}

func (e *dirEnv) paths(t *testing.T, storeID string) []string {
	t.Helper()
	mems, _ := e.state(t, storeID)
	var out []string
	for p := range mems {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// changePaths returns the IDs and paths of a DirectoryChange, in order.
func changePaths(c *trove.DirectoryChange) []string {
	var out []string
	for _, m := range c.Memories {
		out = append(out, m.ID+" "+m.Path)
	}
	return out
}

// checkVersions checks that each memory of c has exactly one version of op
// after since, attributed to by, recording the memory's path, and for a
// rename its unchanged content.
func (e *dirEnv) checkVersions(t *testing.T, storeID string, c *trove.DirectoryChange, op trove.Operation, by trove.Actor, before map[string]*trove.Memory) {
	t.Helper()
	for _, m := range c.Memories {
		vs := e.versions(t, storeID, trove.ListVersionsParams{MemoryID: m.ID, Operation: op, View: trove.ViewFull})
		if len(vs) != 1 {
			t.Fatalf("memory %s (%s) has %d %s versions, want 1", m.ID, m.Path, len(vs), op)
		}
		v := vs[0]
		if v.CreatedBy == nil || *v.CreatedBy != by {
			t.Errorf("version of %s created by %+v, want %+v", m.Path, v.CreatedBy, by)
		}
		if v.Path == nil || *v.Path != m.Path {
			t.Errorf("version of %s records path %v", m.Path, v.Path)
		}
		old := before[m.ID]
		switch op {
		case trove.OpModified:
			if v.ID != m.VersionID {
				t.Errorf("memory %s reports version %s, its new version is %s", m.Path, m.VersionID, v.ID)
			}
			if v.Content == nil || *v.Content != *old.Content || v.SHA256 == nil || *v.SHA256 != old.SHA256 {
				t.Errorf("version of %s does not carry the memory's content unchanged", m.Path)
			}
			if !m.UpdatedAt.Equal(v.CreatedAt) || !m.UpdatedAt.After(old.UpdatedAt) {
				t.Errorf("memory %s updated_at %v, version at %v, was %v", m.Path, m.UpdatedAt, v.CreatedAt, old.UpdatedAt)
			}
		case trove.OpDeleted:
			if v.Content != nil || v.SHA256 != nil || v.SizeBytes != nil {
				t.Errorf("deleted version of %s keeps content, hash or size", m.Path)
			}
		}
	}
}

func testDirRename(t *testing.T, open Opener) {
	e := newDirEnv(t, open, trove.Limits{})
	st, ms := e.fill(t, "/a.md", "/a/x.md", "/a/b/y.md", "/a/b/c/z.md", "/ab/w.md", "/n/other.md")
	before := map[string]*trove.Memory{}
	for _, m := range ms {
		full, err := e.svc.GetMemory(e.ctx, st.ID, m.ID, trove.ViewFull)
		if err != nil {
			t.Fatal(err)
		}
		before[m.ID] = full
	}
	_, nVersions := e.state(t, st.ID)

	c, err := e.svc.RenameDirectory(e.ctx, st.ID, trove.RenameDirectoryParams{From: "/a", To: "/n"})
	if err != nil {
		t.Fatalf("RenameDirectory(/a → /n): %v", err)
	}
	want := []string{ // ascending old paths: /a/b/c/z.md < /a/b/y.md < /a/x.md
		ms["/a/b/c/z.md"].ID + " /n/b/c/z.md",
		ms["/a/b/y.md"].ID + " /n/b/y.md",
		ms["/a/x.md"].ID + " /n/x.md",
	}
	if diff := cmp.Diff(want, changePaths(c)); diff != "" {
		t.Fatalf("renamed (-want +got):\n%s", diff)
	}
	for _, m := range c.Memories {
		if m.Content != nil || m.StoreID != st.ID || m.SHA256 != before[m.ID].SHA256 || m.SizeBytes != before[m.ID].SizeBytes || !m.CreatedAt.Equal(before[m.ID].CreatedAt) {
			t.Errorf("renamed memory %+v does not keep its content hash, size and creation without the content", m)
		}
	}
	if diff := cmp.Diff([]string{"/a.md", "/ab/w.md", "/n/b/c/z.md", "/n/b/y.md", "/n/other.md", "/n/x.md"}, e.paths(t, st.ID)); diff != "" {
		t.Fatalf("paths after the rename (-want +got):\n%s", diff)
	}
	e.checkVersions(t, st.ID, c, trove.OpModified, trove.NewActor(trove.ActorAPI, e.keyID), before)
	if _, n := e.state(t, st.ID); n != nVersions+3 {
		t.Fatalf("%d versions after renaming 3 memories, want %d", n, nVersions+3)
	}
	// The memory keeps its ID: reading it by ID gives the new path and the
	// same content.
	got, err := e.svc.GetMemory(e.ctx, st.ID, ms["/a/x.md"].ID, trove.ViewFull)
	if err != nil || got.Path != "/n/x.md" || *got.Content != "content of /a/x.md" {
		t.Fatalf("GetMemory after the rename = %+v, %v", got, err)
	}
	// The old directory is gone.
	_, err = e.svc.RenameDirectory(e.ctx, st.ID, trove.RenameDirectoryParams{From: "/a", To: "/q"})
	wantCode(t, "rename the old directory again", err, trove.ENOTFOUND)
}

func testDirRenameNested(t *testing.T, open Opener) {
	cases := []struct {
		name     string
		paths    []string
		from, to string
		want     []string // every path after the rename
	}{
		{
			name:  "to an ancestor, new paths taking old ones",
			paths: []string{"/a/b/x", "/a/b/b/x", "/a/b/b/b/x", "/a/c"},
			from:  "/a/b", to: "/a",
			want: []string{"/a/b/b/x", "/a/b/x", "/a/c", "/a/x"},
		},
		{
			name:  "to the root's child",
			paths: []string{"/p/q/r/s.md", "/p/q/r/t/u.md"},
			from:  "/p/q/r", to: "/p",
			want: []string{"/p/s.md", "/p/t/u.md"},
		},
		{
			name:  "deeper elsewhere",
			paths: []string{"/a/x", "/a/y/z", "/z/k"},
			from:  "/a", to: "/z/y/a",
			want: []string{"/z/k", "/z/y/a/x", "/z/y/a/y/z"},
		},
		{
			name:  "a prefix by bytes is not a directory",
			paths: []string{"/a/x", "/ab/x", "/a-b/x", "/a.md"},
			from:  "/a", to: "/c",
			want: []string{"/a-b/x", "/a.md", "/ab/x", "/c/x"},
		},
		{
			name:  "to a sibling sharing bytes",
			paths: []string{"/ab/x", "/a/y"},
			from:  "/ab", to: "/a/b",
			want: []string{"/a/b/x", "/a/y"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDirEnv(t, open, trove.Limits{})
			st, _ := e.fill(t, tc.paths...)
			_, n := e.state(t, st.ID)
			c, err := e.svc.RenameDirectory(e.ctx, st.ID, trove.RenameDirectoryParams{From: tc.from, To: tc.to})
			if err != nil {
				t.Fatalf("RenameDirectory(%s → %s): %v", tc.from, tc.to, err)
			}
			if diff := cmp.Diff(tc.want, e.paths(t, st.ID)); diff != "" {
				t.Fatalf("paths (-want +got):\n%s", diff)
			}
			if _, n2 := e.state(t, st.ID); n2 != n+len(c.Memories) {
				t.Fatalf("%d versions after renaming %d memories, had %d", n2, len(c.Memories), n)
			}
		})
	}
}

func testDirDelete(t *testing.T, open Opener) {
	e := newDirEnv(t, open, trove.Limits{})
	st, ms := e.fill(t, "/a.md", "/a/x.md", "/a/b/y.md", "/ab/w.md")
	before := map[string]*trove.Memory{}
	for _, m := range ms {
		before[m.ID] = m
	}
	_, nVersions := e.state(t, st.ID)
	c, err := e.svc.DeleteDirectory(e.ctx, st.ID, trove.DeleteDirectoryParams{Path: "/a"})
	if err != nil {
		t.Fatalf("DeleteDirectory(/a): %v", err)
	}
	want := []string{ms["/a/b/y.md"].ID + " /a/b/y.md", ms["/a/x.md"].ID + " /a/x.md"}
	if diff := cmp.Diff(want, changePaths(c)); diff != "" {
		t.Fatalf("deleted (-want +got):\n%s", diff)
	}
	for _, m := range c.Memories {
		if m.Content != nil || m.SHA256 != before[m.ID].SHA256 || m.VersionID != before[m.ID].VersionID {
			t.Errorf("deleted memory %+v is not its last state without content", m)
		}
	}
	if diff := cmp.Diff([]string{"/a.md", "/ab/w.md"}, e.paths(t, st.ID)); diff != "" {
		t.Fatalf("paths after the delete (-want +got):\n%s", diff)
	}
	e.checkVersions(t, st.ID, c, trove.OpDeleted, trove.NewActor(trove.ActorAPI, e.keyID), before)
	if _, n := e.state(t, st.ID); n != nVersions+2 {
		t.Fatalf("%d versions after deleting 2 memories, want %d", n, nVersions+2)
	}
	_, err = e.svc.GetMemory(e.ctx, st.ID, ms["/a/x.md"].ID, "")
	wantCode(t, "GetMemory(deleted)", err, trove.ENOTFOUND)
	// The paths are free again.
	if _, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/a/x.md"}); err != nil {
		t.Fatalf("CreateMemory at a deleted path: %v", err)
	}
	_, err = e.svc.DeleteDirectory(e.ctx, st.ID, trove.DeleteDirectoryParams{Path: "/a/b"})
	wantCode(t, "delete the deleted directory again", err, trove.ENOTFOUND)
}

// testDirRefused checks every refusal that depends on the store's content
// or the arguments, and that a refused operation changes nothing.
func testDirRefused(t *testing.T, open Opener) {
	e := newDirEnv(t, open, trove.Limits{})
	st, ms := e.fill(t, "/a/x.md", "/a/b/y.md", "/a.md", "/t", "/u/v", "/n/x.md", "/m/b", "/k/x.md/deep", "/j/b/y.md/z")
	otherCtx, _ := e.keyCtx(t, "wrkspc_other")
	rename := func(ctx context.Context, storeID, from, to string) error {
		_, err := e.svc.RenameDirectory(ctx, storeID, trove.RenameDirectoryParams{From: from, To: to})
		return err
	}
	del := func(ctx context.Context, storeID, path string) error {
		_, err := e.svc.DeleteDirectory(ctx, storeID, trove.DeleteDirectoryParams{Path: path})
		return err
	}
	cases := []struct {
		name     string
		call     func() error
		code     string
		conflict string // ConflictingPath for EPATHCONFLICT
	}{
		{"rename from relative", func() error { return rename(e.ctx, st.ID, "a", "/q") }, trove.EINVALID, ""},
		{"rename from with trailing slash", func() error { return rename(e.ctx, st.ID, "/a/", "/q") }, trove.EINVALID, ""},
		{"rename from empty", func() error { return rename(e.ctx, st.ID, "", "/q") }, trove.EINVALID, ""},
		{"rename from root", func() error { return rename(e.ctx, st.ID, "/", "/q") }, trove.EINVALID, ""},
		{"rename to dot-dot", func() error { return rename(e.ctx, st.ID, "/a", "/q/..") }, trove.EINVALID, ""},
		{"rename to control character", func() error { return rename(e.ctx, st.ID, "/a", "/q\x01") }, trove.EINVALID, ""},
		{"rename to itself", func() error { return rename(e.ctx, st.ID, "/a", "/a") }, trove.EINVALID, ""},
		{"rename into its own subtree", func() error { return rename(e.ctx, st.ID, "/a", "/a/b/c") }, trove.EINVALID, ""},
		{"rename unknown directory", func() error { return rename(e.ctx, st.ID, "/nothing", "/q") }, trove.ENOTFOUND, ""},
		{"rename a memory as a directory", func() error { return rename(e.ctx, st.ID, "/a.md", "/q") }, trove.ENOTFOUND, ""},
		{"rename in unknown store", func() error { return rename(e.ctx, "memstore_nope", "/a", "/q") }, trove.ENOTFOUND, ""},
		{"rename in another workspace's store", func() error { return rename(otherCtx, st.ID, "/a", "/q") }, trove.ENOTFOUND, ""},
		{"rename without principal", func() error { return rename(context.Background(), st.ID, "/a", "/q") }, trove.EUNAUTHENTICATED, ""},
		{"rename onto a memory", func() error { return rename(e.ctx, st.ID, "/a", "/t") }, trove.EPATHCONFLICT, "/t"},
		{"rename below a memory", func() error { return rename(e.ctx, st.ID, "/a", "/t/q") }, trove.EPATHCONFLICT, "/t"},
		{"rename onto an existing path", func() error { return rename(e.ctx, st.ID, "/a", "/n") }, trove.EPATHCONFLICT, "/n/x.md"},
		{"rename making a memory a directory", func() error { return rename(e.ctx, st.ID, "/a", "/m") }, trove.EPATHCONFLICT, "/m/b"},
		{"rename making a directory a memory", func() error { return rename(e.ctx, st.ID, "/a", "/k") }, trove.EPATHCONFLICT, "/k/x.md/deep"},
		{"rename making a deeper directory a memory", func() error { return rename(e.ctx, st.ID, "/a", "/j") }, trove.EPATHCONFLICT, "/j/b/y.md/z"},
		{"rename onto a directory's memory", func() error { return rename(e.ctx, st.ID, "/a", "/u/v") }, trove.EPATHCONFLICT, "/u/v"},
		{"delete relative", func() error { return del(e.ctx, st.ID, "a") }, trove.EINVALID, ""},
		{"delete root", func() error { return del(e.ctx, st.ID, "/") }, trove.EINVALID, ""},
		{"delete trailing slash", func() error { return del(e.ctx, st.ID, "/a/") }, trove.EINVALID, ""},
		{"delete unknown directory", func() error { return del(e.ctx, st.ID, "/nothing") }, trove.ENOTFOUND, ""},
		{"delete a memory as a directory", func() error { return del(e.ctx, st.ID, "/a.md") }, trove.ENOTFOUND, ""},
		{"delete in unknown store", func() error { return del(e.ctx, "memstore_nope", "/a") }, trove.ENOTFOUND, ""},
		{"delete in another workspace's store", func() error { return del(otherCtx, st.ID, "/a") }, trove.ENOTFOUND, ""},
		{"delete without principal", func() error { return del(context.Background(), st.ID, "/a") }, trove.EUNAUTHENTICATED, ""},
	}
	mems, nVersions := e.state(t, st.ID)
	for _, tc := range cases {
		err := tc.call()
		wantCode(t, tc.name, err, tc.code)
		if tc.conflict != "" {
			te := &trove.Error{}
			if !errors.As(err, &te) || te.ConflictingPath != tc.conflict || te.ConflictingMemoryID != ms[tc.conflict].ID {
				t.Fatalf("%s: conflict %q (%s), want %q (%s)", tc.name, te.ConflictingPath, te.ConflictingMemoryID, tc.conflict, ms[tc.conflict].ID)
			}
		}
		mems2, n2 := e.state(t, st.ID)
		if diff := cmp.Diff(mems, mems2); diff != "" || n2 != nVersions {
			t.Fatalf("%s changed the store: %d versions (had %d), memories (-before +after):\n%s", tc.name, n2, nVersions, diff)
		}
	}
}

func testDirPreconditions(t *testing.T, open Opener) {
	e := newDirEnv(t, open, trove.Limits{})
	st, ms := e.fill(t, "/d/x", "/d/y", "/d/z/w", "/other")
	x, y, w := ms["/d/x"], ms["/d/y"], ms["/d/z/w"]
	exact := []trove.MemoryPrecondition{{MemoryID: w.ID, SHA256: w.SHA256}, {MemoryID: x.ID, SHA256: x.SHA256}, {MemoryID: y.ID, SHA256: y.SHA256}}
	bad := []struct {
		name   string
		expect []trove.MemoryPrecondition
		code   string
	}{
		{"one missing", exact[:2], trove.EPRECONDITION},
		{"one extra", append(exact[:3:3], trove.MemoryPrecondition{MemoryID: ms["/other"].ID, SHA256: ms["/other"].SHA256}), trove.EPRECONDITION},
		{"unknown ID", append(exact[:3:3], trove.MemoryPrecondition{MemoryID: "mem_nope", SHA256: sha("")}), trove.EPRECONDITION},
		{"wrong hash", []trove.MemoryPrecondition{exact[0], exact[1], {MemoryID: y.ID, SHA256: sha("other")}}, trove.EPRECONDITION},
		{"empty but not nil", []trove.MemoryPrecondition{}, trove.EPRECONDITION},
		{"malformed hash", []trove.MemoryPrecondition{exact[0], exact[1], {MemoryID: y.ID, SHA256: strings.ToUpper(y.SHA256)}}, trove.EINVALID},
		{"no ID", []trove.MemoryPrecondition{exact[0], exact[1], {SHA256: y.SHA256}}, trove.EINVALID},
		{"ID twice", append(exact[:3:3], exact[0]), trove.EINVALID},
	}
	mems, n := e.state(t, st.ID)
	for _, tc := range bad {
		_, err := e.svc.RenameDirectory(e.ctx, st.ID, trove.RenameDirectoryParams{From: "/d", To: "/e", Expect: tc.expect})
		wantCode(t, "rename, "+tc.name, err, tc.code)
		_, err = e.svc.DeleteDirectory(e.ctx, st.ID, trove.DeleteDirectoryParams{Path: "/d", Expect: tc.expect})
		wantCode(t, "delete, "+tc.name, err, tc.code)
		mems2, n2 := e.state(t, st.ID)
		if diff := cmp.Diff(mems, mems2); diff != "" || n2 != n {
			t.Fatalf("%s changed the store (-before +after):\n%s", tc.name, diff)
		}
	}
	// The message names the first difference.
	_, err := e.svc.RenameDirectory(e.ctx, st.ID, trove.RenameDirectoryParams{From: "/d", To: "/e", Expect: exact[1:]})
	if msg := trove.ErrorMessage(err); !strings.Contains(msg, w.ID) || !strings.Contains(msg, "/d/z/w") {
		t.Fatalf("precondition message %q does not name %s at /d/z/w", msg, w.ID)
	}

	// Matching, in any order: the rename happens; then a delete expecting
	// the renamed memories with their hashes.
	rev := []trove.MemoryPrecondition{exact[2], exact[0], exact[1]}
	if _, err := e.svc.RenameDirectory(e.ctx, st.ID, trove.RenameDirectoryParams{From: "/d", To: "/e", Expect: rev}); err != nil {
		t.Fatalf("RenameDirectory with matching expect: %v", err)
	}
	if _, err := e.svc.DeleteDirectory(e.ctx, st.ID, trove.DeleteDirectoryParams{Path: "/e", Expect: exact}); err != nil {
		t.Fatalf("DeleteDirectory with matching expect: %v", err)
	}
	if diff := cmp.Diff([]string{"/other"}, e.paths(t, st.ID)); diff != "" {
		t.Fatalf("paths (-want +got):\n%s", diff)
	}
}

func testDirLimits(t *testing.T, open Opener) {
	e := newDirEnv(t, open, trove.Limits{MaxPathBytes: 24, MaxPathSegments: 4})
	st, _ := e.fill(t, "/a/b/c", "/a/bbbbbbbbbbbbbbbbbb", "/s/t")
	mems, n := e.state(t, st.ID)
	for _, tc := range []struct{ from, to string }{
		{"/a", "/a23456"},                     // "/a23456/bbbbbbbbbbbbbbbbbb" is 26 bytes
		{"/a", "/x/y/z"},                      // "/x/y/z/b/c" has 5 segments
		{"/s", "/q/r/s/t/u"},                  // To itself has 5 segments
		{"/s", "/" + strings.Repeat("q", 24)}, // To itself is 25 bytes
	} {
		_, err := e.svc.RenameDirectory(e.ctx, st.ID, trove.RenameDirectoryParams{From: tc.from, To: tc.to})
		wantCode(t, fmt.Sprintf("rename %s → %s", tc.from, tc.to), err, trove.EINVALID)
		mems2, n2 := e.state(t, st.ID)
		if diff := cmp.Diff(mems, mems2); diff != "" || n2 != n {
			t.Fatalf("a refused rename changed the store (-before +after):\n%s", diff)
		}
	}
	if _, err := e.svc.RenameDirectory(e.ctx, st.ID, trove.RenameDirectoryParams{From: "/a", To: "/a23"}); err != nil {
		t.Fatalf("a rename just within the limits: %v", err)
	}
}

func testDirArchived(t *testing.T, open Opener) {
	e := newDirEnv(t, open, trove.Limits{})
	st, _ := e.fill(t, "/d/x", "/d/y", "/k")
	if _, err := e.svc.ArchiveStore(e.ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	mems, n := e.state(t, st.ID)
	_, err := e.svc.RenameDirectory(e.ctx, st.ID, trove.RenameDirectoryParams{From: "/d", To: "/e"})
	wantCode(t, "rename in an archived store", err, trove.EINVALID)
	if mems2, n2 := e.state(t, st.ID); !cmp.Equal(mems, mems2) || n2 != n {
		t.Fatal("a refused rename changed the archived store")
	}
	// Deleting memories is allowed on an archived store, one or many.
	c, err := e.svc.DeleteDirectory(e.ctx, st.ID, trove.DeleteDirectoryParams{Path: "/d"})
	if err != nil || len(c.Memories) != 2 {
		t.Fatalf("DeleteDirectory in an archived store = %+v, %v", c, err)
	}
	if diff := cmp.Diff([]string{"/k"}, e.paths(t, st.ID)); diff != "" {
		t.Fatalf("paths (-want +got):\n%s", diff)
	}
}

func testDirSession(t *testing.T, open Opener) {
	e := newDirEnv(t, open, trove.Limits{})
	rw, rwm := e.fill(t, "/d/x", "/d/y")
	ro, _ := e.fill(t, "/d/x")
	hidden, _ := e.fill(t, "/d/x")
	se, token, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{
		{StoreID: rw.ID}, {StoreID: ro.ID, Access: trove.AccessReadOnly},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.svc.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	sctx := trove.WithPrincipal(context.Background(), p)
	for _, tc := range []struct {
		store *trove.Store
		code  string
	}{{ro, trove.EFORBIDDEN}, {hidden, trove.ENOTFOUND}} {
		mems, n := e.state(t, tc.store.ID)
		_, err := e.svc.RenameDirectory(sctx, tc.store.ID, trove.RenameDirectoryParams{From: "/d", To: "/e"})
		wantCode(t, "session rename", err, tc.code)
		_, err = e.svc.DeleteDirectory(sctx, tc.store.ID, trove.DeleteDirectoryParams{Path: "/d"})
		wantCode(t, "session delete", err, tc.code)
		if mems2, n2 := e.state(t, tc.store.ID); !cmp.Equal(mems, mems2) || n2 != n {
			t.Fatal("a refused session operation changed the store")
		}
	}
	// A read_write session renames, and its versions name the session.
	before := map[string]*trove.Memory{}
	for _, m := range rwm {
		full, err := e.svc.GetMemory(e.ctx, rw.ID, m.ID, trove.ViewFull)
		if err != nil {
			t.Fatal(err)
		}
		before[m.ID] = full
	}
	c, err := e.svc.RenameDirectory(sctx, rw.ID, trove.RenameDirectoryParams{From: "/d", To: "/e"})
	if err != nil {
		t.Fatalf("session RenameDirectory: %v", err)
	}
	e.checkVersions(t, rw.ID, c, trove.OpModified, trove.NewActor(trove.ActorSession, se.ID), before)
	c, err = e.svc.DeleteDirectory(sctx, rw.ID, trove.DeleteDirectoryParams{Path: "/e"})
	if err != nil {
		t.Fatalf("session DeleteDirectory: %v", err)
	}
	e.checkVersions(t, rw.ID, c, trove.OpDeleted, trove.NewActor(trove.ActorSession, se.ID), before)
}

// testDirPaging renames and deletes a directory larger than one page of the
// driver listing core reads inside the transaction.
func testDirPaging(t *testing.T, open Opener) {
	e := newDirEnv(t, open, trove.Limits{})
	st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	const n, workers = 510, 8 // core reads 500 rows per driver listing
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				p := fmt.Sprintf("/big/%02d/m%04d", i%7, i)
				if _, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: p}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c, err := e.svc.RenameDirectory(e.ctx, st.ID, trove.RenameDirectoryParams{From: "/big", To: "/b"})
	if err != nil {
		t.Fatalf("RenameDirectory of %d memories: %v", n, err)
	}
	if len(c.Memories) != n {
		t.Fatalf("renamed %d memories, want %d", len(c.Memories), n)
	}
	for i := 1; i < len(c.Memories); i++ {
		if c.Memories[i-1].Path >= c.Memories[i].Path {
			t.Fatalf("renamed memories out of order at %d: %q, %q", i, c.Memories[i-1].Path, c.Memories[i].Path)
		}
	}
	paths := e.paths(t, st.ID)
	if len(paths) != n || !strings.HasPrefix(paths[0], "/b/") || !strings.HasPrefix(paths[n-1], "/b/") {
		t.Fatalf("%d paths after the rename, first %q", len(paths), paths[0])
	}
	if vs := e.versions(t, st.ID, trove.ListVersionsParams{Operation: trove.OpModified}); len(vs) != n {
		t.Fatalf("%d modified versions, want %d", len(vs), n)
	}
	c, err = e.svc.DeleteDirectory(e.ctx, st.ID, trove.DeleteDirectoryParams{Path: "/b"})
	if err != nil || len(c.Memories) != n {
		t.Fatalf("DeleteDirectory of %d memories: %d, %v", n, len(c.Memories), err)
	}
	if paths := e.paths(t, st.ID); len(paths) != 0 {
		t.Fatalf("%d memories left after deleting the directory", len(paths))
	}
}

// testDirConcurrentCreate races a create into a directory with its rename
// (and then its delete): the create either happened before (and its memory
// moved, or was deleted, with the rest) or after (and its memory stays at
// the old path), never half of each.
func testDirConcurrentCreate(t *testing.T, open Opener) {
	e := newDirEnv(t, open, trove.Limits{})
	const rounds, size = 8, 20
	for r := range rounds {
		st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: fmt.Sprintf("race %d", r)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range size {
			if _, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/d/m%02d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		deleting := r%2 == 1
		start := make(chan struct{})
		var c *trove.DirectoryChange
		var opErr, createErr error
		var created *trove.Memory
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			if deleting {
				c, opErr = e.svc.DeleteDirectory(e.ctx, st.ID, trove.DeleteDirectoryParams{Path: "/d"})
			} else {
				c, opErr = e.svc.RenameDirectory(e.ctx, st.ID, trove.RenameDirectoryParams{From: "/d", To: "/e"})
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			created, createErr = e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/d/new"})
		}()
		close(start)
		wg.Wait()
		if opErr != nil || createErr != nil {
			t.Fatalf("round %d: directory operation: %v; create: %v", r, opErr, createErr)
		}
		included := false
		for _, m := range c.Memories {
			if m.ID == created.ID {
				included = true
			}
		}
		wantN := size
		if included {
			wantN++
		}
		if len(c.Memories) != wantN {
			t.Fatalf("round %d: the operation changed %d memories (created one included: %v)", r, len(c.Memories), included)
		}
		var want []string
		switch {
		case deleting && !included:
			want = []string{"/d/new"}
		case !deleting:
			for i := range size {
				want = append(want, fmt.Sprintf("/e/m%02d", i))
			}
			if included {
				want = append(want, "/e/new")
			} else {
				want = append([]string{"/d/new"}, want...)
			}
		}
		if diff := cmp.Diff(want, e.paths(t, st.ID), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round %d (delete %v, created memory included %v): paths (-want +got):\n%s", r, deleting, included, diff)
		}
	}
}
