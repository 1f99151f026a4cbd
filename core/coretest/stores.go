package coretest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
)

// --- stores -------------------------------------------------------------

func testStoreValidation(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	many := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = "v"
		}
		return m
	}
	tests := []struct {
		name   string
		p      trove.CreateStoreParams
		code   string
		detail string
	}{
		{"minimal", trove.CreateStoreParams{Name: "x"}, "", ""},
		{"empty name", trove.CreateStoreParams{Name: ""}, trove.EINVALID, ""},
		{"255 chars", trove.CreateStoreParams{Name: strings.Repeat("a", 255)}, "", ""},
		{"255 multibyte chars", trove.CreateStoreParams{Name: strings.Repeat("é", 255)}, "", ""},
		{"256 chars", trove.CreateStoreParams{Name: strings.Repeat("a", 256)}, trove.EINVALID, ""},
		{"newline in name", trove.CreateStoreParams{Name: "a\nb"}, trove.EINVALID, ""},
		{"NUL in name", trove.CreateStoreParams{Name: "a\x00b"}, trove.EINVALID, ""},
		{"invalid UTF-8 name", trove.CreateStoreParams{Name: "a\xffb"}, trove.EINVALID, ""},
		{"description 1024", trove.CreateStoreParams{Name: "x", Description: strings.Repeat("d", 1024)}, "", ""},
		{"description 1025", trove.CreateStoreParams{Name: "x", Description: strings.Repeat("d", 1025)}, trove.EINVALID, ""},
		{"metadata 16 pairs", trove.CreateStoreParams{Name: "x", Metadata: many(16)}, "", ""},
		{"metadata 17 pairs", trove.CreateStoreParams{Name: "x", Metadata: many(17)}, trove.EINVALID, "invalid_metadata"},
		{"metadata empty key", trove.CreateStoreParams{Name: "x", Metadata: map[string]string{"": "v"}}, trove.EINVALID, "invalid_metadata"},
		{"metadata key 64", trove.CreateStoreParams{Name: "x", Metadata: map[string]string{strings.Repeat("k", 64): "v"}}, "", ""},
		{"metadata key 65", trove.CreateStoreParams{Name: "x", Metadata: map[string]string{strings.Repeat("k", 65): "v"}}, trove.EINVALID, "invalid_metadata"},
		{"metadata value 512", trove.CreateStoreParams{Name: "x", Metadata: map[string]string{"k": strings.Repeat("v", 512)}}, "", ""},
		{"metadata value 513", trove.CreateStoreParams{Name: "x", Metadata: map[string]string{"k": strings.Repeat("v", 513)}}, trove.EINVALID, "invalid_metadata"},
		{"metadata empty value", trove.CreateStoreParams{Name: "x", Metadata: map[string]string{"k": ""}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := e.svc.CreateStore(e.ctx, tt.p)
			wantCode(t, "CreateStore", err, tt.code)
			if tt.detail != "" {
				var te *trove.Error
				if !asError(err, &te) || te.DetailCode != tt.detail {
					t.Fatalf("DetailCode of %v, want %q", err, tt.detail)
				}
			}
			if err == nil {
				got, err := e.svc.GetStore(e.ctx, s.ID)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(s, got); diff != "" {
					t.Fatalf("GetStore differs from CreateStore (-create +get):\n%s", diff)
				}
			}
		})
	}
}

func testStoreLifecycle(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "Prefs"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.ID, trove.PrefixStore) || s.WorkspaceID != wsA || s.Name != "Prefs" || s.Description != "" ||
		s.Metadata == nil || len(s.Metadata) != 0 || s.ArchivedAt != nil || !s.CreatedAt.Equal(s.UpdatedAt) || s.CreatedAt.IsZero() {
		t.Fatalf("new store = %+v", s)
	}
	if s.CreatedAt.Location() != time.UTC {
		t.Fatalf("CreatedAt %v is not UTC", s.CreatedAt)
	}
	got, err := e.svc.GetStore(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, got); diff != "" {
		t.Fatalf("GetStore (-want +got):\n%s", diff)
	}
	_, err = e.svc.GetStore(e.ctx, "memstore_missing")
	wantCode(t, "GetStore(unknown)", err, trove.ENOTFOUND)
	// Memory changes do not touch the store's updated_at.
	m := e.memory(t, s.ID, "/a", "x")
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("y")}); err != nil {
		t.Fatal(err)
	}
	got, _ = e.svc.GetStore(e.ctx, s.ID)
	if !got.UpdatedAt.Equal(s.UpdatedAt) {
		t.Fatalf("memory writes changed the store's updated_at: %v -> %v", s.UpdatedAt, got.UpdatedAt)
	}
}

func testStoreUpdate(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "A", Description: "d", Metadata: map[string]string{"a": "1", "b": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	// A no-op update changes nothing, updated_at included.
	for _, p := range []trove.UpdateStoreParams{
		{},
		{Name: ptr("A")},
		{Description: ptr("d")},
		{Metadata: map[string]*string{"a": ptr("1")}},
		{Metadata: map[string]*string{"zz": nil}},
	} {
		got, err := e.svc.UpdateStore(e.ctx, s.ID, p)
		if err != nil {
			t.Fatalf("UpdateStore(%+v): %v", p, err)
		}
		if diff := cmp.Diff(s, got); diff != "" {
			t.Fatalf("no-op UpdateStore(%+v) changed the store (-want +got):\n%s", p, diff)
		}
	}
	got, err := e.svc.UpdateStore(e.ctx, s.ID, trove.UpdateStoreParams{
		Name: ptr("B"), Description: ptr(""),
		Metadata: map[string]*string{"a": nil, "b": ptr("3"), "c": ptr("4")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := *s
	want.Name, want.Description, want.Metadata = "B", "", map[string]string{"b": "3", "c": "4"}
	want.UpdatedAt = got.UpdatedAt
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Fatalf("UpdateStore (-want +got):\n%s", diff)
	}
	if !got.UpdatedAt.After(s.UpdatedAt) {
		t.Fatalf("updated_at %v not after %v", got.UpdatedAt, s.UpdatedAt)
	}
	if again, _ := e.svc.GetStore(e.ctx, s.ID); !cmp.Equal(got, again) {
		t.Fatalf("GetStore after update = %+v, want %+v", again, got)
	}

	// Metadata limits apply after the merge.
	md := map[string]*string{}
	for i := range 14 {
		md[fmt.Sprintf("k%02d", i)] = ptr("v")
	}
	_, err = e.svc.UpdateStore(e.ctx, s.ID, trove.UpdateStoreParams{Metadata: md}) // 2 + 14 = 16
	wantCode(t, "UpdateStore(16 pairs after merge)", err, "")
	_, err = e.svc.UpdateStore(e.ctx, s.ID, trove.UpdateStoreParams{Metadata: map[string]*string{"x": ptr("v")}})
	wantCode(t, "UpdateStore(17 pairs after merge)", err, trove.EINVALID)
	var te *trove.Error
	if !asError(err, &te) || te.DetailCode != "invalid_metadata" {
		t.Fatalf("DetailCode of %v, want invalid_metadata", err)
	}
	_, err = e.svc.UpdateStore(e.ctx, s.ID, trove.UpdateStoreParams{Metadata: map[string]*string{"x": ptr("v"), "b": nil}})
	wantCode(t, "UpdateStore(remove one, add one at the limit)", err, "")

	tests := []struct {
		name string
		p    trove.UpdateStoreParams
	}{
		{"empty name", trove.UpdateStoreParams{Name: ptr("")}},
		{"long name", trove.UpdateStoreParams{Name: ptr(strings.Repeat("n", 256))}},
		{"control name", trove.UpdateStoreParams{Name: ptr("a\tb")}},
		{"long description", trove.UpdateStoreParams{Description: ptr(strings.Repeat("d", 1025))}},
		{"long key", trove.UpdateStoreParams{Metadata: map[string]*string{strings.Repeat("k", 65): ptr("v")}}},
		{"long value", trove.UpdateStoreParams{Metadata: map[string]*string{"c": ptr(strings.Repeat("v", 513))}}},
	}
	before, _ := e.svc.GetStore(e.ctx, s.ID)
	for _, tt := range tests {
		_, err := e.svc.UpdateStore(e.ctx, s.ID, tt.p)
		wantCode(t, "UpdateStore("+tt.name+")", err, trove.EINVALID)
	}
	if after, _ := e.svc.GetStore(e.ctx, s.ID); !cmp.Equal(before, after) {
		t.Fatalf("refused updates changed the store: %+v -> %+v", before, after)
	}
	_, err = e.svc.UpdateStore(e.ctx, "memstore_missing", trove.UpdateStoreParams{Name: ptr("x")})
	wantCode(t, "UpdateStore(unknown)", err, trove.ENOTFOUND)
}

func testStoreArchive(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "A")
	m := e.memory(t, s.ID, "/a", "one")
	m2, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("two")})
	if err != nil {
		t.Fatal(err)
	}
	other := e.memory(t, s.ID, "/b", "b")

	a, err := e.svc.ArchiveStore(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.ArchivedAt == nil || !a.UpdatedAt.Equal(*a.ArchivedAt) || !a.UpdatedAt.After(s.UpdatedAt) {
		t.Fatalf("archived store = %+v", a)
	}
	again, err := e.svc.ArchiveStore(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, again); diff != "" {
		t.Fatalf("archiving twice changed the store (-first +second):\n%s", diff)
	}
	if got, err := e.svc.GetStore(e.ctx, s.ID); err != nil || !cmp.Equal(a, got) {
		t.Fatalf("GetStore(archived) = %+v, %v", got, err)
	}

	_, err = e.svc.UpdateStore(e.ctx, s.ID, trove.UpdateStoreParams{Name: ptr("B")})
	wantCode(t, "UpdateStore(archived)", err, trove.EINVALID)
	_, err = e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/c", Content: "c"})
	wantCode(t, "CreateMemory(archived)", err, trove.EINVALID)
	_, err = e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("three")})
	wantCode(t, "UpdateMemory(archived)", err, trove.EINVALID)
	_, err = e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Path: ptr("/z")})
	wantCode(t, "UpdateMemory(archived rename)", err, trove.EINVALID)

	// Reads, deletes and redaction still work.
	if got, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, trove.ViewFull); err != nil || *got.Content != "two" {
		t.Fatalf("GetMemory(archived) = %+v, %v", got, err)
	}
	if items := e.allMemories(t, e.ctx, s.ID, trove.ListMemoriesParams{}); len(items) != 2 {
		t.Fatalf("ListMemories(archived) = %v", itemPaths(items))
	}
	if _, err := e.svc.RedactVersion(e.ctx, s.ID, m.VersionID); err != nil {
		t.Fatalf("RedactVersion(archived): %v", err)
	}
	if err := e.svc.DeleteMemory(e.ctx, s.ID, other.ID, ""); err != nil {
		t.Fatalf("DeleteMemory(archived): %v", err)
	}
	if _, err := e.svc.GetVersion(e.ctx, s.ID, m2.VersionID, ""); err != nil {
		t.Fatalf("GetVersion(archived): %v", err)
	}

	// Hidden from lists unless asked for.
	live := e.store(t, "live")
	pg, err := e.svc.ListStores(e.ctx, trove.ListStoresParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Data) != 1 || pg.Data[0].ID != live.ID {
		t.Fatalf("ListStores = %+v, want only the live store", pg.Data)
	}
	pg, err = e.svc.ListStores(e.ctx, trove.ListStoresParams{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Data) != 2 || pg.Data[0].ID != live.ID || pg.Data[1].ID != s.ID {
		t.Fatalf("ListStores(include archived) = %+v", pg.Data)
	}
	_, err = e.svc.ArchiveStore(e.ctx, "memstore_missing")
	wantCode(t, "ArchiveStore(unknown)", err, trove.ENOTFOUND)
	if err := e.svc.DeleteStore(e.ctx, s.ID); err != nil {
		t.Fatalf("DeleteStore(archived): %v", err)
	}
}

func testStoreDelete(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "doomed")
	keep := e.store(t, "kept")
	m := e.memory(t, s.ID, "/a", "x")
	km := e.memory(t, keep.ID, "/a", "x")
	if err := e.svc.DeleteStore(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.GetStore(e.ctx, s.ID)
	wantCode(t, "GetStore(deleted)", err, trove.ENOTFOUND)
	_, err = e.svc.GetMemory(e.ctx, s.ID, m.ID, "")
	wantCode(t, "GetMemory(deleted store)", err, trove.ENOTFOUND)
	_, err = e.svc.GetVersion(e.ctx, s.ID, m.VersionID, "")
	wantCode(t, "GetVersion(deleted store)", err, trove.ENOTFOUND)
	_, err = e.svc.ListVersions(e.ctx, s.ID, trove.ListVersionsParams{})
	wantCode(t, "ListVersions(deleted store)", err, trove.ENOTFOUND)
	wantCode(t, "DeleteStore(again)", e.svc.DeleteStore(e.ctx, s.ID), trove.ENOTFOUND)
	if _, err := e.svc.GetMemory(e.ctx, keep.ID, km.ID, ""); err != nil {
		t.Fatalf("other store's memory: %v", err)
	}
	if vs := e.allVersions(t, keep.ID, trove.ListVersionsParams{}); len(vs) != 1 {
		t.Fatalf("other store's versions = %d, want 1", len(vs))
	}
}

func testStoreList(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	var ids []string
	for i := range 7 {
		ids = append([]string{e.store(t, fmt.Sprintf("s%d", i)).ID}, ids...) // newest first
	}
	for _, limit := range []int{1, 2, 3, 7, 8, 100} {
		var got []string
		cursor := ""
		for range 20 {
			pg, err := e.svc.ListStores(e.ctx, trove.ListStoresParams{Limit: limit, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			if len(pg.Data) > limit || (pg.NextPage != "" && len(pg.Data) != limit) {
				t.Fatalf("limit %d: page of %d with next %q", limit, len(pg.Data), pg.NextPage)
			}
			for _, s := range pg.Data {
				got = append(got, s.ID)
			}
			if pg.NextPage == "" {
				break
			}
			if !strings.HasPrefix(pg.NextPage, "page_") {
				t.Fatalf("cursor %q lacks the page_ prefix", pg.NextPage)
			}
			cursor = pg.NextPage
		}
		if diff := cmp.Diff(ids, got); diff != "" {
			t.Fatalf("limit %d (-want +got):\n%s", limit, diff)
		}
	}
	pg, err := e.svc.ListStores(e.ctx, trove.ListStoresParams{})
	if err != nil || len(pg.Data) != 7 || pg.NextPage != "" {
		t.Fatalf("default limit: %d stores, next %q, %v", len(pg.Data), pg.NextPage, err)
	}

	// A store created while paging does not disturb the pages.
	pg, err = e.svc.ListStores(e.ctx, trove.ListStoresParams{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	e.store(t, "late")
	rest, err := e.svc.ListStores(e.ctx, trove.ListStoresParams{Limit: 100, Cursor: pg.NextPage})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range append(pg.Data, rest.Data...) {
		got = append(got, s.ID)
	}
	if diff := cmp.Diff(ids, got); diff != "" {
		t.Fatalf("paging across a concurrent insert (-want +got):\n%s", diff)
	}

	// created_at range, inclusive.
	all, _ := e.svc.ListStores(e.ctx, trove.ListStoresParams{Limit: 100})
	mid := all.Data[3].CreatedAt
	pg, err = e.svc.ListStores(e.ctx, trove.ListStoresParams{Limit: 100, CreatedAt: trove.TimeRange{GTE: &mid}})
	if err != nil || len(pg.Data) != 4 || pg.Data[3].ID != all.Data[3].ID {
		t.Fatalf("created_at[gte]: %d stores, %v", len(pg.Data), err)
	}
	pg, err = e.svc.ListStores(e.ctx, trove.ListStoresParams{Limit: 100, CreatedAt: trove.TimeRange{LTE: &mid}})
	if err != nil || len(pg.Data) != len(all.Data)-3 || pg.Data[0].ID != all.Data[3].ID {
		t.Fatalf("created_at[lte]: %d stores, %v", len(pg.Data), err)
	}
	pg, err = e.svc.ListStores(e.ctx, trove.ListStoresParams{CreatedAt: trove.TimeRange{GTE: &mid, LTE: &mid}})
	if err != nil || len(pg.Data) != 1 {
		t.Fatalf("created_at[gte]=[lte]: %d stores, %v", len(pg.Data), err)
	}

	bad := []trove.ListStoresParams{
		{Limit: -1}, {Limit: 101},
		{Cursor: "garbage"}, {Cursor: "page_"}, {Cursor: "page_!!!"}, {Cursor: "page_e30"},
		{Cursor: "page_eyJ2IjoxLCJrIjoibSIsImYiOiIvYSJ9"}, // a memory cursor
	}
	for _, p := range bad {
		_, err := e.svc.ListStores(e.ctx, p)
		wantCode(t, fmt.Sprintf("ListStores(%+v)", p), err, trove.EINVALID)
		if p.Cursor != "" && trove.ErrorMessage(err) != "invalid page cursor" {
			t.Fatalf("ListStores(cursor %q) message %q, want %q", p.Cursor, trove.ErrorMessage(err), "invalid page cursor")
		}
	}
	// Workspace B sees none of A's stores.
	pg, err = e.svc.ListStores(e.ctxB, trove.ListStoresParams{IncludeArchived: true})
	if err != nil || len(pg.Data) != 0 || pg.NextPage != "" {
		t.Fatalf("workspace B lists %d stores (%v)", len(pg.Data), err)
	}
}
