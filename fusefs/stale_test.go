//go:build linux || darwin

package fusefs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/fusefs"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/vfs"
	"github.com/trovehq/trove/vfs/vfstest"
)

// staleBound is how late a remote change may show through the mount: the
// feed's latency with room for a loaded machine. Without the feed it
// would be the hour-long refresh bound these mounts use.
const staleBound = time.Second

// over returns, for "local", the backend itself, and for "http", an
// httpapi.Client of a real server on loopback over it.
func over(t testing.TB, be vfstest.Backend, how string) trove.Services {
	t.Helper()
	if how == "local" {
		return be.Services
	}
	svc := be.Services.(interface {
		trove.Services
		trove.SessionService
		trove.Authenticator
		CreateKey(ctx context.Context, workspaceID, name string) (*trove.APIKey, string, error)
	})
	_, key, err := svc.CreateKey(context.Background(), trove.PrincipalFrom(be.Ctx).WorkspaceID, "mount")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}).HTTPServer()
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return httpapi.NewClient("http://"+ln.Addr().String(), key, httpapi.WithHTTPClient(&http.Client{Timeout: time.Minute}))
}

// countingReads counts the memory reads that reach the services.
type countingReads struct {
	trove.Services
	gets atomic.Int64
}

func (c *countingReads) GetMemory(ctx context.Context, storeID, id string, v trove.View) (*trove.Memory, error) {
	c.gets.Add(1)
	return c.Services.GetMemory(ctx, storeID, id, v)
}

func (c *countingReads) ListChanges(ctx context.Context, storeID string, p trove.ListChangesParams) (*trove.ChangeBatch, error) {
	return c.Services.(trove.ChangeService).ListChanges(ctx, storeID, p)
}

func (c *countingReads) WaitChanges(ctx context.Context, storeID string, after int64) (int64, error) {
	return c.Services.(trove.ChangeService).WaitChanges(ctx, storeID, after)
}

// countingStream is countingReads over httpapi.Client, whose own stream
// (server-sent events) the mount follows.
type countingStream struct {
	*countingReads
	c *httpapi.Client
}

func (c countingStream) FollowChanges(ctx context.Context, storeID string, after int64, fn func(trove.Change) error, connected func(bool)) error {
	return c.c.FollowChanges(ctx, storeID, after, fn, connected)
}

// requestCounter counts the FUSE requests of each operation in go-fuse's
// debug log (Options.Debug): lines "rx <unique>: <OP> n<node> ...".
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *requestCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *requestCounter) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *requestCounter) WithGroup(string) slog.Handler            { return c }
func (c *requestCounter) Handle(_ context.Context, r slog.Record) error {
	f := strings.Fields(r.Message)
	// Not go-fuse's own poll probe at mount (node ^uint64(0)).
	if len(f) >= 4 && f[0] == "rx" && f[3] != fmt.Sprintf("n%d", ^uint64(0)) {
		c.mu.Lock()
		c.n[f[2]]++
		c.mu.Unlock()
	}
	return nil
}

func (c *requestCounter) get(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op]
}

// TestMountStaleness: with the listing refresh and the kernel's cache
// bounds at an hour, a remote edit, create, rename and delete show through
// the mount within staleBound, over a local database and over a server
// (server-sent events), while an unchanged file read again is served by
// the kernel's page cache (no read reaches the store). "ro" mounts the
// store read-only: the kernel then opens files without asking the daemon
// (no OPEN, FLUSH or RELEASE after the first open), keeps their pages
// until an invalidation, and refuses writes with EROFS.
func TestMountStaleness(t *testing.T) {
	for _, tc := range []struct {
		how string
		ro  bool
	}{{"local", false}, {"http", false}, {"local", true}, {"http", true}} {
		name := tc.how
		if tc.ro {
			name = "ro/" + tc.how
		}
		how := tc.how
		t.Run(name, func(t *testing.T) {
			be := backend(t)
			ctx := be.Ctx
			st, err := be.Services.CreateStore(ctx, trove.CreateStoreParams{Name: "s"})
			if err != nil {
				t.Fatal(err)
			}
			a, err := be.Services.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/a.md", Content: "v0"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := be.Services.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/same.md", Content: "unchanged"}); err != nil {
				t.Fatal(err)
			}
			inner := over(t, be, how)
			svc := &countingReads{Services: inner}
			var mounted trove.Services = svc
			if c, ok := inner.(*httpapi.Client); ok {
				mounted = countingStream{svc, c}
			}
			// No content cache in the vfs: a read that reaches the mount
			// reads the store.
			reqs := &requestCounter{n: map[string]int{}}
			cfg := vfs.Config{Services: mounted, Principal: trove.PrincipalFrom(ctx),
				Stores: []vfs.StoreConfig{{StoreID: st.ID, Name: "s", ReadOnly: tc.ro}}, Refresh: time.Hour, CacheBytes: -1}
			var srv *fusefs.Server
			var dir string
			if tc.ro {
				srv, dir = mountWith(t, cfg, fusefs.Options{Debug: true, Logger: slog.New(reqs)})
			} else {
				srv, dir = mount(t, cfg)
			}
			root := filepath.Join(dir, "s")
			var last string // what the last read returned, for a failure
			read := func(name string) (string, error) {
				b, err := os.ReadFile(filepath.Join(root, name))
				last = fmt.Sprintf("%s: %q, %v", name, b, err)
				return string(b), err
			}
			// see polls the mount until ok holds, and returns how long it
			// took from start.
			see := func(what string, start time.Time, ok func() bool) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for !ok() {
					if time.Now().After(deadline) {
						t.Fatalf("%s: not visible through the mount after 10 s (last read %s)", what, last)
					}
				}
				if d := time.Since(start); d > staleBound {
					t.Errorf("%s: visible after %v, more than %v", what, d, staleBound)
				} else {
					t.Logf("%s: visible after %v", what, d)
				}
			}
			see("the first read", time.Now(), func() bool { s, _ := read("a.md"); return s == "v0" })
			// Once live, nothing but a change drops the kernel's caches.
			for deadline := time.Now().Add(10 * time.Second); !srv.Live(); {
				if time.Now().After(deadline) {
					t.Fatal("the mount's change feed did not connect within 10 s")
				}
			}

			// Unchanged: the second and third reads come from the page cache.
			if s, err := read("same.md"); err != nil || s != "unchanged" {
				t.Fatalf("same.md: %q %v", s, err)
			}
			before := svc.gets.Load()
			for range 3 {
				if s, err := read("same.md"); err != nil || s != "unchanged" {
					t.Fatalf("same.md: %q %v", s, err)
				}
			}
			if n := svc.gets.Load() - before; n != 0 {
				t.Errorf("re-reading an unchanged file read the store %d times", n)
			}
			if tc.ro {
				// The first open was answered ENOSYS, the first close's
				// flush too: nothing after them reaches the daemon.
				if o, f, r := reqs.get("OPEN"), reqs.get("FLUSH"), reqs.get("RELEASE"); o != 1 || f != 1 || r != 0 {
					t.Errorf("read-only mount: %d OPEN, %d FLUSH, %d RELEASE requests after 5 reads; want 1, 1, 0", o, f, r)
				}
				for what, err := range map[string]error{
					"write":    os.WriteFile(filepath.Join(root, "same.md"), []byte("x"), 0o644),
					"create":   os.WriteFile(filepath.Join(root, "c.md"), []byte("x"), 0o644),
					"mkdir":    os.Mkdir(filepath.Join(root, "d"), 0o755),
					"remove":   os.Remove(filepath.Join(root, "same.md")),
					"rename":   os.Rename(filepath.Join(root, "same.md"), filepath.Join(root, "b.md")),
					"truncate": os.Truncate(filepath.Join(root, "same.md"), 0),
				} {
					if !errors.Is(err, syscall.EROFS) {
						t.Errorf("%s on a read-only mount: %v, want EROFS", what, err)
					}
				}
				if s, err := read("same.md"); err != nil || s != "unchanged" {
					t.Fatalf("same.md after refused writes: %q %v", s, err)
				}
			}

			if _, err := read("new.md"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("new.md before it exists: %v", err) // a cached miss
			}
			start := time.Now()
			if _, err := be.Services.UpdateMemory(ctx, st.ID, a.ID, trove.UpdateMemoryParams{Content: ptr("v1, longer")}); err != nil {
				t.Fatal(err)
			}
			see("a remote edit", start, func() bool { s, _ := read("a.md"); return s == "v1, longer" })

			start = time.Now()
			if _, err := be.Services.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/new.md", Content: "n"}); err != nil {
				t.Fatal(err)
			}
			see("a remote create over a cached miss", start, func() bool { s, _ := read("new.md"); return s == "n" })

			start = time.Now()
			if _, err := be.Services.UpdateMemory(ctx, st.ID, a.ID, trove.UpdateMemoryParams{Path: ptr("/dir/b.md")}); err != nil {
				t.Fatal(err)
			}
			see("a remote rename", start, func() bool {
				_, errOld := os.Stat(filepath.Join(root, "a.md"))
				s, _ := read("dir/b.md")
				return errors.Is(errOld, os.ErrNotExist) && s == "v1, longer"
			})

			// Read-only: a descriptor open across the delete below. (On a
			// read-write mount an open file stays in the tree until
			// closed, as a file this mount may still write.)
			var held *os.File
			if tc.ro {
				if held, err = os.Open(filepath.Join(root, "new.md")); err != nil {
					t.Fatal(err)
				}
				defer held.Close()
			}
			m, err := be.Services.ListMemories(ctx, st.ID, trove.ListMemoriesParams{PathPrefix: "/", Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			start = time.Now()
			for _, it := range m.Data {
				if it.Memory != nil && it.Memory.Path == "/new.md" {
					if err := be.Services.DeleteMemory(ctx, st.ID, it.Memory.ID, ""); err != nil {
						t.Fatal(err)
					}
				}
			}
			see("a remote delete", start, func() bool {
				_, err := os.Stat(filepath.Join(root, "new.md"))
				return errors.Is(err, os.ErrNotExist)
			})
			// No descriptor state: the pages and attributes went with
			// the delete, so the read finds the file gone (ENOENT from
			// the attributes, or ESTALE from the read).
			if tc.ro {
				buf := make([]byte, 10)
				c, err := held.ReadAt(buf, 0)
				if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ESTALE) {
					t.Errorf("read of a descriptor whose file went: %q %v, want ENOENT or ESTALE", buf[:c], err)
				}
			}

			// The last memory below dir/ goes: so does the directory.
			if _, err := os.Stat(filepath.Join(root, "dir")); err != nil {
				t.Fatal(err)
			}
			start = time.Now()
			if err := be.Services.DeleteMemory(ctx, st.ID, a.ID, ""); err != nil {
				t.Fatal(err)
			}
			see("a directory emptied remotely", start, func() bool {
				_, err := os.Stat(filepath.Join(root, "dir"))
				return errors.Is(err, os.ErrNotExist)
			})
		})
	}
}

func ptr[T any](v T) *T { return &v }
