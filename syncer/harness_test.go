package syncer_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
	"github.com/trovehq/trove/syncer"
)

// clock is a fake clock for grace periods and conflict names.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// env is a real core over a real SQLite database in t.TempDir(), one
// workspace with an API key, and one store.
type env struct {
	t       testing.TB
	svc     *core.Service
	ctx     context.Context // workspace principal
	storeID string
	clock   *clock
	root    string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	sqlitetest.Write(t, filepath.Join(root, "trove.db"))
	db, err := sqlite.Open(ctx, filepath.Join(root, "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := core.New(db, core.Options{})
	_, secret, err := svc.CreateKey(ctx, "wrkspc_test", "test")
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	ctx = trove.WithPrincipal(ctx, p)
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "Notes"})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, svc: svc, ctx: ctx, storeID: st.ID, clock: &clock{t: t0}, root: root}
}

// engine opens an engine for dir with its own state dir under the env root.
func (e *env) engine(name string, mod func(*syncer.Options)) *syncer.Engine {
	e.t.Helper()
	o := syncer.Options{
		Services: e.svc,
		StoreID:  e.storeID,
		Dir:      filepath.Join(e.root, name),
		StateDir: filepath.Join(e.root, name+".state"),
		Now:      e.clock.Now,
	}
	if mod != nil {
		mod(&o)
	}
	en, err := syncer.New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { en.Close() })
	return en
}

func (e *env) sync(en *syncer.Engine) *syncer.Report {
	e.t.Helper()
	rep, err := en.Sync(e.ctx)
	if err != nil {
		e.t.Fatalf("sync: %v", err)
	}
	if len(rep.Errors) > 0 {
		e.t.Fatalf("sync errors: %+v", rep.Errors)
	}
	return rep
}

// remote returns path → content of the store.
func (e *env) remote() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	cursor := ""
	for {
		pg, err := e.svc.ListMemories(e.ctx, e.storeID, trove.ListMemoriesParams{Limit: 20, View: trove.ViewFull, Cursor: cursor})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, it := range pg.Data {
			if it.Memory != nil {
				out[it.Memory.Path] = *it.Memory.Content
			}
		}
		if pg.NextPage == "" {
			return out
		}
		cursor = pg.NextPage
	}
}

func (e *env) memory(path string) *trove.Memory {
	e.t.Helper()
	pg, err := e.svc.ListMemories(e.ctx, e.storeID, trove.ListMemoriesParams{Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, it := range pg.Data {
		if it.Memory != nil && it.Memory.Path == path {
			return it.Memory
		}
	}
	return nil
}

func (e *env) rwrite(path, content string) {
	e.t.Helper()
	if m := e.memory(path); m != nil {
		if _, err := e.svc.UpdateMemory(e.ctx, e.storeID, m.ID, trove.UpdateMemoryParams{Content: &content}); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	if _, err := e.svc.CreateMemory(e.ctx, e.storeID, trove.CreateMemoryParams{Path: path, Content: content}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) rdelete(path string) {
	e.t.Helper()
	m := e.memory(path)
	if m == nil {
		e.t.Fatalf("no memory at %s", path)
	}
	if err := e.svc.DeleteMemory(e.ctx, e.storeID, m.ID, ""); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) rrename(from, to string) {
	e.t.Helper()
	m := e.memory(from)
	if m == nil {
		e.t.Fatalf("no memory at %s", from)
	}
	if _, err := e.svc.UpdateMemory(e.ctx, e.storeID, m.ID, trove.UpdateMemoryParams{Path: &to}); err != nil {
		e.t.Fatal(err)
	}
}

// readDir returns store path → content of every regular file below dir,
// skipping nothing (temp files left behind would show up and fail a test).
func readDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(dir, p)
		out["/"+filepath.ToSlash(r)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeFile(t testing.TB, dir, p, content string) {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "/")))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func removeFile(t testing.TB, dir, p string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "/")))); err != nil {
		t.Fatal(err)
	}
}

// counting wraps the real services and counts calls by method, and content
// reads/writes (full views, content updates, creates).
type counting struct {
	trove.Services
	calls        sync.Map // method → *int64
	contentReads atomic.Int64
	writes       atomic.Int64
}

func (c *counting) inc(m string) {
	v, _ := c.calls.LoadOrStore(m, new(int64))
	atomic.AddInt64(v.(*int64), 1)
}

func (c *counting) count(m string) int64 {
	v, ok := c.calls.Load(m)
	if !ok {
		return 0
	}
	return atomic.LoadInt64(v.(*int64))
}

func (c *counting) reset() {
	c.calls.Clear()
	c.contentReads.Store(0)
	c.writes.Store(0)
}

func (c *counting) CreateMemory(ctx context.Context, s string, p trove.CreateMemoryParams) (*trove.Memory, error) {
	c.inc("CreateMemory")
	c.writes.Add(1)
	return c.Services.CreateMemory(ctx, s, p)
}

func (c *counting) GetMemory(ctx context.Context, s, id string, v trove.View) (*trove.Memory, error) {
	c.inc("GetMemory")
	if v == trove.ViewFull {
		c.contentReads.Add(1)
	}
	return c.Services.GetMemory(ctx, s, id, v)
}

func (c *counting) UpdateMemory(ctx context.Context, s, id string, p trove.UpdateMemoryParams) (*trove.Memory, error) {
	c.inc("UpdateMemory")
	c.writes.Add(1)
	return c.Services.UpdateMemory(ctx, s, id, p)
}

func (c *counting) DeleteMemory(ctx context.Context, s, id, sha string) error {
	c.inc("DeleteMemory")
	c.writes.Add(1)
	return c.Services.DeleteMemory(ctx, s, id, sha)
}

func (c *counting) ListMemories(ctx context.Context, s string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	c.inc("ListMemories")
	if p.View == trove.ViewFull {
		c.contentReads.Add(1)
	}
	return c.Services.ListMemories(ctx, s, p)
}
