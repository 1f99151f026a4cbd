package storagetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage"
)

// RunCore is the service-level conformance suite: it runs every rule of
// core (stores, memories, versions, sessions, keys, authentication,
// retention, cursors) over a driver opened by open, with exact error codes,
// plus concurrency tests of the per-store invariants that must hold on every
// driver. open must return a fresh, empty, migrated database each time; the
// suite closes it.
func RunCore(t *testing.T, open func(t *testing.T) storage.Driver) {
	t.Run("Auth", func(t *testing.T) { testCoreAuth(t, open) })
	t.Run("NoPrincipal", func(t *testing.T) { testCoreNoPrincipal(t, open) })
	t.Run("StoreValidation", func(t *testing.T) { testCoreStoreValidation(t, open) })
	t.Run("StoreLifecycle", func(t *testing.T) { testCoreStoreLifecycle(t, open) })
	t.Run("StoreUpdate", func(t *testing.T) { testCoreStoreUpdate(t, open) })
	t.Run("StoreArchive", func(t *testing.T) { testCoreStoreArchive(t, open) })
	t.Run("StoreDelete", func(t *testing.T) { testCoreStoreDelete(t, open) })
	t.Run("StoreList", func(t *testing.T) { testCoreStoreList(t, open) })
	t.Run("WorkspaceIsolation", func(t *testing.T) { testCoreWorkspaceIsolation(t, open) })
	t.Run("MemoryCreate", func(t *testing.T) { testCoreMemoryCreate(t, open) })
	t.Run("MemoryPathConflict", func(t *testing.T) { testCoreMemoryPathConflict(t, open) })
	t.Run("MemoryUpdate", func(t *testing.T) { testCoreMemoryUpdate(t, open) })
	t.Run("MemoryDelete", func(t *testing.T) { testCoreMemoryDelete(t, open) })
	t.Run("MemoryLimit", func(t *testing.T) { testCoreMemoryLimit(t, open) })
	t.Run("MemoryList", func(t *testing.T) { testCoreMemoryList(t, open) })
	t.Run("MemoryListPaging", func(t *testing.T) { testCoreMemoryListPaging(t, open) })
	t.Run("Versions", func(t *testing.T) { testCoreVersions(t, open) })
	t.Run("Redact", func(t *testing.T) { testCoreRedact(t, open) })
	t.Run("Sessions", func(t *testing.T) { testCoreSessions(t, open) })
	t.Run("SessionValidation", func(t *testing.T) { testCoreSessionValidation(t, open) })
	t.Run("SessionPrincipal", func(t *testing.T) { testCoreSessionPrincipal(t, open) })
	t.Run("Retention", func(t *testing.T) { testCoreRetention(t, open) })
	t.Run("ConcurrentOverlap", func(t *testing.T) { testCoreConcurrentOverlap(t, open) })
	t.Run("ConcurrentLimit", func(t *testing.T) { testCoreConcurrentLimit(t, open) })
	t.Run("ConcurrentPrecondition", func(t *testing.T) { testCoreConcurrentPrecondition(t, open) })
	t.Run("ConcurrentMetadataMerge", func(t *testing.T) { testCoreConcurrentMetadataMerge(t, open) })
	t.Run("Directories", func(t *testing.T) { testCoreDirectories(t, open) })
}

// coreClock is a clock for core.Options.Now: every reading advances it by
// Step, so successive writes get strictly increasing times.
type coreClock struct {
	mu   sync.Mutex
	t    time.Time
	Step time.Duration
}

// newCoreClock returns a clock at start advancing by step on each reading.
func newCoreClock(start time.Time, step time.Duration) *coreClock {
	return &coreClock{t: start, Step: step}
}

// Now returns the current fake time and advances it by Step.
func (c *coreClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t = c.t.Add(c.Step)
	return t
}

// Advance moves the clock forward by d.
func (c *coreClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// coreEnv is one service over a fresh database, with an API key in
// workspace A (ctx) and one in workspace B (ctxB).
type coreEnv struct {
	svc   *core.Service
	clock *coreClock
	ctx   context.Context
	ctxB  context.Context
	keyID string
}

const (
	coreWSA = "wrkspc_A"
	coreWSB = "wrkspc_B"
)

var coreT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newCoreEnv(t *testing.T, open func(t *testing.T) storage.Driver, limits trove.Limits) *coreEnv {
	t.Helper()
	d := open(t)
	t.Cleanup(func() { d.Close() })
	clock := newCoreClock(coreT0, time.Millisecond)
	svc := core.New(d, core.Options{Limits: limits, Now: clock.Now})
	e := &coreEnv{svc: svc, clock: clock}
	var p *trove.Principal
	e.ctx, p = e.keyCtx(t, coreWSA)
	e.keyID = p.Actor.APIKeyID
	e.ctxB, _ = e.keyCtx(t, coreWSB)
	return e
}

// keyCtx creates an API key in ws and returns a context carrying its
// authenticated principal.
func (e *coreEnv) keyCtx(t *testing.T, ws string) (context.Context, *trove.Principal) {
	t.Helper()
	_, secret, err := e.svc.CreateKey(context.Background(), ws, "test key")
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	p, err := e.svc.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	return trove.WithPrincipal(context.Background(), p), p
}

// sessionCtx creates a session and returns a context carrying its
// authenticated principal, the session and its token.
func (e *coreEnv) sessionCtx(t *testing.T, stores ...trove.AttachStoreParams) (context.Context, *trove.Session, string) {
	t.Helper()
	se, token, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: stores})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	p, err := e.svc.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatalf("Authenticate(session token): %v", err)
	}
	return trove.WithPrincipal(context.Background(), p), se, token
}

func (e *coreEnv) store(t *testing.T, name string) *trove.Store {
	t.Helper()
	s, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: name})
	if err != nil {
		t.Fatalf("CreateStore(%q): %v", name, err)
	}
	return s
}

func (e *coreEnv) memory(t *testing.T, storeID, path, content string) *trove.Memory {
	t.Helper()
	m, err := e.svc.CreateMemory(e.ctx, storeID, trove.CreateMemoryParams{Path: path, Content: content})
	if err != nil {
		t.Fatalf("CreateMemory(%q): %v", path, err)
	}
	return m
}

// allVersions lists every version matching p, following cursors.
func (e *coreEnv) allVersions(t *testing.T, storeID string, p trove.ListVersionsParams) []trove.MemoryVersion {
	t.Helper()
	var out []trove.MemoryVersion
	p.Limit = 100
	for range 1000 {
		pg, err := e.svc.ListVersions(e.ctx, storeID, p)
		if err != nil {
			t.Fatalf("ListVersions: %v", err)
		}
		out = append(out, pg.Data...)
		if pg.NextPage == "" {
			return out
		}
		p.Cursor = pg.NextPage
	}
	t.Fatal("ListVersions: too many pages")
	return nil
}

// allMemories lists every memory item matching p, following cursors.
func (e *coreEnv) allMemories(t *testing.T, ctx context.Context, storeID string, p trove.ListMemoriesParams) []trove.MemoryListItem {
	t.Helper()
	var out []trove.MemoryListItem
	for range 10000 {
		pg, err := e.svc.ListMemories(ctx, storeID, p)
		if err != nil {
			t.Fatalf("ListMemories(%+v): %v", p, err)
		}
		if p.Limit > 0 && len(pg.Data) > p.Limit {
			t.Fatalf("ListMemories returned %d items with limit %d", len(pg.Data), p.Limit)
		}
		if pg.NextPage != "" && len(pg.Data) == 0 {
			t.Fatalf("ListMemories returned an empty page with a next page")
		}
		out = append(out, pg.Data...)
		if pg.NextPage == "" {
			return out
		}
		p.Cursor = pg.NextPage
	}
	t.Fatal("ListMemories: too many pages")
	return nil
}

func coreWantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := trove.ErrorCode(err); got != code {
		t.Fatalf("%s: error code %q (%v), want %q", what, got, err, code)
	}
	if err == nil {
		return
	}
	if msg := trove.ErrorMessage(err); msg == "" || msg == "internal error" {
		t.Fatalf("%s: unhelpful message %q", what, msg)
	}
}

func coreSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func corePtr[T any](v T) *T { return &v }

func coreItemPaths(items []trove.MemoryListItem) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		switch {
		case it.Memory != nil && it.Prefix == nil:
			out = append(out, it.Memory.Path)
		case it.Prefix != nil && it.Memory == nil:
			out = append(out, "prefix:"+it.Prefix.Path)
		default:
			out = append(out, "BAD ITEM")
		}
	}
	return out
}

// --- auth ---------------------------------------------------------------

func testCoreAuth(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	bg := context.Background()

	k, secret, err := e.svc.CreateKey(bg, coreWSA, "ci")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "trove_sk_") || len(secret) != len("trove_sk_")+40 {
		t.Fatalf("secret %q: want trove_sk_ + 40 chars", secret)
	}
	for _, r := range secret[len("trove_sk_"):] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			t.Fatalf("secret %q has a non-base62 character", secret)
		}
	}
	if !strings.HasPrefix(k.ID, trove.PrefixAPIKey) || k.WorkspaceID != coreWSA || k.Name != "ci" || k.RevokedAt != nil {
		t.Fatalf("key = %+v", k)
	}
	if k.Hint == "" || !strings.HasSuffix(secret, k.Hint) || len(k.Hint) >= 40 {
		t.Fatalf("hint %q does not identify the secret's tail", k.Hint)
	}
	p, err := e.svc.Authenticate(bg, secret)
	if err != nil {
		t.Fatal(err)
	}
	want := &trove.Principal{WorkspaceID: coreWSA, Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Fatalf("principal (-want +got):\n%s", diff)
	}
	keys, err := e.svc.ListKeys(bg, coreWSA)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[1].ID != k.ID {
		t.Fatalf("ListKeys(%s) = %+v, want 2 keys, the new one last", coreWSA, keys)
	}
	if keys, _ := e.svc.ListKeys(bg, ""); len(keys) != 3 {
		t.Fatalf("ListKeys(all) = %d keys, want 3", len(keys))
	}
	if keys, err := e.svc.ListKeys(e.ctxB, ""); err != nil || len(keys) != 1 || keys[0].WorkspaceID != coreWSB {
		t.Fatalf("ListKeys as a workspace B key = %+v, %v; want only B's key", keys, err)
	}

	for _, bad := range []string{"", "trove_sk_", secret + "x", secret[:len(secret)-1], "trove_st_" + secret[9:], "Bearer " + secret, strings.Repeat("x", 10000)} {
		_, err := e.svc.Authenticate(bg, bad)
		coreWantCode(t, fmt.Sprintf("Authenticate(%.20q)", bad), err, trove.EUNAUTHENTICATED)
	}

	if err := e.svc.RevokeKey(bg, k.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Authenticate(bg, secret)
	coreWantCode(t, "Authenticate(revoked)", err, trove.EUNAUTHENTICATED)
	if err := e.svc.RevokeKey(bg, k.ID); err != nil {
		t.Fatalf("RevokeKey twice: %v", err)
	}
	coreWantCode(t, "RevokeKey(unknown)", e.svc.RevokeKey(bg, "apikey_nope"), trove.ENOTFOUND)
	coreWantCode(t, "RevokeKey(other workspace)", e.svc.RevokeKey(e.ctxB, k.ID), trove.ENOTFOUND)
	_, _, err = e.svc.CreateKey(e.ctxB, coreWSA, "x")
	coreWantCode(t, "CreateKey(other workspace)", err, trove.EFORBIDDEN)
	_, _, err = e.svc.CreateKey(bg, "", "x")
	coreWantCode(t, "CreateKey(no workspace)", err, trove.EINVALID)
	_, _, err = e.svc.CreateKey(bg, coreWSA, "bad\nname")
	coreWantCode(t, "CreateKey(control char)", err, trove.EINVALID)

	// Session tokens.
	st := e.store(t, "S")
	sctx, se, token := e.sessionCtx(t, trove.AttachStoreParams{StoreID: st.ID, Access: trove.AccessReadOnly})
	if !strings.HasPrefix(token, "trove_st_") || len(token) != len("trove_st_")+40 {
		t.Fatalf("session token %q: want trove_st_ + 40 chars", token)
	}
	sp := trove.PrincipalFrom(sctx)
	wantP := &trove.Principal{
		WorkspaceID: coreWSA,
		Actor:       trove.Actor{Type: trove.ActorSession, SessionID: se.ID},
		Session:     &trove.SessionScope{SessionID: se.ID, Stores: map[string]trove.Access{st.ID: trove.AccessReadOnly}},
	}
	if diff := cmp.Diff(wantP, sp); diff != "" {
		t.Fatalf("session principal (-want +got):\n%s", diff)
	}
	_, _, err = e.svc.CreateKey(sctx, coreWSA, "x")
	coreWantCode(t, "CreateKey(session)", err, trove.EFORBIDDEN)
	if _, err := e.svc.EndSession(e.ctx, se.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Authenticate(bg, token)
	coreWantCode(t, "Authenticate(ended session)", err, trove.EUNAUTHENTICATED)
}

func testCoreNoPrincipal(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	st := e.store(t, "S")
	m := e.memory(t, st.ID, "/a", "x")
	ctx := context.Background()
	calls := map[string]func() error{
		"CreateStore": func() error { _, err := e.svc.CreateStore(ctx, trove.CreateStoreParams{Name: "x"}); return err },
		"GetStore":    func() error { _, err := e.svc.GetStore(ctx, st.ID); return err },
		"UpdateStore": func() error {
			_, err := e.svc.UpdateStore(ctx, st.ID, trove.UpdateStoreParams{Name: corePtr("y")})
			return err
		},
		"ListStores":   func() error { _, err := e.svc.ListStores(ctx, trove.ListStoresParams{}); return err },
		"ArchiveStore": func() error { _, err := e.svc.ArchiveStore(ctx, st.ID); return err },
		"DeleteStore":  func() error { return e.svc.DeleteStore(ctx, st.ID) },
		"CreateMemory": func() error {
			_, err := e.svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/b"})
			return err
		},
		"GetMemory": func() error { _, err := e.svc.GetMemory(ctx, st.ID, m.ID, ""); return err },
		"UpdateMemory": func() error {
			_, err := e.svc.UpdateMemory(ctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: corePtr("y")})
			return err
		},
		"ListMemories":  func() error { _, err := e.svc.ListMemories(ctx, st.ID, trove.ListMemoriesParams{}); return err },
		"DeleteMemory":  func() error { return e.svc.DeleteMemory(ctx, st.ID, m.ID, "") },
		"GetVersion":    func() error { _, err := e.svc.GetVersion(ctx, st.ID, m.VersionID, ""); return err },
		"ListVersions":  func() error { _, err := e.svc.ListVersions(ctx, st.ID, trove.ListVersionsParams{}); return err },
		"RedactVersion": func() error { _, err := e.svc.RedactVersion(ctx, st.ID, m.VersionID); return err },
		"CreateSession": func() error { _, _, err := e.svc.CreateSession(ctx, trove.CreateSessionParams{}); return err },
		"GetSession":    func() error { _, err := e.svc.GetSession(ctx, "sesn_x"); return err },
		"ListSessions":  func() error { _, err := e.svc.ListSessions(ctx, trove.ListSessionsParams{}); return err },
		"EndSession":    func() error { _, err := e.svc.EndSession(ctx, "sesn_x"); return err },
	}
	for name, call := range calls {
		coreWantCode(t, name+" without principal", call(), trove.EUNAUTHENTICATED)
	}
	// Nothing changed.
	got, err := e.svc.GetMemory(e.ctx, st.ID, m.ID, trove.ViewFull)
	if err != nil || *got.Content != "x" || got.Path != "/a" {
		t.Fatalf("memory changed by unauthenticated calls: %+v, %v", got, err)
	}
}

// --- stores -------------------------------------------------------------

func testCoreStoreValidation(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
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
			coreWantCode(t, "CreateStore", err, tt.code)
			if tt.detail != "" {
				var te *trove.Error
				if !coreAsError(err, &te) || te.DetailCode != tt.detail {
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

func coreAsError(err error, target **trove.Error) bool {
	te, ok := err.(*trove.Error)
	if ok {
		*target = te
	}
	return ok
}

func testCoreStoreLifecycle(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "Prefs"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.ID, trove.PrefixStore) || s.WorkspaceID != coreWSA || s.Name != "Prefs" || s.Description != "" ||
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
	coreWantCode(t, "GetStore(unknown)", err, trove.ENOTFOUND)
	// Memory changes do not touch the store's updated_at.
	m := e.memory(t, s.ID, "/a", "x")
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: corePtr("y")}); err != nil {
		t.Fatal(err)
	}
	got, _ = e.svc.GetStore(e.ctx, s.ID)
	if !got.UpdatedAt.Equal(s.UpdatedAt) {
		t.Fatalf("memory writes changed the store's updated_at: %v -> %v", s.UpdatedAt, got.UpdatedAt)
	}
}

func testCoreStoreUpdate(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "A", Description: "d", Metadata: map[string]string{"a": "1", "b": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	// A no-op update changes nothing, updated_at included.
	for _, p := range []trove.UpdateStoreParams{
		{},
		{Name: corePtr("A")},
		{Description: corePtr("d")},
		{Metadata: map[string]*string{"a": corePtr("1")}},
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
		Name: corePtr("B"), Description: corePtr(""),
		Metadata: map[string]*string{"a": nil, "b": corePtr("3"), "c": corePtr("4")},
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
		md[fmt.Sprintf("k%02d", i)] = corePtr("v")
	}
	_, err = e.svc.UpdateStore(e.ctx, s.ID, trove.UpdateStoreParams{Metadata: md}) // 2 + 14 = 16
	coreWantCode(t, "UpdateStore(16 pairs after merge)", err, "")
	_, err = e.svc.UpdateStore(e.ctx, s.ID, trove.UpdateStoreParams{Metadata: map[string]*string{"x": corePtr("v")}})
	coreWantCode(t, "UpdateStore(17 pairs after merge)", err, trove.EINVALID)
	var te *trove.Error
	if !coreAsError(err, &te) || te.DetailCode != "invalid_metadata" {
		t.Fatalf("DetailCode of %v, want invalid_metadata", err)
	}
	_, err = e.svc.UpdateStore(e.ctx, s.ID, trove.UpdateStoreParams{Metadata: map[string]*string{"x": corePtr("v"), "b": nil}})
	coreWantCode(t, "UpdateStore(remove one, add one at the limit)", err, "")

	tests := []struct {
		name string
		p    trove.UpdateStoreParams
	}{
		{"empty name", trove.UpdateStoreParams{Name: corePtr("")}},
		{"long name", trove.UpdateStoreParams{Name: corePtr(strings.Repeat("n", 256))}},
		{"control name", trove.UpdateStoreParams{Name: corePtr("a\tb")}},
		{"long description", trove.UpdateStoreParams{Description: corePtr(strings.Repeat("d", 1025))}},
		{"long key", trove.UpdateStoreParams{Metadata: map[string]*string{strings.Repeat("k", 65): corePtr("v")}}},
		{"long value", trove.UpdateStoreParams{Metadata: map[string]*string{"c": corePtr(strings.Repeat("v", 513))}}},
	}
	before, _ := e.svc.GetStore(e.ctx, s.ID)
	for _, tt := range tests {
		_, err := e.svc.UpdateStore(e.ctx, s.ID, tt.p)
		coreWantCode(t, "UpdateStore("+tt.name+")", err, trove.EINVALID)
	}
	if after, _ := e.svc.GetStore(e.ctx, s.ID); !cmp.Equal(before, after) {
		t.Fatalf("refused updates changed the store: %+v -> %+v", before, after)
	}
	_, err = e.svc.UpdateStore(e.ctx, "memstore_missing", trove.UpdateStoreParams{Name: corePtr("x")})
	coreWantCode(t, "UpdateStore(unknown)", err, trove.ENOTFOUND)
}

func testCoreStoreArchive(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s := e.store(t, "A")
	m := e.memory(t, s.ID, "/a", "one")
	m2, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: corePtr("two")})
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

	_, err = e.svc.UpdateStore(e.ctx, s.ID, trove.UpdateStoreParams{Name: corePtr("B")})
	coreWantCode(t, "UpdateStore(archived)", err, trove.EINVALID)
	_, err = e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/c", Content: "c"})
	coreWantCode(t, "CreateMemory(archived)", err, trove.EINVALID)
	_, err = e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: corePtr("three")})
	coreWantCode(t, "UpdateMemory(archived)", err, trove.EINVALID)
	_, err = e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Path: corePtr("/z")})
	coreWantCode(t, "UpdateMemory(archived rename)", err, trove.EINVALID)

	// Reads, deletes and redaction still work.
	if got, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, trove.ViewFull); err != nil || *got.Content != "two" {
		t.Fatalf("GetMemory(archived) = %+v, %v", got, err)
	}
	if items := e.allMemories(t, e.ctx, s.ID, trove.ListMemoriesParams{}); len(items) != 2 {
		t.Fatalf("ListMemories(archived) = %v", coreItemPaths(items))
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
	coreWantCode(t, "ArchiveStore(unknown)", err, trove.ENOTFOUND)
	if err := e.svc.DeleteStore(e.ctx, s.ID); err != nil {
		t.Fatalf("DeleteStore(archived): %v", err)
	}
}

func testCoreStoreDelete(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s := e.store(t, "doomed")
	keep := e.store(t, "kept")
	m := e.memory(t, s.ID, "/a", "x")
	km := e.memory(t, keep.ID, "/a", "x")
	if err := e.svc.DeleteStore(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.GetStore(e.ctx, s.ID)
	coreWantCode(t, "GetStore(deleted)", err, trove.ENOTFOUND)
	_, err = e.svc.GetMemory(e.ctx, s.ID, m.ID, "")
	coreWantCode(t, "GetMemory(deleted store)", err, trove.ENOTFOUND)
	_, err = e.svc.GetVersion(e.ctx, s.ID, m.VersionID, "")
	coreWantCode(t, "GetVersion(deleted store)", err, trove.ENOTFOUND)
	_, err = e.svc.ListVersions(e.ctx, s.ID, trove.ListVersionsParams{})
	coreWantCode(t, "ListVersions(deleted store)", err, trove.ENOTFOUND)
	coreWantCode(t, "DeleteStore(again)", e.svc.DeleteStore(e.ctx, s.ID), trove.ENOTFOUND)
	if _, err := e.svc.GetMemory(e.ctx, keep.ID, km.ID, ""); err != nil {
		t.Fatalf("other store's memory: %v", err)
	}
	if vs := e.allVersions(t, keep.ID, trove.ListVersionsParams{}); len(vs) != 1 {
		t.Fatalf("other store's versions = %d, want 1", len(vs))
	}
}

func testCoreStoreList(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
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
		coreWantCode(t, fmt.Sprintf("ListStores(%+v)", p), err, trove.EINVALID)
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

func testCoreWorkspaceIsolation(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s := e.store(t, "A's")
	m := e.memory(t, s.ID, "/a", "x")
	ctx := e.ctxB
	calls := map[string]func() error{
		"GetStore": func() error { _, err := e.svc.GetStore(ctx, s.ID); return err },
		"UpdateStore": func() error {
			_, err := e.svc.UpdateStore(ctx, s.ID, trove.UpdateStoreParams{Name: corePtr("y")})
			return err
		},
		"ArchiveStore": func() error { _, err := e.svc.ArchiveStore(ctx, s.ID); return err },
		"DeleteStore":  func() error { return e.svc.DeleteStore(ctx, s.ID) },
		"CreateMemory": func() error {
			_, err := e.svc.CreateMemory(ctx, s.ID, trove.CreateMemoryParams{Path: "/b"})
			return err
		},
		"GetMemory": func() error { _, err := e.svc.GetMemory(ctx, s.ID, m.ID, ""); return err },
		"UpdateMemory": func() error {
			_, err := e.svc.UpdateMemory(ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: corePtr("y")})
			return err
		},
		"ListMemories":  func() error { _, err := e.svc.ListMemories(ctx, s.ID, trove.ListMemoriesParams{}); return err },
		"DeleteMemory":  func() error { return e.svc.DeleteMemory(ctx, s.ID, m.ID, "") },
		"GetVersion":    func() error { _, err := e.svc.GetVersion(ctx, s.ID, m.VersionID, ""); return err },
		"ListVersions":  func() error { _, err := e.svc.ListVersions(ctx, s.ID, trove.ListVersionsParams{}); return err },
		"RedactVersion": func() error { _, err := e.svc.RedactVersion(ctx, s.ID, m.VersionID); return err },
		"CreateSession": func() error {
			_, _, err := e.svc.CreateSession(ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: s.ID}}})
			return err
		},
	}
	for name, call := range calls {
		coreWantCode(t, name+" from another workspace", call(), trove.ENOTFOUND)
	}
	got, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, trove.ViewFull)
	if err != nil || *got.Content != "x" {
		t.Fatalf("memory changed from another workspace: %+v, %v", got, err)
	}
	if st, err := e.svc.GetStore(e.ctx, s.ID); err != nil || st.Name != "A's" || st.ArchivedAt != nil {
		t.Fatalf("store changed from another workspace: %+v, %v", st, err)
	}
	// A session of A cannot be read or ended from B.
	_, se, _ := e.sessionCtx(t, trove.AttachStoreParams{StoreID: s.ID})
	_, err = e.svc.GetSession(ctx, se.ID)
	coreWantCode(t, "GetSession from another workspace", err, trove.ENOTFOUND)
	_, err = e.svc.EndSession(ctx, se.ID)
	coreWantCode(t, "EndSession from another workspace", err, trove.ENOTFOUND)
}

// --- memories -----------------------------------------------------------

func testCoreMemoryCreate(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	content := "Always use 2-space indentation.\r\n"
	m, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/prefs/format.md", Content: content})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.ID, trove.PrefixMemory) || !strings.HasPrefix(m.VersionID, trove.PrefixVersion) ||
		m.StoreID != s.ID || m.Path != "/prefs/format.md" || m.Content != nil || m.SizeBytes != len(content) ||
		m.SHA256 != coreSHA(content) || !m.CreatedAt.Equal(m.UpdatedAt) {
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
		Path: corePtr(m.Path), Content: &content, SizeBytes: corePtr(len(content)), SHA256: corePtr(coreSHA(content)),
		CreatedBy: &trove.Actor{Type: trove.ActorAPI, APIKeyID: e.keyID}, CreatedAt: m.CreatedAt,
	}
	if diff := cmp.Diff(wantV, v); diff != "" {
		t.Fatalf("version #1 (-want +got):\n%s", diff)
	}
	fm, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/full", Content: "", View: trove.ViewFull})
	if err != nil || fm.Content == nil || *fm.Content != "" || fm.SizeBytes != 0 || fm.SHA256 != coreSHA("") {
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
			coreWantCode(t, "CreateMemory", err, tt.code)
		})
	}
	_, err = e.svc.CreateMemory(e.ctx, "memstore_missing", trove.CreateMemoryParams{Path: "/x"})
	coreWantCode(t, "CreateMemory(unknown store)", err, trove.ENOTFOUND)
	_, err = e.svc.GetMemory(e.ctx, s.ID, "mem_missing", "")
	coreWantCode(t, "GetMemory(unknown)", err, trove.ENOTFOUND)
	_, err = e.svc.GetMemory(e.ctx, s.ID, m.ID, "everything")
	coreWantCode(t, "GetMemory(bad view)", err, trove.EINVALID)
	other := e.store(t, "other")
	_, err = e.svc.GetMemory(e.ctx, other.ID, m.ID, "")
	coreWantCode(t, "GetMemory(memory of another store)", err, trove.ENOTFOUND)
}

func testCoreMemoryPathConflict(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
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
		coreWantCode(t, "CreateMemory("+tt.path+")", err, tt.code)
		if tt.code == trove.EPATHCONFLICT {
			var te *trove.Error
			if !coreAsError(err, &te) || te.ConflictingPath != tt.conflict || te.ConflictingMemoryID != ab.ID {
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

func testCoreMemoryUpdate(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	m := e.memory(t, s.ID, "/notes/a.md", "one")
	e.memory(t, s.ID, "/other/b.md", "b")
	versions := func() int { return len(e.allVersions(t, s.ID, trove.ListVersionsParams{MemoryID: m.ID})) }

	// A real content change.
	u, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: corePtr("two"), PreconditionSHA256: coreSHA("one"), View: trove.ViewFull})
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != m.ID || u.Path != m.Path || *u.Content != "two" || u.SHA256 != coreSHA("two") || u.SizeBytes != 3 ||
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
		{Content: corePtr("two")},
		{Path: corePtr("/notes/a.md")},
		{Content: corePtr("two"), Path: corePtr("/notes/a.md")},
		{Content: corePtr("two"), PreconditionSHA256: coreSHA("stale")},
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
	if got, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: corePtr("two"), View: trove.ViewFull}); err != nil || got.Content == nil || *got.Content != "two" {
		t.Fatalf("no-op UpdateMemory with full view = %+v, %v", got, err)
	}
	if got, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Path: corePtr(m.Path), View: trove.ViewFull}); err != nil || got.Content == nil || *got.Content != "two" {
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
		{"precondition only", trove.UpdateMemoryParams{PreconditionSHA256: coreSHA("two")}, trove.EINVALID},
		{"malformed precondition", trove.UpdateMemoryParams{Content: corePtr("x"), PreconditionSHA256: "abc"}, trove.EINVALID},
		{"uppercase precondition", trove.UpdateMemoryParams{Content: corePtr("x"), PreconditionSHA256: strings.ToUpper(coreSHA("two"))}, trove.EINVALID},
		{"stale precondition", trove.UpdateMemoryParams{Content: corePtr("x"), PreconditionSHA256: coreSHA("one")}, trove.EPRECONDITION},
		{"stale precondition rename", trove.UpdateMemoryParams{Path: corePtr("/z"), PreconditionSHA256: coreSHA("one")}, trove.EPRECONDITION},
		{"content too large", trove.UpdateMemoryParams{Content: corePtr(strings.Repeat("x", 102401))}, trove.EINVALID},
		{"invalid UTF-8", trove.UpdateMemoryParams{Content: corePtr("\xff")}, trove.EINVALID},
		{"bad path", trove.UpdateMemoryParams{Path: corePtr("/a/")}, trove.EINVALID},
		{"bad view", trove.UpdateMemoryParams{Content: corePtr("x"), View: "raw"}, trove.EINVALID},
		{"rename onto existing", trove.UpdateMemoryParams{Path: corePtr("/other/b.md")}, trove.EPATHCONFLICT},
		{"rename below existing", trove.UpdateMemoryParams{Path: corePtr("/other/b.md/c")}, trove.EPATHCONFLICT},
		{"rename above existing", trove.UpdateMemoryParams{Path: corePtr("/other")}, trove.EPATHCONFLICT},
	}
	for _, tt := range tests {
		_, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, tt.p)
		coreWantCode(t, "UpdateMemory("+tt.name+")", err, tt.code)
	}
	if got, _ := e.svc.GetMemory(e.ctx, s.ID, m.ID, ""); *got.Content != "two" || got.VersionID != u.VersionID {
		t.Fatalf("refused updates changed the memory: %+v", got)
	}
	if n := versions(); n != 2 {
		t.Fatalf("refused updates wrote versions: %d", n)
	}
	_, err = e.svc.UpdateMemory(e.ctx, s.ID, "mem_missing", trove.UpdateMemoryParams{Content: corePtr("x")})
	coreWantCode(t, "UpdateMemory(unknown)", err, trove.ENOTFOUND)

	// Rename keeps the ID, frees the old path, and may move below itself.
	r, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Path: corePtr("/notes/a.md/deeper"), PreconditionSHA256: coreSHA("two")})
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != m.ID || r.Path != "/notes/a.md/deeper" || r.SHA256 != coreSHA("two") || r.VersionID == u.VersionID {
		t.Fatalf("renamed memory = %+v", r)
	}
	rv, _ := e.svc.GetVersion(e.ctx, s.ID, r.VersionID, "")
	if rv.Operation != trove.OpModified || *rv.Path != "/notes/a.md/deeper" || *rv.Content != "two" {
		t.Fatalf("rename version = %+v", rv)
	}
	_, err = e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/notes/a.md"})
	coreWantCode(t, "CreateMemory(ancestor of the renamed memory)", err, trove.EPATHCONFLICT)
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Path: corePtr("/moved.md")}); err != nil {
		t.Fatal(err)
	}
	e.memory(t, s.ID, "/notes/a.md", "reuse")
	// Content and path together.
	both, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Path: corePtr("/both.md"), Content: corePtr("three")})
	if err != nil || both.Path != "/both.md" || both.SHA256 != coreSHA("three") {
		t.Fatalf("UpdateMemory(both) = %+v, %v", both, err)
	}
	if n := versions(); n != 5 {
		t.Fatalf("%d versions, want 5", n)
	}
}

func testCoreMemoryDelete(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	m := e.memory(t, s.ID, "/a/b", "content")
	coreWantCode(t, "DeleteMemory(malformed sha)", e.svc.DeleteMemory(e.ctx, s.ID, m.ID, "nope"), trove.EINVALID)
	coreWantCode(t, "DeleteMemory(stale sha)", e.svc.DeleteMemory(e.ctx, s.ID, m.ID, coreSHA("other")), trove.EPRECONDITION)
	if _, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, ""); err != nil {
		t.Fatalf("a refused delete deleted: %v", err)
	}
	if err := e.svc.DeleteMemory(e.ctx, s.ID, m.ID, coreSHA("content")); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, "")
	coreWantCode(t, "GetMemory(deleted)", err, trove.ENOTFOUND)
	coreWantCode(t, "DeleteMemory(again)", e.svc.DeleteMemory(e.ctx, s.ID, m.ID, ""), trove.ENOTFOUND)
	_, err = e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: corePtr("x")})
	coreWantCode(t, "UpdateMemory(deleted)", err, trove.ENOTFOUND)

	vs := e.allVersions(t, s.ID, trove.ListVersionsParams{MemoryID: m.ID, View: trove.ViewFull})
	if len(vs) != 2 {
		t.Fatalf("%d versions after delete, want 2", len(vs))
	}
	d := vs[0]
	want := trove.MemoryVersion{
		ID: d.ID, StoreID: s.ID, MemoryID: m.ID, Operation: trove.OpDeleted, Path: corePtr("/a/b"),
		CreatedBy: &trove.Actor{Type: trove.ActorAPI, APIKeyID: e.keyID}, CreatedAt: d.CreatedAt,
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Fatalf("deleted version (-want +got):\n%s", diff)
	}
	if vs[1].Operation != trove.OpCreated || *vs[1].SHA256 != coreSHA("content") {
		t.Fatalf("previous version = %+v", vs[1])
	}
	// The path is free again, for the same path and for overlapping ones.
	e.memory(t, s.ID, "/a", "now a file")
	if items := e.allMemories(t, e.ctx, s.ID, trove.ListMemoriesParams{}); len(items) != 1 {
		t.Fatalf("list after delete = %v", coreItemPaths(items))
	}
	// Delete without precondition.
	m2 := e.memory(t, s.ID, "/c", "")
	if err := e.svc.DeleteMemory(e.ctx, s.ID, m2.ID, ""); err != nil {
		t.Fatal(err)
	}
	coreWantCode(t, "DeleteMemory(unknown store)", e.svc.DeleteMemory(e.ctx, "memstore_missing", m2.ID, ""), trove.ENOTFOUND)
}

func testCoreMemoryLimit(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{MaxMemoriesPerStore: 3})
	s := e.store(t, "S")
	var ms []*trove.Memory
	for i := range 3 {
		ms = append(ms, e.memory(t, s.ID, fmt.Sprintf("/m%d", i), "x"))
	}
	_, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/m3"})
	coreWantCode(t, "CreateMemory(at the limit)", err, trove.EINVALID)
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, ms[0].ID, trove.UpdateMemoryParams{Content: corePtr("edited")}); err != nil {
		t.Fatalf("update at the limit: %v", err)
	}
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, ms[1].ID, trove.UpdateMemoryParams{Path: corePtr("/renamed")}); err != nil {
		t.Fatalf("rename at the limit: %v", err)
	}
	if err := e.svc.DeleteMemory(e.ctx, s.ID, ms[2].ID, ""); err != nil {
		t.Fatal(err)
	}
	e.memory(t, s.ID, "/m3", "x")
	_, err = e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: "/m4"})
	coreWantCode(t, "CreateMemory(at the limit again)", err, trove.EINVALID)
	// The limit is per store.
	o := e.store(t, "O")
	e.memory(t, o.ID, "/m0", "x")
}

// coreListFixture is a store with a small tree of memories.
var coreListFixture = []string{
	"/a.md",
	"/notes-archive/old.md",
	"/notes/todo.md",
	"/notes/x/y.md",
	"/notes/x/z.md",
	"/notes/x/z2/deep.md",
	"/p/q/r/s.md",
	"/z",
}

func testCoreMemoryList(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	for i, p := range coreListFixture {
		e.memory(t, s.ID, p, fmt.Sprintf("content %d", i))
	}
	tests := []struct {
		prefix string
		depth  int
		want   []string
	}{
		{"", 0, coreListFixture},
		{"/", 0, coreListFixture},
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
				if diff := cmp.Diff(tt.want, coreItemPaths(items)); diff != "" {
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
					if view == trove.ViewFull && it.Memory.SHA256 != coreSHA(*it.Memory.Content) {
						t.Fatalf("%s: content does not match its hash", name)
					}
				}
			}
		}
	}
	pg, err := e.svc.ListMemories(e.ctx, s.ID, trove.ListMemoriesParams{})
	if err != nil || len(pg.Data) != len(coreListFixture) || pg.NextPage != "" {
		t.Fatalf("default list: %d items, next %q, %v", len(pg.Data), pg.NextPage, err)
	}

	bad := []trove.ListMemoriesParams{
		{PathPrefix: "notes/"}, {PathPrefix: "/notes"}, {PathPrefix: "/notes//"}, {PathPrefix: "/../"},
		{Depth: -1}, {Depth: 2}, {Depth: 3}, {Depth: 20}, {PathPrefix: "/notes/", Depth: 2}, {Limit: -1}, {Limit: 101}, {View: "raw"},
		{Cursor: "x"}, {Cursor: "page_zzz"}, {Cursor: "page_eyJ2IjoxLCJrIjoicCIsInQiOiIyMDI2LTExLTMwVDEyOjAwOjAwWiIsImkiOiJ4In0"}, // a position cursor
	}
	for _, p := range bad {
		_, err := e.svc.ListMemories(e.ctx, s.ID, p)
		coreWantCode(t, fmt.Sprintf("ListMemories(%+v)", p), err, trove.EINVALID)
	}
	for _, depth := range []int{-1, 2} {
		_, err := e.svc.ListMemories(e.ctx, s.ID, trove.ListMemoriesParams{Depth: depth})
		if msg := trove.ErrorMessage(err); !strings.Contains(msg, "depth must be 0 or 1") {
			t.Fatalf("ListMemories(depth %d): message %q does not state the rule", depth, msg)
		}
	}
	_, err = e.svc.ListMemories(e.ctx, "memstore_missing", trove.ListMemoriesParams{})
	coreWantCode(t, "ListMemories(unknown store)", err, trove.ENOTFOUND)
}

func testCoreMemoryListPaging(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
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
	last := coreItemPaths(pg.Data)
	items := e.allMemories(t, e.ctx, s.ID, trove.ListMemoriesParams{Limit: 10, Cursor: pg.NextPage})
	got := append(last, coreItemPaths(items)...)
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
		if diff := cmp.Diff(want, coreItemPaths(items)); diff != "" {
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
		t.Fatalf("first page = %v, %v", coreItemPaths(pg.Data), err)
	}
	e.memory(t, e2.ID, "/a/3", "x")
	rest := e.allMemories(t, e.ctx, e2.ID, trove.ListMemoriesParams{Depth: 1, Limit: 1, Cursor: pg.NextPage})
	if diff := cmp.Diff([]string{"prefix:/b/", "/c", "prefix:/d/"}, coreItemPaths(rest)); diff != "" {
		t.Fatalf("rest (-want +got):\n%s", diff)
	}
}

// --- versions -----------------------------------------------------------

func testCoreVersions(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	a := e.memory(t, s.ID, "/a", "a1")
	b := e.memory(t, s.ID, "/b", "b1")
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, a.ID, trove.UpdateMemoryParams{Content: corePtr("a2")}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteMemory(e.ctx, s.ID, b.ID, ""); err != nil {
		t.Fatal(err)
	}
	sctx, se, _ := e.sessionCtx(t, trove.AttachStoreParams{StoreID: s.ID})
	if _, err := e.svc.UpdateMemory(sctx, s.ID, a.ID, trove.UpdateMemoryParams{Content: corePtr("a3")}); err != nil {
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
	if err != nil || gv.Content != nil || *gv.SHA256 != coreSHA("a1") || *gv.SizeBytes != 2 {
		t.Fatalf("GetVersion basic = %+v, %v", gv, err)
	}
	_, err = e.svc.GetVersion(e.ctx, s.ID, "memver_missing", "")
	coreWantCode(t, "GetVersion(unknown)", err, trove.ENOTFOUND)
	o := e.store(t, "O")
	_, err = e.svc.GetVersion(e.ctx, o.ID, all[0].ID, "")
	coreWantCode(t, "GetVersion(version of another store)", err, trove.ENOTFOUND)
	bad := []trove.ListVersionsParams{{Limit: -1}, {Limit: 101}, {Operation: "renamed"}, {View: "raw"}, {Cursor: "page_x"}}
	for _, p := range bad {
		_, err := e.svc.ListVersions(e.ctx, s.ID, p)
		coreWantCode(t, fmt.Sprintf("ListVersions(%+v)", p), err, trove.EINVALID)
	}
}

func testCoreRedact(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	m := e.memory(t, s.ID, "/secret", "password=hunter2")
	_, err := e.svc.RedactVersion(e.ctx, s.ID, m.VersionID)
	coreWantCode(t, "RedactVersion(current version of a live memory)", err, trove.EINVALID)
	if !strings.Contains(trove.ErrorMessage(err), "update or delete the memory first") {
		t.Fatalf("message %q does not say what to do", trove.ErrorMessage(err))
	}
	u, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: corePtr("password=<redacted>")})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := e.svc.GetVersion(e.ctx, s.ID, m.VersionID, "")
	r, err := e.svc.RedactVersion(e.ctx, s.ID, m.VersionID)
	if err != nil {
		t.Fatal(err)
	}
	if r.RedactedAt == nil {
		t.Fatal("RedactedAt not set")
	}
	want := &trove.MemoryVersion{
		ID: m.VersionID, StoreID: s.ID, MemoryID: m.ID, Operation: trove.OpCreated,
		CreatedBy: before.CreatedBy, CreatedAt: before.CreatedAt,
		RedactedAt: r.RedactedAt, RedactedBy: &trove.Actor{Type: trove.ActorAPI, APIKeyID: e.keyID},
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Fatalf("redacted version (-want +got):\n%s", diff)
	}
	for _, view := range []trove.View{"", trove.ViewFull, trove.ViewBasic} {
		g, err := e.svc.GetVersion(e.ctx, s.ID, m.VersionID, view)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, g); diff != "" {
			t.Fatalf("GetVersion(redacted, %q) (-want +got):\n%s", view, diff)
		}
	}
	full, _ := e.svc.ListVersions(e.ctx, s.ID, trove.ListVersionsParams{View: trove.ViewFull})
	for _, v := range full.Data {
		if v.ID == m.VersionID && (v.Content != nil || v.Path != nil) {
			t.Fatalf("listed redacted version has content or path: %+v", v)
		}
	}
	// Idempotent, with the first redaction's time and actor.
	e.clock.Advance(time.Hour)
	ctx2, _ := e.keyCtx(t, coreWSA)
	again, err := e.svc.RedactVersion(ctx2, s.ID, m.VersionID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, again); diff != "" {
		t.Fatalf("second redaction changed the version (-want +got):\n%s", diff)
	}
	// The live memory is untouched.
	if got, _ := e.svc.GetMemory(e.ctx, s.ID, m.ID, ""); *got.Content != "password=<redacted>" || got.VersionID != u.VersionID {
		t.Fatalf("memory after redaction = %+v", got)
	}
	// After deleting the memory its last content version can be redacted.
	if err := e.svc.DeleteMemory(e.ctx, s.ID, m.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.RedactVersion(e.ctx, s.ID, u.VersionID); err != nil {
		t.Fatalf("RedactVersion(last version of a deleted memory): %v", err)
	}
	_, err = e.svc.RedactVersion(e.ctx, s.ID, "memver_missing")
	coreWantCode(t, "RedactVersion(unknown)", err, trove.ENOTFOUND)
	o := e.store(t, "O")
	_, err = e.svc.RedactVersion(e.ctx, o.ID, u.VersionID)
	coreWantCode(t, "RedactVersion(version of another store)", err, trove.ENOTFOUND)
}

// --- sessions -----------------------------------------------------------

func testCoreSessions(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	prefs, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "User Preferences!", Description: "how the user likes things"})
	if err != nil {
		t.Fatal(err)
	}
	n1 := e.store(t, "Notes")
	n2 := e.store(t, "notes")
	n3 := e.store(t, "NOTES??")
	n4 := e.store(t, "Notes 2")
	jp := e.store(t, "日本語")
	se, token, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{
		{StoreID: prefs.ID, Instructions: "Check before answering."},
		{StoreID: n1.ID, Access: trove.AccessReadOnly},
		{StoreID: n2.ID, Access: trove.AccessReadWrite},
		{StoreID: n3.ID},
		{StoreID: n4.ID},
		{StoreID: jp.ID},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if token == "" || !strings.HasPrefix(se.ID, trove.PrefixSession) || se.WorkspaceID != coreWSA || se.EndedAt != nil ||
		se.CreatedBy != (trove.Actor{Type: trove.ActorAPI, APIKeyID: e.keyID}) || se.CreatedAt.IsZero() {
		t.Fatalf("session = %+v", se)
	}
	want := []trove.SessionStore{
		{StoreID: prefs.ID, Access: trove.AccessReadWrite, Name: "User Preferences!", Description: "how the user likes things", Instructions: "Check before answering.", MountPath: "/mnt/memory/user-preferences"},
		{StoreID: n1.ID, Access: trove.AccessReadOnly, Name: "Notes", MountPath: "/mnt/memory/notes"},
		{StoreID: n2.ID, Access: trove.AccessReadWrite, Name: "notes", MountPath: "/mnt/memory/notes-2"},
		{StoreID: n3.ID, Access: trove.AccessReadWrite, Name: "NOTES??", MountPath: "/mnt/memory/notes-3"},
		{StoreID: n4.ID, Access: trove.AccessReadWrite, Name: "Notes 2", MountPath: "/mnt/memory/notes-2-2"},
		{StoreID: jp.ID, Access: trove.AccessReadWrite, Name: "日本語", MountPath: "/mnt/memory/store"},
	}
	if diff := cmp.Diff(want, se.Stores); diff != "" {
		t.Fatalf("attached stores (-want +got):\n%s", diff)
	}
	// Renaming a store later does not change the snapshot.
	if _, err := e.svc.UpdateStore(e.ctx, prefs.ID, trove.UpdateStoreParams{Name: corePtr("Renamed"), Description: corePtr("new")}); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetSession(e.ctx, se.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(se, got); diff != "" {
		t.Fatalf("GetSession (-create +get):\n%s", diff)
	}
	_, err = e.svc.GetSession(e.ctx, "sesn_missing")
	coreWantCode(t, "GetSession(unknown)", err, trove.ENOTFOUND)

	// A session with no stores is allowed.
	empty, _, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{})
	if err != nil || len(empty.Stores) != 0 {
		t.Fatalf("empty session = %+v, %v", empty, err)
	}
	third, _, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: n1.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	// Lists: newest first, by store, paged.
	var ids []string
	cursor := ""
	for range 10 {
		pg, err := e.svc.ListSessions(e.ctx, trove.ListSessionsParams{Limit: 1, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range pg.Data {
			ids = append(ids, x.ID)
		}
		if pg.NextPage == "" {
			break
		}
		cursor = pg.NextPage
	}
	if diff := cmp.Diff([]string{third.ID, empty.ID, se.ID}, ids); diff != "" {
		t.Fatalf("ListSessions (-want +got):\n%s", diff)
	}
	pg, err := e.svc.ListSessions(e.ctx, trove.ListSessionsParams{StoreID: n1.ID})
	if err != nil || len(pg.Data) != 2 || pg.Data[0].ID != third.ID || pg.Data[1].ID != se.ID {
		t.Fatalf("ListSessions(store) = %+v, %v", pg, err)
	}
	pg, err = e.svc.ListSessions(e.ctxB, trove.ListSessionsParams{})
	if err != nil || len(pg.Data) != 0 {
		t.Fatalf("ListSessions from workspace B = %+v, %v", pg, err)
	}
	for _, p := range []trove.ListSessionsParams{{Limit: 101}, {Limit: -1}, {Cursor: "page_!"}} {
		_, err := e.svc.ListSessions(e.ctx, p)
		coreWantCode(t, fmt.Sprintf("ListSessions(%+v)", p), err, trove.EINVALID)
	}

	// EndSession is idempotent.
	ended, err := e.svc.EndSession(e.ctx, se.ID)
	if err != nil || ended.EndedAt == nil {
		t.Fatalf("EndSession = %+v, %v", ended, err)
	}
	e.clock.Advance(time.Hour)
	again, err := e.svc.EndSession(e.ctx, se.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ended, again); diff != "" {
		t.Fatalf("ending twice (-first +second):\n%s", diff)
	}
	if g, _ := e.svc.GetSession(e.ctx, se.ID); !cmp.Equal(ended, g) {
		t.Fatalf("GetSession(ended) = %+v", g)
	}
	_, err = e.svc.Authenticate(context.Background(), token)
	coreWantCode(t, "Authenticate(ended)", err, trove.EUNAUTHENTICATED)
	_, err = e.svc.EndSession(e.ctx, "sesn_missing")
	coreWantCode(t, "EndSession(unknown)", err, trove.ENOTFOUND)
}

func testCoreSessionValidation(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	var stores []trove.AttachStoreParams
	for i := range 9 {
		stores = append(stores, trove.AttachStoreParams{StoreID: e.store(t, fmt.Sprintf("s%d", i)).ID})
	}
	archived := e.store(t, "archived")
	if _, err := e.svc.ArchiveStore(e.ctx, archived.ID); err != nil {
		t.Fatal(err)
	}
	bStore, err := e.svc.CreateStore(e.ctxB, trove.CreateStoreParams{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	id := stores[0].StoreID
	tests := []struct {
		name   string
		stores []trove.AttachStoreParams
		code   string
	}{
		{"eight stores", stores[:8], ""},
		{"nine stores", stores, trove.EINVALID},
		{"duplicate", []trove.AttachStoreParams{{StoreID: id}, {StoreID: id, Access: trove.AccessReadOnly}}, trove.EINVALID},
		{"bad access", []trove.AttachStoreParams{{StoreID: id, Access: "write"}}, trove.EINVALID},
		{"instructions 4096", []trove.AttachStoreParams{{StoreID: id, Instructions: strings.Repeat("é", 4096)}}, ""},
		{"instructions 4097", []trove.AttachStoreParams{{StoreID: id, Instructions: strings.Repeat("i", 4097)}}, trove.EINVALID},
		{"instructions invalid UTF-8", []trove.AttachStoreParams{{StoreID: id, Instructions: "\xff"}}, trove.EINVALID},
		{"archived", []trove.AttachStoreParams{{StoreID: archived.ID}}, trove.EINVALID},
		{"unknown", []trove.AttachStoreParams{{StoreID: id}, {StoreID: "memstore_missing"}}, trove.ENOTFOUND},
		{"other workspace", []trove.AttachStoreParams{{StoreID: bStore.ID}}, trove.ENOTFOUND},
	}
	for _, tt := range tests {
		_, token, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: tt.stores})
		coreWantCode(t, "CreateSession("+tt.name+")", err, tt.code)
		if err != nil && token != "" {
			t.Fatalf("CreateSession(%s) returned a token with an error", tt.name)
		}
	}
	pg, err := e.svc.ListSessions(e.ctx, trove.ListSessionsParams{})
	if err != nil || len(pg.Data) != 2 {
		t.Fatalf("refused sessions were stored: %d sessions, %v", len(pg.Data), err)
	}
}

func testCoreSessionPrincipal(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	rw := e.store(t, "rw")
	ro := e.store(t, "ro")
	hidden := e.store(t, "hidden")
	rom := e.memory(t, ro.ID, "/ref.md", "reference")
	hm := e.memory(t, hidden.ID, "/h", "h")
	sctx, se, _ := e.sessionCtx(t,
		trove.AttachStoreParams{StoreID: rw.ID},
		trove.AttachStoreParams{StoreID: ro.ID, Access: trove.AccessReadOnly},
	)
	other, _, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}

	// Reads of attached stores work; the unattached store does not exist.
	for _, id := range []string{rw.ID, ro.ID} {
		if _, err := e.svc.GetStore(sctx, id); err != nil {
			t.Fatalf("GetStore(attached): %v", err)
		}
	}
	if _, err := e.svc.GetMemory(sctx, ro.ID, rom.ID, ""); err != nil {
		t.Fatalf("GetMemory(read_only store): %v", err)
	}
	if items := e.allMemories(t, sctx, ro.ID, trove.ListMemoriesParams{}); len(items) != 1 {
		t.Fatalf("ListMemories(read_only store) = %v", coreItemPaths(items))
	}
	if _, err := e.svc.ListVersions(sctx, ro.ID, trove.ListVersionsParams{}); err != nil {
		t.Fatalf("ListVersions(read_only store): %v", err)
	}
	pg, err := e.svc.ListStores(sctx, trove.ListStoresParams{})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, s := range pg.Data {
		listed = append(listed, s.ID)
	}
	if diff := cmp.Diff([]string{ro.ID, rw.ID}, listed); diff != "" {
		t.Fatalf("ListStores(session) (-want +got):\n%s", diff)
	}
	pg, err = e.svc.ListStores(sctx, trove.ListStoresParams{Limit: 1})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].ID != ro.ID || pg.NextPage == "" {
		t.Fatalf("ListStores(session, limit 1) = %+v, %v", pg, err)
	}
	pg, err = e.svc.ListStores(sctx, trove.ListStoresParams{Limit: 1, Cursor: pg.NextPage})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].ID != rw.ID || pg.NextPage != "" {
		t.Fatalf("ListStores(session, page 2) = %+v, %v", pg, err)
	}

	notFound := map[string]func() error{
		"GetStore":     func() error { _, err := e.svc.GetStore(sctx, hidden.ID); return err },
		"GetMemory":    func() error { _, err := e.svc.GetMemory(sctx, hidden.ID, hm.ID, ""); return err },
		"ListMemories": func() error { _, err := e.svc.ListMemories(sctx, hidden.ID, trove.ListMemoriesParams{}); return err },
		"GetVersion":   func() error { _, err := e.svc.GetVersion(sctx, hidden.ID, hm.VersionID, ""); return err },
		"ListVersions": func() error { _, err := e.svc.ListVersions(sctx, hidden.ID, trove.ListVersionsParams{}); return err },
		"CreateMemory": func() error {
			_, err := e.svc.CreateMemory(sctx, hidden.ID, trove.CreateMemoryParams{Path: "/x"})
			return err
		},
		"UpdateMemory": func() error {
			_, err := e.svc.UpdateMemory(sctx, hidden.ID, hm.ID, trove.UpdateMemoryParams{Content: corePtr("x")})
			return err
		},
		"DeleteMemory": func() error { return e.svc.DeleteMemory(sctx, hidden.ID, hm.ID, "") },
	}
	for name, call := range notFound {
		coreWantCode(t, name+"(unattached store)", call(), trove.ENOTFOUND)
	}
	forbidden := map[string]func() error{
		"CreateMemory(read_only)": func() error {
			_, err := e.svc.CreateMemory(sctx, ro.ID, trove.CreateMemoryParams{Path: "/x"})
			return err
		},
		"UpdateMemory(read_only)": func() error {
			_, err := e.svc.UpdateMemory(sctx, ro.ID, rom.ID, trove.UpdateMemoryParams{Content: corePtr("x")})
			return err
		},
		"DeleteMemory(read_only)": func() error { return e.svc.DeleteMemory(sctx, ro.ID, rom.ID, "") },
		"CreateStore":             func() error { _, err := e.svc.CreateStore(sctx, trove.CreateStoreParams{Name: "x"}); return err },
		"UpdateStore": func() error {
			_, err := e.svc.UpdateStore(sctx, rw.ID, trove.UpdateStoreParams{Name: corePtr("x")})
			return err
		},
		"ArchiveStore":  func() error { _, err := e.svc.ArchiveStore(sctx, rw.ID); return err },
		"DeleteStore":   func() error { return e.svc.DeleteStore(sctx, rw.ID) },
		"RedactVersion": func() error { _, err := e.svc.RedactVersion(sctx, ro.ID, rom.VersionID); return err },
		"CreateSession": func() error {
			_, _, err := e.svc.CreateSession(sctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: rw.ID}}})
			return err
		},
		"EndSession(other)": func() error { _, err := e.svc.EndSession(sctx, other.ID); return err },
	}
	for name, call := range forbidden {
		coreWantCode(t, name+" by a session", call(), trove.EFORBIDDEN)
	}
	_, err = e.svc.CreateMemory(sctx, ro.ID, trove.CreateMemoryParams{Path: "/x"})
	if !strings.Contains(trove.ErrorMessage(err), "read_only") {
		t.Fatalf("read_only refusal message %q does not say why", trove.ErrorMessage(err))
	}
	// Nothing above changed anything.
	if got, err := e.svc.GetMemory(e.ctx, ro.ID, rom.ID, ""); err != nil || got.VersionID != rom.VersionID {
		t.Fatalf("read_only memory changed: %+v, %v", got, err)
	}
	if got, err := e.svc.GetStore(e.ctx, rw.ID); err != nil || got.Name != "rw" || got.ArchivedAt != nil {
		t.Fatalf("store changed by a session: %+v, %v", got, err)
	}

	// Writes to the read_write store carry the session actor.
	m, err := e.svc.CreateMemory(sctx, rw.ID, trove.CreateMemoryParams{Path: "/agent.md", Content: "learned"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.svc.UpdateMemory(sctx, rw.ID, m.ID, trove.UpdateMemoryParams{Content: corePtr("learned more"), PreconditionSHA256: m.SHA256})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteMemory(sctx, rw.ID, m.ID, u.SHA256); err != nil {
		t.Fatal(err)
	}
	sa := trove.Actor{Type: trove.ActorSession, SessionID: se.ID}
	for _, v := range e.allVersions(t, rw.ID, trove.ListVersionsParams{}) {
		if v.CreatedBy == nil || *v.CreatedBy != sa {
			t.Fatalf("version %s by %+v, want %+v", v.Operation, v.CreatedBy, sa)
		}
	}
	// A session reads and ends only itself.
	if got, err := e.svc.GetSession(sctx, se.ID); err != nil || got.ID != se.ID {
		t.Fatalf("GetSession(own) = %+v, %v", got, err)
	}
	_, err = e.svc.GetSession(sctx, other.ID)
	coreWantCode(t, "GetSession(other) by a session", err, trove.EFORBIDDEN)
	_, err = e.svc.ListSessions(sctx, trove.ListSessionsParams{})
	coreWantCode(t, "ListSessions by a session", err, trove.EFORBIDDEN)
	// Archiving an attached store hides it from the session's list unless
	// archived stores are asked for, and refuses the session's writes.
	if _, err := e.svc.ArchiveStore(e.ctx, rw.ID); err != nil {
		t.Fatal(err)
	}
	if pg, err := e.svc.ListStores(sctx, trove.ListStoresParams{}); err != nil || len(pg.Data) != 1 || pg.Data[0].ID != ro.ID {
		t.Fatalf("ListStores(session) after archive = %+v, %v", pg, err)
	}
	if pg, err := e.svc.ListStores(sctx, trove.ListStoresParams{IncludeArchived: true}); err != nil || len(pg.Data) != 2 {
		t.Fatalf("ListStores(session, include archived) = %+v, %v", pg, err)
	}
	_, err = e.svc.CreateMemory(sctx, rw.ID, trove.CreateMemoryParams{Path: "/late.md"})
	coreWantCode(t, "CreateMemory(archived, by a session)", err, trove.EINVALID)
	if _, err := e.svc.EndSession(sctx, se.ID); err != nil {
		t.Fatalf("EndSession(own): %v", err)
	}
	if g, _ := e.svc.GetSession(e.ctx, other.ID); g.EndedAt != nil {
		t.Fatal("the other session was ended")
	}
}

// --- retention ----------------------------------------------------------

func testCoreRetention(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{VersionRetention: 30 * 24 * time.Hour})
	s := e.store(t, "S")
	day := 24 * time.Hour
	m1 := e.memory(t, s.ID, "/m1", "v1")
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, m1.ID, trove.UpdateMemoryParams{Content: corePtr("v2")}); err != nil {
		t.Fatal(err)
	}
	m2 := e.memory(t, s.ID, "/m2", "x")
	if err := e.svc.DeleteMemory(e.ctx, s.ID, m2.ID, ""); err != nil {
		t.Fatal(err)
	}
	m3 := e.memory(t, s.ID, "/m3", "never changed")
	e.clock.Advance(20 * day)
	latest, err := e.svc.UpdateMemory(e.ctx, s.ID, m1.ID, trove.UpdateMemoryParams{Content: corePtr("v3")})
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.svc.PurgeExpiredVersions(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("purge before expiry: %d, %v", n, err)
	}
	e.clock.Advance(11 * day)
	n, err = e.svc.PurgeExpiredVersions(context.Background())
	if err != nil || n != 4 {
		t.Fatalf("purge: %d, %v; want 4 (m1 v1, v2; m2 created, deleted)", n, err)
	}
	var left []string
	for _, v := range e.allVersions(t, s.ID, trove.ListVersionsParams{}) {
		left = append(left, v.ID)
	}
	if diff := cmp.Diff([]string{latest.VersionID, m3.VersionID}, left); diff != "" {
		t.Fatalf("versions left (-want +got):\n%s", diff)
	}
	e.clock.Advance(365 * day)
	n, err = e.svc.PurgeExpiredVersions(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("purge of current versions: %d, %v", n, err)
	}
	for _, m := range []*trove.Memory{m1, m3} {
		if _, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, ""); err != nil {
			t.Fatalf("memory lost to retention: %v", err)
		}
	}
	// RunRetention stops with its context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.svc.RunRetention(ctx, time.Hour); err == nil {
		t.Fatal("RunRetention returned nil after cancellation")
	}
}

// --- concurrency --------------------------------------------------------

func testCoreConcurrentOverlap(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	paths := []string{"/a", "/a/b", "/a/b/c", "/a/b/c/d", "/a/x", "/a/b/y", "/b", "/b/c", "/b/c/d", "/c/d", "/c"}
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, workers*len(paths)*2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []string
			for i := range paths {
				p := paths[(i*7+w*5)%len(paths)]
				m, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: p, Content: p})
				switch trove.ErrorCode(err) {
				case "":
					mine = append(mine, m.ID)
				case trove.EPATHCONFLICT:
				default:
					errs <- fmt.Errorf("create %s: %w", p, err)
				}
				if len(mine) > 0 && i%2 == 1 {
					to := paths[(i*3+w)%len(paths)]
					_, err := e.svc.UpdateMemory(e.ctx, s.ID, mine[0], trove.UpdateMemoryParams{Path: &to})
					if c := trove.ErrorCode(err); c != "" && c != trove.EPATHCONFLICT {
						errs <- fmt.Errorf("rename to %s: %w", to, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	items := e.allMemories(t, e.ctx, s.ID, trove.ListMemoriesParams{Limit: 100})
	got := coreItemPaths(items)
	if len(got) == 0 {
		t.Fatal("no memory was created")
	}
	for i := range got {
		for j := i + 1; j < len(got); j++ {
			if trove.PathsOverlap(got[i], got[j]) {
				t.Fatalf("overlapping memories exist: %q and %q (all: %v)", got[i], got[j], got)
			}
		}
	}
}

func testCoreConcurrentLimit(t *testing.T, open func(t *testing.T) storage.Driver) {
	const limit = 5
	e := newCoreEnv(t, open, trove.Limits{MaxMemoriesPerStore: limit})
	s := e.store(t, "S")
	const workers = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	errs := make(chan error, workers*2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2 {
				_, err := e.svc.CreateMemory(e.ctx, s.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/w%d/m%d", w, i)})
				switch trove.ErrorCode(err) {
				case "":
					mu.Lock()
					ok++
					mu.Unlock()
				case trove.EINVALID:
				default:
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	items := e.allMemories(t, e.ctx, s.ID, trove.ListMemoriesParams{Limit: 100})
	if ok != limit || len(items) != limit {
		t.Fatalf("%d creates succeeded and %d memories exist; the limit is %d", ok, len(items), limit)
	}
}

func testCoreConcurrentPrecondition(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	m := e.memory(t, s.ID, "/counter", "start")
	const workers, perWorker = 8, 4
	type ack struct {
		base, content, version string
	}
	var wg sync.WaitGroup
	acks := make(chan ack, workers*perWorker)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := 0
			for attempt := 0; done < perWorker; attempt++ {
				if attempt > 10000 {
					errs <- fmt.Errorf("worker %d starved", w)
					return
				}
				cur, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, trove.ViewBasic)
				if err != nil {
					errs <- err
					return
				}
				content := fmt.Sprintf("w%d-%d", w, done)
				u, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: &content, PreconditionSHA256: cur.SHA256})
				switch trove.ErrorCode(err) {
				case "":
					acks <- ack{cur.SHA256, content, u.VersionID}
					done++
				case trove.EPRECONDITION:
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(acks)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	byVersion := map[string]ack{}
	for a := range acks {
		if _, dup := byVersion[a.version]; dup {
			t.Fatalf("two acknowledged writes share version %s", a.version)
		}
		byVersion[a.version] = a
	}
	if len(byVersion) != workers*perWorker {
		t.Fatalf("%d acknowledged writes, want %d", len(byVersion), workers*perWorker)
	}
	vs := e.allVersions(t, s.ID, trove.ListVersionsParams{MemoryID: m.ID, View: trove.ViewFull})
	if len(vs) != workers*perWorker+1 {
		t.Fatalf("%d versions for %d acknowledged writes (+1 create)", len(vs), workers*perWorker)
	}
	// Oldest first: each modification was based on the previous content.
	for i := len(vs) - 2; i >= 0; i-- {
		v, prev := vs[i], vs[i+1]
		a, ok := byVersion[v.ID]
		if !ok {
			t.Fatalf("version %s was not acknowledged to any writer", v.ID)
		}
		if *v.Content != a.content {
			t.Fatalf("version %s holds %q, the writer wrote %q", v.ID, *v.Content, a.content)
		}
		if a.base != *prev.SHA256 {
			t.Fatalf("lost update: version %s was written over %s, but its writer read a different content", v.ID, prev.ID)
		}
	}
	final, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, trove.ViewFull)
	if err != nil {
		t.Fatal(err)
	}
	if final.VersionID != vs[0].ID || *final.Content != *vs[0].Content {
		t.Fatalf("final memory %+v is not the last acknowledged write %+v", final, vs[0])
	}
}

func testCoreConcurrentMetadataMerge(t *testing.T, open func(t *testing.T) storage.Driver) {
	e := newCoreEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	const workers = 12
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := fmt.Sprintf("k%02d", w)
			if _, err := e.svc.UpdateStore(e.ctx, s.ID, trove.UpdateStoreParams{Metadata: map[string]*string{k: corePtr("v")}}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := e.svc.GetStore(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Metadata) != workers {
		t.Fatalf("metadata after %d concurrent merge patches = %v: an update was lost", workers, got.Metadata)
	}
}
