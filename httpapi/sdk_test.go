package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"
)

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// wantAPIError checks that err is an *anthropic.Error with status and type
// and returns it.
func wantAPIError(t *testing.T, err error, status int, typ string) *anthropic.Error {
	t.Helper()
	var apierr *anthropic.Error
	if !errors.As(err, &apierr) {
		t.Fatalf("error = %v (%T), want *anthropic.Error %d %s", err, err, status, typ)
	}
	if apierr.StatusCode != status || string(apierr.Type()) != typ {
		t.Fatalf("error = %d %q, want %d %q: %s", apierr.StatusCode, apierr.Type(), status, typ, apierr.RawJSON())
	}
	if apierr.RequestID == "" || !strings.HasPrefix(apierr.RequestID, "req_") {
		t.Errorf("request id = %q, want req_…", apierr.RequestID)
	}
	return apierr
}

// rawKeys returns the sorted top-level keys of a JSON object.
func rawKeys(t *testing.T, raw string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("response is not a JSON object: %v: %s", err, raw)
	}
	return m
}

func TestSDKStores(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) { testSDKStores(t, newEnv(t, tr)) })
}

func testSDKStores(t *testing.T, e *testEnv) {
	c := e.sdk()
	ctx := context.Background()

	// The guide's first call.
	s1, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{
		Name:        "User Preferences",
		Description: anthropic.String("Per-user preferences and project context."),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if !strings.HasPrefix(s1.ID, "memstore_") || s1.Name != "User Preferences" || s1.Type != "memory_store" {
		t.Errorf("created store = %+v", s1)
	}
	raw := rawKeys(t, s1.RawJSON())
	for _, k := range []string{"type", "id", "name", "description", "metadata", "created_at", "updated_at", "archived_at"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("store JSON lacks %q: %s", k, s1.RawJSON())
		}
	}
	if string(raw["archived_at"]) != "null" || string(raw["metadata"]) != "{}" {
		t.Errorf("archived_at = %s, metadata = %s; want null and {}", raw["archived_at"], raw["metadata"])
	}
	if s1.CreatedAt.Location() != time.UTC || !strings.HasSuffix(string(raw["created_at"]), `Z"`) {
		t.Errorf("created_at = %s, want RFC 3339 UTC", raw["created_at"])
	}

	s2, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{
		Name: "Second", Metadata: map[string]string{"team": "a", "env": "prod"},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	got, err := c.Beta.MemoryStores.Get(ctx, s2.ID, anthropic.BetaMemoryStoreGetParams{})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"team": "a", "env": "prod"}, got.Metadata); diff != "" || got.Description != "" {
		t.Errorf("Get metadata (-want +got):\n%s description=%q", diff, got.Description)
	}

	// Metadata is a merge patch: the SDK can add and replace keys.
	up, err := c.Beta.MemoryStores.Update(ctx, s2.ID, anthropic.BetaMemoryStoreUpdateParams{
		Name: anthropic.String("Second renamed"), Metadata: map[string]string{"env": "staging", "new": "x"},
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"team": "a", "env": "staging", "new": "x"}, up.Metadata); diff != "" {
		t.Errorf("merged metadata (-want +got):\n%s", diff)
	}
	if up.Name != "Second renamed" || !up.UpdatedAt.After(s2.UpdatedAt) && !up.UpdatedAt.Equal(s2.UpdatedAt) {
		t.Errorf("updated store = %+v", up)
	}
	// A null value removes a key (the SDK needs WithJSONSet for that).
	up, err = c.Beta.MemoryStores.Update(ctx, s2.ID, anthropic.BetaMemoryStoreUpdateParams{},
		option.WithJSONSet("metadata", map[string]any{"new": nil}))
	if err != nil {
		t.Fatalf("Update null key: %v", err)
	}
	if diff := cmp.Diff(map[string]string{"team": "a", "env": "staging"}, up.Metadata); diff != "" {
		t.Errorf("metadata after removal (-want +got):\n%s", diff)
	}
	// Too many metadata keys after the merge: 400 with details.error_code.
	many := map[string]string{}
	for i := range 20 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	_, err = c.Beta.MemoryStores.Update(ctx, s2.ID, anthropic.BetaMemoryStoreUpdateParams{Metadata: many})
	apierr := wantAPIError(t, err, 400, "invalid_request_error")
	if apierr.ErrorCode() != "invalid_metadata" {
		t.Errorf("error_code = %q, want invalid_metadata: %s", apierr.ErrorCode(), apierr.RawJSON())
	}

	s3, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "Third"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}

	// List: newest first.
	page, err := c.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if diff := cmp.Diff([]string{s3.ID, s2.ID, s1.ID}, storeIDs(page.Data)); diff != "" {
		t.Errorf("List order (-want +got):\n%s", diff)
	}
	if !strings.Contains(page.RawJSON(), `"next_page":null`) {
		t.Errorf("last page lacks next_page:null: %s", page.RawJSON())
	}
	// created_at filters are inclusive.
	page, err = c.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{
		CreatedAtGte: anthropic.Time(s2.CreatedAt), CreatedAtLte: anthropic.Time(s2.CreatedAt),
	})
	if err != nil {
		t.Fatalf("List created_at: %v", err)
	}
	if diff := cmp.Diff([]string{s2.ID}, storeIDs(page.Data)); diff != "" {
		t.Errorf("List created_at[gte]=[lte]=s2 (-want +got):\n%s", diff)
	}
	page, err = c.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{CreatedAtGte: anthropic.Time(s2.CreatedAt)})
	if err != nil {
		t.Fatalf("List created_at[gte]: %v", err)
	}
	if diff := cmp.Diff([]string{s3.ID, s2.ID}, storeIDs(page.Data)); diff != "" {
		t.Errorf("List created_at[gte]=s2 (-want +got):\n%s", diff)
	}

	// Archive: one-way, idempotent, hidden from lists unless include_archived.
	mem, err := c.Beta.MemoryStores.Memories.New(ctx, s3.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/a.md", Content: anthropic.String("a")})
	if err != nil {
		t.Fatalf("Memories.New: %v", err)
	}
	arch, err := c.Beta.MemoryStores.Archive(ctx, s3.ID, anthropic.BetaMemoryStoreArchiveParams{})
	if err != nil {
		t.Fatalf("Archive: %v", err)
	}
	if arch.ArchivedAt.IsZero() || arch.UpdatedAt.Before(s3.UpdatedAt) {
		t.Errorf("archived store = %s", arch.RawJSON())
	}
	again, err := c.Beta.MemoryStores.Archive(ctx, s3.ID, anthropic.BetaMemoryStoreArchiveParams{})
	if err != nil || !again.ArchivedAt.Equal(arch.ArchivedAt) {
		t.Errorf("re-archive = %v, %v; want unchanged", again, err)
	}
	page, err = c.Beta.MemoryStores.List(ctx, anthropic.BetaMemoryStoreListParams{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if diff := cmp.Diff([]string{s2.ID, s1.ID}, storeIDs(page.Data)); diff != "" {
		t.Errorf("List without archived (-want +got):\n%s", diff)
	}
	var all []string
	iter := c.Beta.MemoryStores.ListAutoPaging(ctx, anthropic.BetaMemoryStoreListParams{IncludeArchived: anthropic.Bool(true), Limit: anthropic.Int(1)})
	for iter.Next() {
		all = append(all, iter.Current().ID)
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("ListAutoPaging: %v", err)
	}
	if diff := cmp.Diff([]string{s3.ID, s2.ID, s1.ID}, all); diff != "" {
		t.Errorf("ListAutoPaging include_archived limit 1 (-want +got):\n%s", diff)
	}
	// Archived: store update and memory create/update refused with 400,
	// reads, memory delete allowed.
	_, err = c.Beta.MemoryStores.Update(ctx, s3.ID, anthropic.BetaMemoryStoreUpdateParams{Name: anthropic.String("x")})
	wantAPIError(t, err, 400, "invalid_request_error")
	_, err = c.Beta.MemoryStores.Memories.New(ctx, s3.ID, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/b.md", Content: anthropic.String("b")})
	wantAPIError(t, err, 400, "invalid_request_error")
	_, err = c.Beta.MemoryStores.Memories.Update(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: s3.ID, Content: anthropic.String("z")})
	wantAPIError(t, err, 400, "invalid_request_error")
	if _, err := c.Beta.MemoryStores.Memories.Get(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: s3.ID}); err != nil {
		t.Errorf("Get memory of archived store: %v", err)
	}
	if _, err := c.Beta.MemoryStores.Get(ctx, s3.ID, anthropic.BetaMemoryStoreGetParams{}); err != nil {
		t.Errorf("Get archived store: %v", err)
	}

	// Delete cascades to memories and versions.
	del, err := c.Beta.MemoryStores.Delete(ctx, s3.ID, anthropic.BetaMemoryStoreDeleteParams{})
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if del.ID != s3.ID || del.Type != "memory_store_deleted" {
		t.Errorf("Delete = %s", del.RawJSON())
	}
	_, err = c.Beta.MemoryStores.Get(ctx, s3.ID, anthropic.BetaMemoryStoreGetParams{})
	wantAPIError(t, err, 404, "not_found_error")
	_, err = c.Beta.MemoryStores.Memories.Get(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: s3.ID})
	wantAPIError(t, err, 404, "not_found_error")
	_, err = c.Beta.MemoryStores.MemoryVersions.Get(ctx, mem.MemoryVersionID, anthropic.BetaMemoryStoreMemoryVersionGetParams{MemoryStoreID: s3.ID})
	wantAPIError(t, err, 404, "not_found_error")
	_, err = c.Beta.MemoryStores.Delete(ctx, s3.ID, anthropic.BetaMemoryStoreDeleteParams{})
	wantAPIError(t, err, 404, "not_found_error")
}

func storeIDs(s []anthropic.BetaManagedAgentsMemoryStore) []string {
	out := []string{}
	for _, x := range s {
		out = append(out, x.ID)
	}
	return out
}

func TestSDKMemories(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) { testSDKMemories(t, newEnv(t, tr)) })
}

func testSDKMemories(t *testing.T, e *testEnv) {
	c := e.sdk()
	ctx := context.Background()
	store, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "Mem"})
	if err != nil {
		t.Fatal(err)
	}
	sid := store.ID

	// Create: basic view by default (content null, size and hash set).
	mem, err := c.Beta.MemoryStores.Memories.New(ctx, sid, anthropic.BetaMemoryStoreMemoryNewParams{
		Path: "/preferences/formatting.md", Content: anthropic.String("Always use tabs, not spaces."),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	raw := rawKeys(t, mem.RawJSON())
	if string(raw["content"]) != "null" || mem.ContentSizeBytes != 28 || mem.ContentSha256 != sha("Always use tabs, not spaces.") {
		t.Errorf("created memory = %s", mem.RawJSON())
	}
	for _, k := range []string{"type", "id", "memory_store_id", "path", "content", "content_size_bytes", "content_sha256", "memory_version_id", "created_at", "updated_at"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("memory JSON lacks %q", k)
		}
	}
	full, err := c.Beta.MemoryStores.Memories.New(ctx, sid, anthropic.BetaMemoryStoreMemoryNewParams{
		Path: "/notes/todo.md", Content: anthropic.String("todo"), View: anthropic.BetaManagedAgentsMemoryViewFull,
	})
	if err != nil || full.Content != "todo" {
		t.Fatalf("New view=full = %v, %v", full, err)
	}

	// Get: full view by default.
	got, err := c.Beta.MemoryStores.Memories.Get(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: sid})
	if err != nil || got.Content != "Always use tabs, not spaces." {
		t.Fatalf("Get = %v, %v", got, err)
	}
	basic, err := c.Beta.MemoryStores.Memories.Get(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: sid, View: anthropic.BetaManagedAgentsMemoryViewBasic})
	if err != nil || string(rawKeys(t, basic.RawJSON())["content"]) != "null" {
		t.Fatalf("Get basic = %v, %v", basic, err)
	}

	// Path conflicts: same path, ancestor, descendant; never retried.
	for _, p := range []string{"/preferences/formatting.md", "/preferences", "/preferences/formatting.md/x"} {
		before := e.count("POST", "/v1/memory_stores/"+sid+"/memories")
		_, err = c.Beta.MemoryStores.Memories.New(ctx, sid, anthropic.BetaMemoryStoreMemoryNewParams{Path: p, Content: anthropic.String("x")})
		apierr := wantAPIError(t, err, 409, "memory_path_conflict_error")
		var body struct {
			Error struct {
				ConflictingPath     string `json:"conflicting_path"`
				ConflictingMemoryID string `json:"conflicting_memory_id"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(apierr.RawJSON()), &body)
		if body.Error.ConflictingPath != "/preferences/formatting.md" || body.Error.ConflictingMemoryID != mem.ID {
			t.Errorf("create %s: conflict = %+v, want /preferences/formatting.md %s", p, body.Error, mem.ID)
		}
		if n := e.count("POST", "/v1/memory_stores/"+sid+"/memories") - before; n != 1 {
			t.Errorf("create %s: %d requests, want 1 (no retry)", p, n)
		}
	}

	// Update with a precondition: a wrong hash is a 409 sent once.
	upath := "/v1/memory_stores/" + sid + "/memories/" + mem.ID
	before := e.count("POST", upath)
	_, err = c.Beta.MemoryStores.Memories.Update(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{
		MemoryStoreID: sid, Content: anthropic.String("new"),
		Precondition: anthropic.BetaManagedAgentsPreconditionParam{ContentSha256: anthropic.String(sha("other"))},
	})
	wantAPIError(t, err, 409, "memory_precondition_failed_error")
	if n := e.count("POST", upath) - before; n != 1 {
		t.Errorf("precondition 409: %d requests, want 1 (x-should-retry: false)", n)
	}
	upd, err := c.Beta.MemoryStores.Memories.Update(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{
		MemoryStoreID: sid, Content: anthropic.String("CORRECTED: Always use 2-space indentation."),
		Precondition: anthropic.BetaManagedAgentsPreconditionParam{Type: "content_sha256", ContentSha256: anthropic.String(mem.ContentSha256)},
	})
	if err != nil {
		t.Fatalf("Update with precondition: %v", err)
	}
	if upd.MemoryVersionID == mem.MemoryVersionID || upd.ContentSha256 != sha("CORRECTED: Always use 2-space indentation.") || string(rawKeys(t, upd.RawJSON())["content"]) != "null" {
		t.Errorf("updated memory = %s", upd.RawJSON())
	}
	// Same content and path with a stale hash: 200, no new version.
	same, err := c.Beta.MemoryStores.Memories.Update(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{
		MemoryStoreID: sid, Content: anthropic.String("CORRECTED: Always use 2-space indentation."),
		Precondition: anthropic.BetaManagedAgentsPreconditionParam{ContentSha256: anthropic.String(mem.ContentSha256)},
	})
	if err != nil || same.MemoryVersionID != upd.MemoryVersionID {
		t.Errorf("no-op update = %v, %v; want version %s unchanged", same, err, upd.MemoryVersionID)
	}
	// Rename keeps the ID; renaming onto another memory's path conflicts.
	ren, err := c.Beta.MemoryStores.Memories.Update(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{
		MemoryStoreID: sid, Path: anthropic.String("/archive/2026_q1_formatting.md"),
	})
	if err != nil || ren.ID != mem.ID || ren.Path != "/archive/2026_q1_formatting.md" {
		t.Fatalf("rename = %v, %v", ren, err)
	}
	_, err = c.Beta.MemoryStores.Memories.Update(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{
		MemoryStoreID: sid, Path: anthropic.String("/notes/todo.md/deeper"),
	})
	wantAPIError(t, err, 409, "memory_path_conflict_error")

	// List: path order, prefix, depth folding, view.
	for _, p := range []string{"/notes/ideas.md", "/notes/2026/jan.md", "/notes/2026/feb.md", "/notes-archive/old.md"} {
		if _, err := c.Beta.MemoryStores.Memories.New(ctx, sid, anthropic.BetaMemoryStoreMemoryNewParams{Path: p, Content: anthropic.String(p)}); err != nil {
			t.Fatalf("New %s: %v", p, err)
		}
	}
	list := func(p anthropic.BetaMemoryStoreMemoryListParams) []string {
		t.Helper()
		var out []string
		it := c.Beta.MemoryStores.Memories.ListAutoPaging(ctx, sid, p)
		for it.Next() {
			cur := it.Current()
			out = append(out, cur.Type+":"+cur.Path)
			if cur.Type == "memory" && p.View == anthropic.BetaManagedAgentsMemoryViewFull && cur.AsMemory().Content != cur.Path && cur.Path != "/notes/todo.md" && cur.Path != "/archive/2026_q1_formatting.md" {
				t.Errorf("view=full item %s content = %q", cur.Path, cur.AsMemory().Content)
			}
		}
		if err := it.Err(); err != nil {
			t.Fatalf("List %+v: %v", p, err)
		}
		return out
	}
	tests := []struct {
		name   string
		params anthropic.BetaMemoryStoreMemoryListParams
		want   []string
	}{
		{"all", anthropic.BetaMemoryStoreMemoryListParams{PathPrefix: anthropic.String("/")}, []string{
			"memory:/archive/2026_q1_formatting.md", "memory:/notes-archive/old.md", "memory:/notes/2026/feb.md",
			"memory:/notes/2026/jan.md", "memory:/notes/ideas.md", "memory:/notes/todo.md"}},
		{"prefix", anthropic.BetaMemoryStoreMemoryListParams{PathPrefix: anthropic.String("/notes/"), Limit: anthropic.Int(2)}, []string{
			"memory:/notes/2026/feb.md", "memory:/notes/2026/jan.md", "memory:/notes/ideas.md", "memory:/notes/todo.md"}},
		{"depth 1", anthropic.BetaMemoryStoreMemoryListParams{Depth: anthropic.Int(1)}, []string{
			"memory_prefix:/archive/", "memory_prefix:/notes-archive/", "memory_prefix:/notes/"}},
		{"prefix depth 1 full", anthropic.BetaMemoryStoreMemoryListParams{PathPrefix: anthropic.String("/notes/"), Depth: anthropic.Int(1), View: anthropic.BetaManagedAgentsMemoryViewFull}, []string{
			"memory_prefix:/notes/2026/", "memory:/notes/ideas.md", "memory:/notes/todo.md"}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, list(tc.params)); diff != "" {
			t.Errorf("List %s (-want +got):\n%s", tc.name, diff)
		}
	}

	// Only depth 0 and 1 exist.
	for _, d := range []int64{2, 5} {
		_, err = c.Beta.MemoryStores.Memories.List(ctx, sid, anthropic.BetaMemoryStoreMemoryListParams{Depth: anthropic.Int(d)})
		if apierr := wantAPIError(t, err, 400, "invalid_request_error"); !strings.Contains(string(apierr.RawJSON()), "depth must be 0 or 1") {
			t.Errorf("depth %d: %s", d, apierr.RawJSON())
		}
	}

	// Delete with expected_content_sha256.
	_, err = c.Beta.MemoryStores.Memories.Delete(ctx, full.ID, anthropic.BetaMemoryStoreMemoryDeleteParams{MemoryStoreID: sid, ExpectedContentSha256: anthropic.String(sha("nope"))})
	wantAPIError(t, err, 409, "memory_precondition_failed_error")
	del, err := c.Beta.MemoryStores.Memories.Delete(ctx, full.ID, anthropic.BetaMemoryStoreMemoryDeleteParams{MemoryStoreID: sid, ExpectedContentSha256: anthropic.String(sha("todo"))})
	if err != nil || del.ID != full.ID || del.Type != "memory_deleted" {
		t.Fatalf("Delete = %v, %v", del, err)
	}
	_, err = c.Beta.MemoryStores.Memories.Get(ctx, full.ID, anthropic.BetaMemoryStoreMemoryGetParams{MemoryStoreID: sid})
	wantAPIError(t, err, 404, "not_found_error")
	// The path is free again.
	if _, err := c.Beta.MemoryStores.Memories.New(ctx, sid, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/notes/todo.md", Content: anthropic.String("again")}); err != nil {
		t.Errorf("recreate deleted path: %v", err)
	}
}

func TestSDKVersions(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) { testSDKVersions(t, newEnv(t, tr)) })
}

func testSDKVersions(t *testing.T, e *testEnv) {
	c := e.sdk()
	ctx := context.Background()
	store, err := c.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "V"})
	if err != nil {
		t.Fatal(err)
	}
	sid := store.ID
	mem, err := c.Beta.MemoryStores.Memories.New(ctx, sid, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/v.md", Content: anthropic.String("one")})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := c.Beta.MemoryStores.Memories.Update(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryUpdateParams{MemoryStoreID: sid, Content: anthropic.String("two")})
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.Beta.MemoryStores.Memories.New(ctx, sid, anthropic.BetaMemoryStoreMemoryNewParams{Path: "/other.md", Content: anthropic.String("o")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Beta.MemoryStores.Memories.Delete(ctx, mem.ID, anthropic.BetaMemoryStoreMemoryDeleteParams{MemoryStoreID: sid}); err != nil {
		t.Fatal(err)
	}

	// The guide: list a memory's versions (newest first), even after delete.
	var ops []string
	var ids []string
	it := c.Beta.MemoryStores.MemoryVersions.ListAutoPaging(ctx, sid, anthropic.BetaMemoryStoreMemoryVersionListParams{MemoryID: anthropic.String(mem.ID), Limit: anthropic.Int(1)})
	for it.Next() {
		v := it.Current()
		ops = append(ops, string(v.Operation))
		ids = append(ids, v.ID)
		if v.CreatedBy.Type != "api_actor" || v.CreatedBy.APIKeyID != e.keyID {
			t.Errorf("version %s created_by = %s", v.ID, v.CreatedBy.RawJSON())
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"deleted", "modified", "created"}, ops); diff != "" {
		t.Errorf("versions of %s (-want +got):\n%s", mem.ID, diff)
	}
	if len(ids) == 3 && ids[1] != m2.MemoryVersionID {
		t.Errorf("modified version = %s, want %s", ids[1], m2.MemoryVersionID)
	}
	filterCases := []struct {
		name   string
		params anthropic.BetaMemoryStoreMemoryVersionListParams
		want   int
	}{
		{"all", anthropic.BetaMemoryStoreMemoryVersionListParams{}, 4},
		{"created", anthropic.BetaMemoryStoreMemoryVersionListParams{Operation: anthropic.BetaManagedAgentsMemoryVersionOperationCreated}, 2},
		{"api key", anthropic.BetaMemoryStoreMemoryVersionListParams{APIKeyID: anthropic.String(e.keyID)}, 4},
		{"other key", anthropic.BetaMemoryStoreMemoryVersionListParams{APIKeyID: anthropic.String("apikey_other")}, 0},
		{"session", anthropic.BetaMemoryStoreMemoryVersionListParams{SessionID: anthropic.String("sesn_x")}, 0},
		{"since other", anthropic.BetaMemoryStoreMemoryVersionListParams{CreatedAtGte: anthropic.Time(other.CreatedAt)}, 2},
		{"until other", anthropic.BetaMemoryStoreMemoryVersionListParams{CreatedAtLte: anthropic.Time(other.CreatedAt)}, 3},
	}
	for _, tc := range filterCases {
		page, err := c.Beta.MemoryStores.MemoryVersions.List(ctx, sid, tc.params)
		if err != nil {
			t.Fatalf("List %s: %v", tc.name, err)
		}
		if len(page.Data) != tc.want {
			t.Errorf("List %s: %d versions, want %d", tc.name, len(page.Data), tc.want)
		}
	}

	// Get: full by default; the deleted version has null content fields.
	v1, err := c.Beta.MemoryStores.MemoryVersions.Get(ctx, mem.MemoryVersionID, anthropic.BetaMemoryStoreMemoryVersionGetParams{MemoryStoreID: sid})
	if err != nil || v1.Content != "one" || v1.Path != "/v.md" || v1.Operation != "created" {
		t.Fatalf("Get version = %v, %v", v1, err)
	}
	raw := rawKeys(t, v1.RawJSON())
	for _, k := range []string{"type", "id", "memory_store_id", "memory_id", "operation", "path", "content", "content_size_bytes", "content_sha256", "created_by", "created_at", "redacted_at", "redacted_by"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("version JSON lacks %q: %s", k, v1.RawJSON())
		}
	}
	dv, err := c.Beta.MemoryStores.MemoryVersions.Get(ctx, ids[0], anthropic.BetaMemoryStoreMemoryVersionGetParams{MemoryStoreID: sid})
	if err != nil {
		t.Fatal(err)
	}
	raw = rawKeys(t, dv.RawJSON())
	if string(raw["content"]) != "null" || string(raw["content_sha256"]) != "null" || string(raw["content_size_bytes"]) != "null" || dv.Path != "/v.md" {
		t.Errorf("deleted version = %s", dv.RawJSON())
	}

	// Redact: nulls content/path/size/hash, keeps who/what/when; idempotent.
	red, err := c.Beta.MemoryStores.MemoryVersions.Redact(ctx, mem.MemoryVersionID, anthropic.BetaMemoryStoreMemoryVersionRedactParams{MemoryStoreID: sid})
	if err != nil {
		t.Fatalf("Redact: %v", err)
	}
	raw = rawKeys(t, red.RawJSON())
	for _, k := range []string{"path", "content", "content_size_bytes", "content_sha256"} {
		if string(raw[k]) != "null" {
			t.Errorf("redacted %s = %s, want null", k, raw[k])
		}
	}
	if red.RedactedAt.IsZero() || red.RedactedBy.APIKeyID != e.keyID || red.CreatedBy.APIKeyID != e.keyID || red.Operation != "created" {
		t.Errorf("redacted version = %s", red.RawJSON())
	}
	again, err := c.Beta.MemoryStores.MemoryVersions.Redact(ctx, mem.MemoryVersionID, anthropic.BetaMemoryStoreMemoryVersionRedactParams{MemoryStoreID: sid})
	if err != nil || !again.RedactedAt.Equal(red.RedactedAt) {
		t.Errorf("re-redact = %v, %v", again, err)
	}
	// The current version of a live memory cannot be redacted.
	_, err = c.Beta.MemoryStores.MemoryVersions.Redact(ctx, other.MemoryVersionID, anthropic.BetaMemoryStoreMemoryVersionRedactParams{MemoryStoreID: sid})
	wantAPIError(t, err, 400, "invalid_request_error")
	_, err = c.Beta.MemoryStores.MemoryVersions.Get(ctx, "memver_nope", anthropic.BetaMemoryStoreMemoryVersionGetParams{MemoryStoreID: sid})
	wantAPIError(t, err, 404, "not_found_error")
}

// TestSDKOnPostgres runs the SDK suites over PostgreSQL.
func TestSDKOnPostgres(t *testing.T) {
	for name, f := range map[string]func(*testing.T, *testEnv){
		"stores": testSDKStores, "memories": testSDKMemories, "versions": testSDKVersions,
		"concurrent preconditions": testConcurrentPreconditionUpdates,
	} {
		t.Run(name, func(t *testing.T) {
			forTransports(t, func(t *testing.T, tr transport) { f(t, newPostgresEnv(t, tr)) })
		})
	}
}
