package fusefs_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/fusefs"
	"github.com/trovehq/trove/vfs"
)

// benchMount mounts one fresh store (with a memory limit high enough for
// any b.N) and returns the store directory in the mount and the backend.
func benchMount(b *testing.B, refresh time.Duration) (string, string, func(path, content string)) {
	b.Helper()
	be := backend(b)
	st, err := be.Services.CreateStore(be.Ctx, trove.CreateStoreParams{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	lim := trove.DefaultLimits()
	lim.MaxMemoriesPerStore = 1 << 30
	_, dir := mount(b, vfs.Config{
		Services: be.Services, Principal: trove.PrincipalFrom(be.Ctx),
		Stores:  []vfs.StoreConfig{{StoreID: st.ID, Name: "s"}},
		Refresh: refresh, Limits: lim,
	})
	put := func(p, c string) {
		if _, err := be.Services.CreateMemory(be.Ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: c}); err != nil {
			b.Fatal(err)
		}
	}
	return filepath.Join(dir, "s"), st.ID, put
}

var small = []byte("# note\n\nA small memory of about a hundred bytes, the usual size of an agent's note.\n")

// BenchmarkSmallFile measures create+write+close of a new ~100-byte file and
// open+read+close of an existing one, through the mount and on local disk.
func BenchmarkSmallFile(b *testing.B) {
	targets := []struct {
		name string
		dir  func(b *testing.B) string
	}{
		{"fuse", func(b *testing.B) string { d, _, _ := benchMount(b, time.Second); return d }},
		{"disk", func(b *testing.B) string { return b.TempDir() }},
	}
	for _, tg := range targets {
		b.Run("write/"+tg.name, func(b *testing.B) {
			dir := tg.dir(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%07d.md", i)), small, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("read/"+tg.name, func(b *testing.B) {
			dir := tg.dir(b)
			p := filepath.Join(dir, "r.md")
			if err := os.WriteFile(p, small, 0o644); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if got, err := os.ReadFile(p); err != nil || len(got) != len(small) {
					b.Fatalf("read %d bytes: %v", len(got), err)
				}
			}
		})
	}
}

// BenchmarkWalk10k measures a full walk (every directory listed, every file
// stat'ed, like ls -lR) of a 10,000-memory store, 100 directories of 100
// files, through the mount and of the same tree on local disk. "fuse-warm"
// walks a mount whose listing and kernel caches are loaded (bound 1 min);
// "fuse-cold" walks a new mount each time.
func BenchmarkWalk10k(b *testing.B) {
	content := "x"
	layout := func(put func(p string)) {
		for d := 0; d < 100; d++ {
			for f := 0; f < 100; f++ {
				put(fmt.Sprintf("/d%02d/f%03d.md", d, f))
			}
		}
	}
	walk := func(b *testing.B, root string) {
		n := 0
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if _, err := d.Info(); err != nil {
				return err
			}
			if !d.IsDir() {
				n++
			}
			return nil
		})
		if err != nil || n != 10000 {
			b.Fatalf("walk saw %d files: %v", n, err)
		}
	}
	// One store of 10,000 memories for both fuse runs, filled by 8 writers
	// (the SQLite driver commits them in groups).
	be := backend(b)
	st, err := be.Services.CreateStore(be.Ctx, trove.CreateStoreParams{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	paths := make(chan string)
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range paths {
				if _, err := be.Services.CreateMemory(be.Ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: content}); err != nil {
					failed.Store(err)
				}
			}
		}()
	}
	layout(func(p string) { paths <- p })
	close(paths)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	mountOnce := func(b *testing.B) (string, *fusefs.Server) {
		v, err := vfs.New(be.Ctx, vfs.Config{Services: be.Services, Stores: []vfs.StoreConfig{{StoreID: st.ID, Name: "s"}}, Refresh: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		srv, err := fusefs.Mount(dir, v, fusefs.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return filepath.Join(dir, "s"), srv
	}
	b.Run("fuse-warm", func(b *testing.B) {
		dir, srv := mountOnce(b)
		defer srv.Unmount()
		walk(b, dir) // load the listing and the kernel's caches
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			walk(b, dir)
		}
	})
	b.Run("fuse-cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			// A new mount each time: the walk loads the listing (100
			// pages of 100) and fills empty kernel caches.
			b.StopTimer()
			dir, srv := mountOnce(b)
			b.StartTimer()
			walk(b, dir)
			b.StopTimer()
			if err := srv.Unmount(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	b.Run("disk", func(b *testing.B) {
		dir := b.TempDir()
		layout(func(p string) {
			full := filepath.Join(dir, p)
			os.MkdirAll(filepath.Dir(full), 0o755)
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		})
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			walk(b, dir)
		}
	})
}
