package coretest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
)

// --- memories -----------------------------------------------------------

func testMemoryCreate(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	content := "Always use 2-space indentation.\r\n"
	m, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/prefs/format.md", Content: content})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.ID, trove.PrefixMemory) || !strings.HasPrefix(m.VersionID, trove.PrefixVersion) ||
		m.StoreID != s.ID || m.Path != "/prefs/format.md" || m.Content != nil || m.SizeBytes != len(content) ||
		m.SHA256 != sha(content) || !m.CreatedAt.Equal(m.UpdatedAt) {
		t.Fatalf("created memory (basic view) = %+v", m)
	}
	full, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	want := *m
	want.Content = &content
	if diff := cmp.Diff(&want, full); diff != "" {
		t.Fatalf("GetMemory default (full) view (-want +got):\n%s", diff)
	}
	basic, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, trove.ViewBasic)
	if err != nil || basic.Content != nil || basic.SHA256 != m.SHA256 || basic.SizeBytes != m.SizeBytes {
		t.Fatalf("GetMemory basic = %+v, %v", basic, err)
	}
	v, err := e.svc.GetVersion(e.ctx, s.ID, m.VersionID, "")
	if err != nil {
		t.Fatal(err)
	}
	wantV := &trove.MemoryVersion{
		ID: m.VersionID, StoreID: s.ID, MemoryID: m.ID, Operation: trove.OpCreated,
		Path: ptr(m.Path), Content: &content, SizeBytes: ptr(len(content)), SHA256: ptr(sha(content)),
		CreatedBy: &trove.Actor{Type: trove.ActorAPI, APIKeyID: e.keyID}, CreatedAt: m.CreatedAt,
		Seq: 1, // the store's first version
	}
	wantV.LeafHash = trove.VersionLeafHash(wantV)
	wantV.ChainHash = trove.VersionChainHash(nil, 1, wantV.LeafHash) // the chain starts here
	if diff := cmp.Diff(wantV, v); diff != "" {
		t.Fatalf("version #1 (-want +got):\n%s", diff)
	}
	fm, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/full", Content: "", View: trove.ViewFull})
	if err != nil || fm.Content == nil || *fm.Content != "" || fm.SizeBytes != 0 || fm.SHA256 != sha("") {
		t.Fatalf("CreateMemory(empty, full view) = %+v, %v", fm, err)
	}

	big := strings.Repeat("x", 102400)
	tests := []struct {
		name, path, content string
		view                trove.View
		code                string
	}{
		{"max content", "/big", big, "", ""},
		{"multibyte path", "/café/日本.md", "x", "", ""},
		{"20 segments", "/" + strings.Repeat("s/", 19) + "t", "x", "", ""},
		{"content too large", "/big2", big + "x", "", trove.EINVALID},
		{"invalid UTF-8", "/bin", "\xff\xfe", "", trove.EINVALID},
		{"empty path", "", "x", "", trove.EINVALID},
		{"root", "/", "x", "", trove.EINVALID},
		{"relative", "a", "x", "", trove.EINVALID},
		{"trailing slash", "/a/", "x", "", trove.EINVALID},
		{"double slash", "/a//b", "x", "", trove.EINVALID},
		{"dot segment", "/a/./b", "x", "", trove.EINVALID},
		{"dotdot segment", "/a/../b", "x", "", trove.EINVALID},
		{"NUL", "/a\x00", "x", "", trove.EINVALID},
		{"control", "/a\tb", "x", "", trove.EINVALID},
		{"format char", "/a\u200bb", "x", "", trove.EINVALID},
		{"line separator", "/a\u2028b", "x", "", trove.EINVALID},
		{"not NFC", "/cafe\u0301", "x", "", trove.EINVALID},
		{"too long", "/" + strings.Repeat("p", 1024), "x", "", trove.EINVALID},
		{"21 segments", "/" + strings.Repeat("s/", 20) + "t", "x", "", trove.EINVALID},
		{"bad view", "/v", "x", "everything", trove.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: tt.path, Content: tt.content, View: tt.view})
			wantCode(t, "CreateMemory", err, tt.code)
		})
	}
	_, err = e.svc.CreateMemory(e.ctx, "memstore_missing", trove.CreateMemoryParams{Path: "/x"})
	wantCode(t, "CreateMemory(unknown store)", err, trove.ENOTFOUND)
	_, err = e.svc.GetMemory(e.ctx, s.ID, "mem_missing", "")
	wantCode(t, "GetMemory(unknown)", err, trove.ENOTFOUND)
	_, err = e.svc.GetMemory(e.ctx, s.ID, m.ID, "everything")
	wantCode(t, "GetMemory(bad view)", err, trove.EINVALID)
	other := e.store(t, "other")
	_, err = e.svc.GetMemory(e.ctx, other.ID, m.ID, "")
	wantCode(t, "GetMemory(memory of another store)", err, trove.ENOTFOUND)
}

func testMemoryPathConflict(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	ab := e.memory(t, s.ID, "/a/b", "x")
	tests := []struct {
		path     string
		code     string
		conflict string
	}{
		{"/a/b", trove.EPATHCONFLICT, "/a/b"},
		{"/a", trove.EPATHCONFLICT, "/a/b"},
		{"/a/b/c", trove.EPATHCONFLICT, "/a/b"},
		{"/a/b/c/d", trove.EPATHCONFLICT, "/a/b"},
		{"/A/b", "", ""},
		{"/a/bc", "", ""},
		{"/a/b-c", "", ""},
		{"/a/c", "", ""},
		{"/ab", "", ""},
	}
	for _, tt := range tests {
		_, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: tt.path, Content: "new"})
		wantCode(t, "CreateMemory("+tt.path+")", err, tt.code)
		if tt.code == trove.EPATHCONFLICT {
			var te *trove.Error
			if !asError(err, &te) || te.ConflictingPath != tt.conflict || te.ConflictingMemoryID != ab.ID {
				t.Fatalf("CreateMemory(%s): conflict %q/%q, want %q/%q", tt.path, te.ConflictingPath, te.ConflictingMemoryID, tt.conflict, ab.ID)
			}
		}
	}
	// The conflicting memory was not overwritten.
	got, err := e.svc.GetMemory(e.ctx, s.ID, ab.ID, "")
	if err != nil || *got.Content != "x" || got.VersionID != ab.VersionID {
		t.Fatalf("existing memory changed: %+v, %v", got, err)
	}
	// The same path in another store is independent.
	o := e.store(t, "O")
	e.memory(t, o.ID, "/a/b", "y")
}

func testMemoryUpdate(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	m := e.memory(t, s.ID, "/notes/a.md", "one")
	e.memory(t, s.ID, "/other/b.md", "b")
	versions := func() int { return len(e.allVersions(t, s.ID, trove.ListVersionsParams{MemoryID: m.ID})) }

	// A real content change.
	u, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("two"), PreconditionSHA256: sha("one"), View: trove.ViewFull})
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != m.ID || u.Path != m.Path || *u.Content != "two" || u.SHA256 != sha("two") || u.SizeBytes != 3 ||
		u.VersionID == m.VersionID || !u.UpdatedAt.After(m.UpdatedAt) || !u.CreatedAt.Equal(m.CreatedAt) {
		t.Fatalf("updated memory = %+v (was %+v)", u, m)
	}
	v, err := e.svc.GetVersion(e.ctx, s.ID, u.VersionID, trove.ViewFull)
	if err != nil || v.Operation != trove.OpModified || *v.Content != "two" || *v.Path != m.Path || !v.CreatedAt.Equal(u.UpdatedAt) {
		t.Fatalf("modified version = %+v, %v", v, err)
	}
	if n := versions(); n != 2 {
		t.Fatalf("%d versions, want 2", n)
	}

	// No-ops write nothing, even with a stale precondition.
	for _, p := range []trove.UpdateMemoryParams{
		{Content: ptr("two")},
		{Path: ptr("/notes/a.md")},
		{Content: ptr("two"), Path: ptr("/notes/a.md")},
		{Content: ptr("two"), PreconditionSHA256: sha("stale")},
	} {
		got, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, p)
		if err != nil {
			t.Fatalf("no-op UpdateMemory(%+v): %v", p, err)
		}
		want := *u
		want.Content = nil
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Fatalf("no-op UpdateMemory(%+v) (-want +got):\n%s", p, diff)
		}
	}
	if got, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("two"), View: trove.ViewFull}); err != nil || got.Content == nil || *got.Content != "two" {
		t.Fatalf("no-op UpdateMemory with full view = %+v, %v", got, err)
	}
	if got, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Path: ptr(m.Path), View: trove.ViewFull}); err != nil || got.Content == nil || *got.Content != "two" {
		t.Fatalf("no-op rename with full view = %+v, %v", got, err)
	}
	if n := versions(); n != 2 {
		t.Fatalf("no-ops wrote versions: %d, want 2", n)
	}

	// Refusals.
	tests := []struct {
		name string
		p    trove.UpdateMemoryParams
		code string
	}{
		{"neither field", trove.UpdateMemoryParams{}, trove.EINVALID},
		{"precondition only", trove.UpdateMemoryParams{PreconditionSHA256: sha("two")}, trove.EINVALID},
		{"malformed precondition", trove.UpdateMemoryParams{Content: ptr("x"), PreconditionSHA256: "abc"}, trove.EINVALID},
		{"uppercase precondition", trove.UpdateMemoryParams{Content: ptr("x"), PreconditionSHA256: strings.ToUpper(sha("two"))}, trove.EINVALID},
		{"stale precondition", trove.UpdateMemoryParams{Content: ptr("x"), PreconditionSHA256: sha("one")}, trove.EPRECONDITION},
		{"stale precondition rename", trove.UpdateMemoryParams{Path: ptr("/z"), PreconditionSHA256: sha("one")}, trove.EPRECONDITION},
		{"content too large", trove.UpdateMemoryParams{Content: ptr(strings.Repeat("x", 102401))}, trove.EINVALID},
		{"invalid UTF-8", trove.UpdateMemoryParams{Content: ptr("\xff")}, trove.EINVALID},
		{"bad path", trove.UpdateMemoryParams{Path: ptr("/a/")}, trove.EINVALID},
		{"bad view", trove.UpdateMemoryParams{Content: ptr("x"), View: "raw"}, trove.EINVALID},
		{"rename onto existing", trove.UpdateMemoryParams{Path: ptr("/other/b.md")}, trove.EPATHCONFLICT},
		{"rename below existing", trove.UpdateMemoryParams{Path: ptr("/other/b.md/c")}, trove.EPATHCONFLICT},
		{"rename above existing", trove.UpdateMemoryParams{Path: ptr("/other")}, trove.EPATHCONFLICT},
	}
	for _, tt := range tests {
		_, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, tt.p)
		wantCode(t, "UpdateMemory("+tt.name+")", err, tt.code)
	}
	if got, _ := e.svc.GetMemory(e.ctx, s.ID, m.ID, ""); *got.Content != "two" || got.VersionID != u.VersionID {
		t.Fatalf("refused updates changed the memory: %+v", got)
	}
	if n := versions(); n != 2 {
		t.Fatalf("refused updates wrote versions: %d", n)
	}
	_, err = e.svc.UpdateMemory(e.ctx, s.ID, "mem_missing", trove.UpdateMemoryParams{Content: ptr("x")})
	wantCode(t, "UpdateMemory(unknown)", err, trove.ENOTFOUND)

	// Rename keeps the ID, frees the old path, and may move below itself.
	r, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Path: ptr("/notes/a.md/deeper"), PreconditionSHA256: sha("two")})
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != m.ID || r.Path != "/notes/a.md/deeper" || r.SHA256 != sha("two") || r.VersionID == u.VersionID {
		t.Fatalf("renamed memory = %+v", r)
	}
	rv, _ := e.svc.GetVersion(e.ctx, s.ID, r.VersionID, "")
	if rv.Operation != trove.OpModified || *rv.Path != "/notes/a.md/deeper" || *rv.Content != "two" {
		t.Fatalf("rename version = %+v", rv)
	}
	_, err = e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/notes/a.md"})
	wantCode(t, "CreateMemory(ancestor of the renamed memory)", err, trove.EPATHCONFLICT)
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Path: ptr("/moved.md")}); err != nil {
		t.Fatal(err)
	}
	e.memory(t, s.ID, "/notes/a.md", "reuse")
	// Content and path together.
	both, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Path: ptr("/both.md"), Content: ptr("three")})
	if err != nil || both.Path != "/both.md" || both.SHA256 != sha("three") {
		t.Fatalf("UpdateMemory(both) = %+v, %v", both, err)
	}
	if n := versions(); n != 5 {
		t.Fatalf("%d versions, want 5", n)
	}
}

func testMemoryDelete(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	m := e.memory(t, s.ID, "/a/b", "content")
	wantCode(t, "DeleteMemory(malformed sha)", e.svc.DeleteMemory(e.ctx, s.ID, m.ID, "nope"), trove.EINVALID)
	wantCode(t, "DeleteMemory(stale sha)", e.svc.DeleteMemory(e.ctx, s.ID, m.ID, sha("other")), trove.EPRECONDITION)
	if _, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, ""); err != nil {
		t.Fatalf("a refused delete deleted: %v", err)
	}
	if err := e.svc.DeleteMemory(e.ctx, s.ID, m.ID, sha("content")); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, "")
	wantCode(t, "GetMemory(deleted)", err, trove.ENOTFOUND)
	wantCode(t, "DeleteMemory(again)", e.svc.DeleteMemory(e.ctx, s.ID, m.ID, ""), trove.ENOTFOUND)
	_, err = e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("x")})
	wantCode(t, "UpdateMemory(deleted)", err, trove.ENOTFOUND)

	vs := e.allVersions(t, s.ID, trove.ListVersionsParams{MemoryID: m.ID, View: trove.ViewFull})
	if len(vs) != 2 {
		t.Fatalf("%d versions after delete, want 2", len(vs))
	}
	d := vs[0]
	want := trove.MemoryVersion{
		ID: d.ID, StoreID: s.ID, MemoryID: m.ID, Operation: trove.OpDeleted, Path: ptr("/a/b"),
		CreatedBy: &trove.Actor{Type: trove.ActorAPI, APIKeyID: e.keyID}, CreatedAt: d.CreatedAt,
		Seq: 2, // after the creation, the store's only other version
	}
	want.LeafHash = trove.VersionLeafHash(&want)
	want.ChainHash = trove.VersionChainHash(vs[1].ChainHash, 2, want.LeafHash) // linked to the creation
	if diff := cmp.Diff(want, d); diff != "" {
		t.Fatalf("deleted version (-want +got):\n%s", diff)
	}
	if vs[1].Operation != trove.OpCreated || *vs[1].SHA256 != sha("content") {
		t.Fatalf("previous version = %+v", vs[1])
	}
	// The path is free again, for the same path and for overlapping ones.
	e.memory(t, s.ID, "/a", "now a file")
	if items := e.allMemories(t, e.ctx, s.ID, trove.ListMemoriesParams{}); len(items) != 1 {
		t.Fatalf("list after delete = %v", itemPaths(items))
	}
	// Delete without precondition.
	m2 := e.memory(t, s.ID, "/c", "")
	if err := e.svc.DeleteMemory(e.ctx, s.ID, m2.ID, ""); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "DeleteMemory(unknown store)", e.svc.DeleteMemory(e.ctx, "memstore_missing", m2.ID, ""), trove.ENOTFOUND)
}

func testMemoryLimit(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{MaxMemoriesPerStore: 3})
	s := e.store(t, "S")
	var ms []*trove.Memory
	for i := range 3 {
		ms = append(ms, e.memory(t, s.ID, fmt.Sprintf("/m%d", i), "x"))
	}
	_, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/m3"})
	wantCode(t, "CreateMemory(at the limit)", err, trove.EINVALID)
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, ms[0].ID, trove.UpdateMemoryParams{Content: ptr("edited")}); err != nil {
		t.Fatalf("update at the limit: %v", err)
	}
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, ms[1].ID, trove.UpdateMemoryParams{Path: ptr("/renamed")}); err != nil {
		t.Fatalf("rename at the limit: %v", err)
	}
	if err := e.svc.DeleteMemory(e.ctx, s.ID, ms[2].ID, ""); err != nil {
		t.Fatal(err)
	}
	e.memory(t, s.ID, "/m3", "x")
	_, err = e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/m4"})
	wantCode(t, "CreateMemory(at the limit again)", err, trove.EINVALID)
	// The limit is per store.
	o := e.store(t, "O")
	e.memory(t, o.ID, "/m0", "x")
}
