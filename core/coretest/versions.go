package coretest

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
)

// --- versions -----------------------------------------------------------

func testVersions(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	a := e.memory(t, s.ID, "/a", "a1")
	b := e.memory(t, s.ID, "/b", "b1")
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, a.ID, trove.UpdateMemoryParams{Content: ptr("a2")}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteMemory(e.ctx, s.ID, b.ID, ""); err != nil {
		t.Fatal(err)
	}
	sctx, se, _ := e.sessionCtx(t, trove.AttachStoreParams{StoreID: s.ID})
	if _, err := e.svc.UpdateMemory(sctx, s.ID, a.ID, trove.UpdateMemoryParams{Content: ptr("a3")}); err != nil {
		t.Fatal(err)
	}

	all := e.allVersions(t, s.ID, trove.ListVersionsParams{})
	type row struct {
		Mem string
		Op  trove.Operation
	}
	var got []row
	for i, v := range all {
		got = append(got, row{v.MemoryID, v.Operation})
		if i > 0 {
			p := all[i-1]
			if p.CreatedAt.Before(v.CreatedAt) || (p.CreatedAt.Equal(v.CreatedAt) && p.ID < v.ID) {
				t.Fatalf("versions not newest first at %d", i)
			}
		}
		if v.Content != nil {
			t.Fatalf("basic list has content: %+v", v)
		}
	}
	want := []row{{a.ID, trove.OpModified}, {b.ID, trove.OpDeleted}, {a.ID, trove.OpModified}, {b.ID, trove.OpCreated}, {a.ID, trove.OpCreated}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("versions (-want +got):\n%s", diff)
	}
	if all[0].CreatedBy == nil || *all[0].CreatedBy != (trove.Actor{Type: trove.ActorSession, SessionID: se.ID}) {
		t.Fatalf("session write's actor = %+v", all[0].CreatedBy)
	}

	count := func(p trove.ListVersionsParams) int { return len(e.allVersions(t, s.ID, p)) }
	filters := []struct {
		name string
		p    trove.ListVersionsParams
		want int
	}{
		{"memory a", trove.ListVersionsParams{MemoryID: a.ID}, 3},
		{"memory b (deleted)", trove.ListVersionsParams{MemoryID: b.ID}, 2},
		{"created", trove.ListVersionsParams{Operation: trove.OpCreated}, 2},
		{"modified", trove.ListVersionsParams{Operation: trove.OpModified}, 2},
		{"deleted", trove.ListVersionsParams{Operation: trove.OpDeleted}, 1},
		{"api key", trove.ListVersionsParams{APIKeyID: e.keyID}, 4},
		{"session", trove.ListVersionsParams{SessionID: se.ID}, 1},
		{"service account", trove.ListVersionsParams{ServiceAccountID: "svac_x"}, 0},
		{"memory and operation", trove.ListVersionsParams{MemoryID: a.ID, Operation: trove.OpModified}, 2},
		{"created_at gte", trove.ListVersionsParams{CreatedAt: trove.TimeRange{GTE: &all[1].CreatedAt}}, 2},
		{"created_at lte", trove.ListVersionsParams{CreatedAt: trove.TimeRange{LTE: &all[1].CreatedAt}}, 4},
	}
	for _, f := range filters {
		if n := count(f.p); n != f.want {
			t.Fatalf("filter %s: %d versions, want %d", f.name, n, f.want)
		}
	}
	// Paging with every limit.
	for limit := 1; limit <= 6; limit++ {
		var ids []string
		cursor := ""
		for range 10 {
			pg, err := e.svc.ListVersions(e.ctx, s.ID, trove.ListVersionsParams{Limit: limit, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range pg.Data {
				ids = append(ids, v.ID)
			}
			if pg.NextPage == "" {
				break
			}
			cursor = pg.NextPage
		}
		var wantIDs []string
		for _, v := range all {
			wantIDs = append(wantIDs, v.ID)
		}
		if diff := cmp.Diff(wantIDs, ids); diff != "" {
			t.Fatalf("limit %d (-want +got):\n%s", limit, diff)
		}
	}
	// Views.
	full, err := e.svc.ListVersions(e.ctx, s.ID, trove.ListVersionsParams{View: trove.ViewFull, Limit: 100})
	if err != nil || len(full.Data) != 5 {
		t.Fatalf("full list: %v", err)
	}
	for _, v := range full.Data {
		if (v.Operation == trove.OpDeleted) != (v.Content == nil) {
			t.Fatalf("full view content of %s version: %v", v.Operation, v.Content)
		}
		if (v.Operation == trove.OpDeleted) != (v.SHA256 == nil) || (v.Operation == trove.OpDeleted) != (v.SizeBytes == nil) || v.Path == nil {
			t.Fatalf("full view fields of %s version: %+v", v.Operation, v)
		}
	}
	gv, err := e.svc.GetVersion(e.ctx, s.ID, all[4].ID, "")
	if err != nil || gv.Content == nil || *gv.Content != "a1" {
		t.Fatalf("GetVersion default view = %+v, %v", gv, err)
	}
	gv, err = e.svc.GetVersion(e.ctx, s.ID, all[4].ID, trove.ViewBasic)
	if err != nil || gv.Content != nil || *gv.SHA256 != sha("a1") || *gv.SizeBytes != 2 {
		t.Fatalf("GetVersion basic = %+v, %v", gv, err)
	}
	_, err = e.svc.GetVersion(e.ctx, s.ID, "memver_missing", "")
	wantCode(t, "GetVersion(unknown)", err, trove.ENOTFOUND)
	o := e.store(t, "O")
	_, err = e.svc.GetVersion(e.ctx, o.ID, all[0].ID, "")
	wantCode(t, "GetVersion(version of another store)", err, trove.ENOTFOUND)
	bad := []trove.ListVersionsParams{{Limit: -1}, {Limit: 101}, {Operation: "renamed"}, {View: "raw"}, {Cursor: "page_x"}}
	for _, p := range bad {
		_, err := e.svc.ListVersions(e.ctx, s.ID, p)
		wantCode(t, fmt.Sprintf("ListVersions(%+v)", p), err, trove.EINVALID)
	}
}
