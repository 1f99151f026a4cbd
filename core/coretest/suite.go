// Package coretest is the service-level conformance suite of core: every
// rule of core.Service (stores, memories, listing, versions, redaction and
// retention, sessions, keys and authentication) with exact error codes, and
// concurrency tests of the per-store invariants, run over a storage driver.
// Each driver's tests call Run with a constructor; core's own tests call it
// over an in-memory driver. Only tests import it.
//
// One file per noun; a new file adds its tests to the table in Run.
package coretest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage"
)

// Opener opens a fresh, empty, migrated database for one test. The suite
// closes it when the test ends.
type Opener func(t *testing.T) storage.Driver

// tests is the suite, one group per file. A file of new tests adds its
// group here.
var tests = []struct {
	name string
	fn   func(t *testing.T, open Opener)
}{
	// Keys and authentication (auth.go)
	{"Auth", testAuth},
	{"NoPrincipal", testNoPrincipal},
	{"WorkspaceIsolation", testWorkspaceIsolation},
	{"EnsureFirstKey", testEnsureFirstKey},
	// Stores (stores.go)
	{"StoreValidation", testStoreValidation},
	{"StoreLifecycle", testStoreLifecycle},
	{"StoreUpdate", testStoreUpdate},
	{"StoreArchive", testStoreArchive},
	{"StoreDelete", testStoreDelete},
	{"StoreList", testStoreList},
	// Memories (memories.go)
	{"MemoryCreate", testMemoryCreate},
	{"MemoryPathConflict", testMemoryPathConflict},
	{"MemoryUpdate", testMemoryUpdate},
	{"MemoryDelete", testMemoryDelete},
	{"MemoryLimit", testMemoryLimit},
	// Listing (listing.go)
	{"MemoryList", testMemoryList},
	{"MemoryListPaging", testMemoryListPaging},
	// Versions (versions.go)
	{"Versions", testVersions},
	// Redaction and retention (retention.go)
	{"Redact", testRedact},
	{"Retention", testRetention},
	// Sessions (sessions.go)
	{"Sessions", testSessions},
	{"SessionValidation", testSessionValidation},
	{"SessionPrincipal", testSessionPrincipal},
	// Session transcripts (events.go)
	{"Events", testEvents},
	// Dreams (dreams.go)
	{"Dreams", testDreams},
	// Console sessions (console.go)
	{"ConsoleSessions", testConsoleSessions},
	{"ConsoleRevokedElsewhere", testConsoleRevokedElsewhere},
	// Directories (directories.go)
	{"DirRename", testDirRename},
	{"DirRenameNested", testDirRenameNested},
	{"DirDelete", testDirDelete},
	{"DirRefused", testDirRefused},
	{"DirPreconditions", testDirPreconditions},
	{"DirLimits", testDirLimits},
	{"DirArchivedStore", testDirArchived},
	{"DirSession", testDirSession},
	{"DirPaging", testDirPaging},
	{"DirConcurrentCreate", testDirConcurrentCreate},
	// Search (search.go)
	{"SearchRelevance", testSearchRelevance},
	{"SearchInStep", testSearchInStep},
	{"SearchScope", testSearchScope},
	{"SearchValidation", testSearchValidation},
	{"SearchPaging", testSearchPaging},
	// The time machine (history.go)
	{"AsOfModel", testAsOfModel},
	{"Fork", testFork},
	{"ForkLargeContents", testForkLargeContents},
	{"Audit", testAudit},
	{"RollbackPoisonedSession", testRollbackPoisonedSession},
	{"RollbackPaging", testRollbackPaging},
	{"DiffPagingFar", testDiffPagingFar},
	// Concurrency (concurrency.go)
	{"ConcurrentOverlap", testConcurrentOverlap},
	{"ConcurrentLimit", testConcurrentLimit},
	{"ConcurrentPrecondition", testConcurrentPrecondition},
	{"ConcurrentMetadataMerge", testConcurrentMetadataMerge},
	// Store and workspace limits, and the counters behind them (limits.go)
	{"StoreCountLimit", testStoreCountLimit},
	{"StoreBytesLimit", testStoreBytesLimit},
	{"VersionLimit", testVersionLimit},
	{"StoreStats", testStoreStats},
	{"ConcurrentStoreLimits", testConcurrentStoreLimits},
	// Change feed (changes.go)
	{"Changes", testChanges},
	{"ChangesWait", testChangesWait},
	{"ChangesScope", testChangesScope},
}

// Run is the service-level conformance suite: it runs every rule of core
// over drivers opened by open, with exact error codes, plus concurrency
// tests of the per-store invariants that must hold on every driver. Every
// test opens its own database, so the tests run in parallel; open must be
// safe to call concurrently.
func Run(t *testing.T, open Opener) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open)
		})
	}
}

// clock is a clock for core.Options.Now: every reading advances it by
// Step, so successive writes get strictly increasing times.
type clock struct {
	mu   sync.Mutex
	t    time.Time
	Step time.Duration
}

// newClock returns a clock at start advancing by step on each reading.
func newClock(start time.Time, step time.Duration) *clock {
	return &clock{t: start, Step: step}
}

// Now returns the current fake time and advances it by Step.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t = c.t.Add(c.Step)
	return t
}

// Advance moves the clock forward by d.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is one service over a fresh database, with an API key in
// workspace A (ctx) and one in workspace B (ctxB).
type env struct {
	db    storage.Driver
	svc   *core.Service
	clock *clock
	ctx   context.Context
	ctxB  context.Context
	keyID string
}

const (
	wsA = "wrkspc_A"
	wsB = "wrkspc_B"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T, open Opener, limits trove.Limits) *env {
	t.Helper()
	d := open(t)
	t.Cleanup(func() { d.Close() })
	clock := newClock(t0, time.Millisecond)
	svc := core.New(d, core.Options{Limits: limits, Now: clock.Now})
	e := &env{db: d, svc: svc, clock: clock}
	var p *trove.Principal
	e.ctx, p = e.keyCtx(t, wsA)
	e.keyID = p.Actor.APIKeyID
	e.ctxB, _ = e.keyCtx(t, wsB)
	return e
}

// keyCtx creates an API key in ws and returns a context carrying its
// authenticated principal.
func (e *env) keyCtx(t *testing.T, ws string) (context.Context, *trove.Principal) {
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
func (e *env) sessionCtx(t *testing.T, stores ...trove.AttachStoreParams) (context.Context, *trove.Session, string) {
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

func (e *env) store(t *testing.T, name string) *trove.Store {
	t.Helper()
	s, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: name})
	if err != nil {
		t.Fatalf("CreateStore(%q): %v", name, err)
	}
	return s
}

func (e *env) memory(t *testing.T, storeID, path, content string) *trove.Memory {
	t.Helper()
	m, err := e.svc.CreateMemory(e.ctx, storeID, trove.CreateMemoryParams{Path: path, Content: content})
	if err != nil {
		t.Fatalf("CreateMemory(%q): %v", path, err)
	}
	return m
}

// allVersions lists every version matching p, following cursors.
func (e *env) allVersions(t *testing.T, storeID string, p trove.ListVersionsParams) []trove.MemoryVersion {
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
func (e *env) allMemories(t *testing.T, ctx context.Context, storeID string, p trove.ListMemoriesParams) []trove.MemoryListItem {
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

func wantCode(t *testing.T, what string, err error, code string) {
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

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func ptr[T any](v T) *T { return &v }

func itemPaths(items []trove.MemoryListItem) []string {
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

func asError(err error, target **trove.Error) bool {
	te, ok := err.(*trove.Error)
	if ok {
		*target = te
	}
	return ok
}
