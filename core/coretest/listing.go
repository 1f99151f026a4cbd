package coretest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
)

// listFixture is a store with a small tree of memories.
var listFixture = []string{
	"/a.md",
	"/notes-archive/old.md",
	"/notes/todo.md",
	"/notes/x/y.md",
	"/notes/x/z.md",
	"/notes/x/z2/deep.md",
	"/p/q/r/s.md",
	"/z",
}

func testMemoryList(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	for i, p := range listFixture {
		e.memory(t, s.ID, p, fmt.Sprintf("content %d", i))
	}
	tests := []struct {
		prefix string
		depth  int
		want   []string
	}{
		{"", 0, listFixture},
		{"/", 0, listFixture},
		{"/notes/", 0, []string{"/notes/todo.md", "/notes/x/y.md", "/notes/x/z.md", "/notes/x/z2/deep.md"}},
		{"/notes/x/", 0, []string{"/notes/x/y.md", "/notes/x/z.md", "/notes/x/z2/deep.md"}},
		{"/nothing/", 0, []string{}},
		{"/a.md/", 0, []string{}},
		{"/", 1, []string{"/a.md", "prefix:/notes-archive/", "prefix:/notes/", "prefix:/p/", "/z"}},
		{"", 1, []string{"/a.md", "prefix:/notes-archive/", "prefix:/notes/", "prefix:/p/", "/z"}},
		{"/notes/", 1, []string{"/notes/todo.md", "prefix:/notes/x/"}},
		{"/notes/x/", 1, []string{"/notes/x/y.md", "/notes/x/z.md", "prefix:/notes/x/z2/"}},
		{"/p/", 1, []string{"prefix:/p/q/"}},
		{"/p/q/", 1, []string{"prefix:/p/q/r/"}},
	}
	for _, tt := range tests {
		for _, view := range []trove.View{trove.ViewBasic, trove.ViewFull} {
			for _, limit := range []int{1, 2, 3, 100} {
				name := fmt.Sprintf("prefix=%q depth=%d view=%s limit=%d", tt.prefix, tt.depth, view, limit)
				items := e.allMemories(t, e.ctx, s.ID, trove.ListMemoriesParams{PathPrefix: tt.prefix, Depth: tt.depth, Limit: limit, View: view})
				if diff := cmp.Diff(tt.want, itemPaths(items)); diff != "" {
					t.Fatalf("%s (-want +got):\n%s", name, diff)
				}
				for _, it := range items {
					if it.Memory == nil {
						continue
					}
					if (view == trove.ViewFull) != (it.Memory.Content != nil) {
						t.Fatalf("%s: content %v under view %s", name, it.Memory.Content, view)
					}
					if it.Memory.SHA256 == "" || it.Memory.VersionID == "" || it.Memory.StoreID != s.ID {
						t.Fatalf("%s: incomplete item %+v", name, it.Memory)
					}
					if view == trove.ViewFull && it.Memory.SHA256 != sha(*it.Memory.Content) {
						t.Fatalf("%s: content does not match its hash", name)
					}
				}
			}
		}
	}
	pg, err := e.svc.ListMemories(e.ctx, s.ID, trove.ListMemoriesParams{})
	if err != nil || len(pg.Data) != len(listFixture) || pg.NextPage != "" {
		t.Fatalf("default list: %d items, next %q, %v", len(pg.Data), pg.NextPage, err)
	}

	bad := []trove.ListMemoriesParams{
		{PathPrefix: "notes/"}, {PathPrefix: "/notes"}, {PathPrefix: "/notes//"}, {PathPrefix: "/../"},
		{Depth: -1}, {Depth: 2}, {Depth: 3}, {Depth: 20}, {PathPrefix: "/notes/", Depth: 2}, {Limit: -1}, {Limit: 101}, {View: "raw"},
		{Cursor: "x"}, {Cursor: "page_zzz"}, {Cursor: "page_eyJ2IjoxLCJrIjoicCIsInQiOiIyMDI2LTExLTMwVDEyOjAwOjAwWiIsImkiOiJ4In0"}, // a position cursor
	}
	for _, p := range bad {
		_, err := e.svc.ListMemories(e.ctx, s.ID, p)
		wantCode(t, fmt.Sprintf("ListMemories(%+v)", p), err, trove.EINVALID)
	}
	for _, depth := range []int{-1, 2} {
		_, err := e.svc.ListMemories(e.ctx, s.ID, trove.ListMemoriesParams{Depth: depth})
		if msg := trove.ErrorMessage(err); !strings.Contains(msg, "depth must be 0 or 1") {
			t.Fatalf("ListMemories(depth %d): message %q does not state the rule", depth, msg)
		}
	}
	_, err = e.svc.ListMemories(e.ctx, "memstore_missing", trove.ListMemoriesParams{})
	wantCode(t, "ListMemories(unknown store)", err, trove.ENOTFOUND)
}

func testMemoryListPaging(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	var paths []string
	for i := range 25 {
		p := fmt.Sprintf("/m%02d", i*2)
		paths = append(paths, p)
		e.memory(t, s.ID, p, "x")
	}
	// view=full caps a page at 20 without an error.
	pg, err := e.svc.ListMemories(e.ctx, s.ID, trove.ListMemoriesParams{Limit: 100, View: trove.ViewFull})
	if err != nil || len(pg.Data) != 20 || pg.NextPage == "" {
		t.Fatalf("full view, limit 100: %d items, next %q, %v", len(pg.Data), pg.NextPage, err)
	}
	pg, err = e.svc.ListMemories(e.ctx, s.ID, trove.ListMemoriesParams{Limit: 100})
	if err != nil || len(pg.Data) != 25 || pg.NextPage != "" {
		t.Fatalf("basic view, limit 100: %d items, next %q, %v", len(pg.Data), pg.NextPage, err)
	}
	// Concurrent inserts: one before the cursor (not seen), one after (seen),
	// and a deletion after the cursor (not seen); no duplicates.
	pg, err = e.svc.ListMemories(e.ctx, s.ID, trove.ListMemoriesParams{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	e.memory(t, s.ID, "/m01", "before the cursor")
	e.memory(t, s.ID, "/m31", "after the cursor")
	last := itemPaths(pg.Data)
	items := e.allMemories(t, e.ctx, s.ID, trove.ListMemoriesParams{Limit: 10, Cursor: pg.NextPage})
	got := append(last, itemPaths(items)...)
	want := append([]string{}, paths...)
	want = append(want[:16], append([]string{"/m31"}, want[16:]...)...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("paging across inserts (-want +got):\n%s", diff)
	}
	// Paths that differ only after the end of another (a space, the
	// smallest byte a path may hold, "!" and a multibyte character) page
	// one by one without loss.
	e3 := e.store(t, "U")
	var tight []string
	for _, p := range []string{"/s", "/s !", "/s!", "/s0", "/sé", "/t/u", "/t u"} {
		e.memory(t, e3.ID, p, "x")
		tight = append(tight, p)
	}
	slices.Sort(tight)
	for _, depth := range []int{0, 1} {
		items := e.allMemories(t, e.ctx, e3.ID, trove.ListMemoriesParams{Limit: 1, Depth: depth})
		want := slices.Clone(tight)
		if depth == 1 {
			want[slices.Index(want, "/t/u")] = "prefix:/t/"
		}
		if diff := cmp.Diff(want, itemPaths(items)); diff != "" {
			t.Fatalf("tight paths, depth %d (-want +got):\n%s", depth, diff)
		}
	}
	// Folded prefixes do not repeat across pages, even when a memory is
	// created inside an already returned prefix.
	e2 := e.store(t, "T")
	for _, p := range []string{"/a/1", "/a/2", "/b/1", "/b/2", "/c", "/d/1"} {
		e.memory(t, e2.ID, p, "x")
	}
	pg, err = e.svc.ListMemories(e.ctx, e2.ID, trove.ListMemoriesParams{Depth: 1, Limit: 1})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].Prefix == nil || pg.Data[0].Prefix.Path != "/a/" {
		t.Fatalf("first page = %v, %v", itemPaths(pg.Data), err)
	}
	e.memory(t, e2.ID, "/a/3", "x")
	rest := e.allMemories(t, e.ctx, e2.ID, trove.ListMemoriesParams{Depth: 1, Limit: 1, Cursor: pg.NextPage})
	if diff := cmp.Diff([]string{"prefix:/b/", "/c", "prefix:/d/"}, itemPaths(rest)); diff != "" {
		t.Fatalf("rest (-want +got):\n%s", diff)
	}
}
