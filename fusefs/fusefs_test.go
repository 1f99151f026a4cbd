package fusefs_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/fusefs"
	"github.com/trovehq/trove/internal/skipnote"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
	"github.com/trovehq/trove/vfs"
	"github.com/trovehq/trove/vfs/vfstest"
)

// backend is a real core over a real SQLite database in t's temp dir.
func backend(tb testing.TB) vfstest.Backend {
	tb.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(tb), sqlite.Options{AutoMigrate: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	p := &trove.Principal{WorkspaceID: "wrkspc_fusetest", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_fusetest01"}}
	return vfstest.Backend{Services: core.New(db, core.Options{}), Ctx: trove.WithPrincipal(ctx, p)}
}

// fuseUsable returns why a kernel mount cannot work here, or "".
func fuseUsable() string {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "no /dev/fuse: " + err.Error()
	}
	if os.Getuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			if _, err := exec.LookPath("fusermount"); err != nil {
				return "not root and no fusermount3/fusermount in PATH"
			}
		}
	}
	return ""
}

// mount mounts cfg through the kernel at a temp dir and unmounts it when tb
// ends.
func mount(tb testing.TB, cfg vfs.Config) (*fusefs.Server, string) {
	tb.Helper()
	return mountWith(tb, cfg, fusefs.Options{})
}

// mountWith is mount with opts (a nil opts.Logger logs warnings to tb).
func mountWith(tb testing.TB, cfg vfs.Config, opts fusefs.Options) (*fusefs.Server, string) {
	tb.Helper()
	if why := fuseUsable(); why != "" {
		skipnote.Skip(tb, "FUSE unavailable: "+why)
	}
	log := slog.New(slog.NewTextHandler(tWriter{tb}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Logger = log
	if opts.Logger == nil {
		opts.Logger = log
	}
	v, err := vfs.New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	srv, err := fusefs.Mount(dir, v, opts)
	if err != nil {
		tb.Fatalf("mount (FUSE should work on this machine; set up /dev/fuse or skip with -short): %v", err)
	}
	tb.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			tb.Errorf("unmount: %v", err)
		}
	})
	return srv, dir
}

// TestKernel runs the shared suite through a real FUSE mount.
func TestKernel(t *testing.T) {
	vfstest.Run(t, vfstest.Harness{
		Backend: func(t *testing.T) vfstest.Backend { return backend(t) },
		Mount: func(t *testing.T, cfg vfs.Config) *vfstest.Mount {
			cfg.Refresh = 200 * time.Millisecond
			_, dir := mount(t, cfg)
			return &vfstest.Mount{Root: dir, FS: vfstest.OSOps(dir), Refresh: cfg.Refresh}
		},
	})
}

// tWriter sends log lines to the test log.
type tWriter struct{ tb testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestUnlinkedWhileOpen: a file removed while open keeps serving its
// descriptor (fstat, read, write) and uploads nothing.
func TestUnlinkedWhileOpen(t *testing.T) {
	be := backend(t)
	st, err := be.Services.CreateStore(be.Ctx, trove.CreateStoreParams{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	_, dir := mount(t, vfs.Config{Services: be.Services, Principal: trove.PrincipalFrom(be.Ctx), Stores: []vfs.StoreConfig{{StoreID: st.ID}}})
	p := filepath.Join(dir, "s", "a.md")
	if err := os.WriteFile(p, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil || fi.IsDir() || fi.Size() != 5 {
		t.Errorf("fstat after unlink: %v, dir=%v size=%d", err, fi != nil && fi.IsDir(), fi.Size())
	}
	if _, err := f.WriteAt([]byte("HE"), 0); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "HEllo" {
		t.Errorf("read after unlink: %q %v", b, err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	pg, err := be.Services.ListMemories(be.Ctx, st.ID, trove.ListMemoriesParams{})
	if err != nil || len(pg.Data) != 0 {
		t.Errorf("store after unlink: %+v %v", pg, err)
	}
}
