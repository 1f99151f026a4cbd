//go:build linux || darwin

package fusefs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/skipnote"
	"github.com/trovehq/trove/vfs"
)

// BenchmarkOpenRead measures open+read+close (os.ReadFile) of a small
// (~100 B) file, each target next to its same-run baselines:
//
//   - disk: a file on local disk (t.TempDir);
//   - loopback: the same file through go-fuse's loopback file system (a
//     FUSE mount passing every call to the local disk): the floor of any
//     FUSE file system here;
//   - trove/{local,http}: a memory through a Trove mount over a local
//     database (core over SQLite) or over a server (httpapi.Client to a
//     real server on loopback), following the change feed;
//   - trove-ro/{local,http}: the same with the store mounted read-only,
//     the mount the kernel opens files of without asking (no OPEN, FLUSH
//     or RELEASE reaches the daemon).
//
// "cached" re-reads one file (and reports the median read as p50-ns/op) (the kernel keeps its entry, attributes and
// pages); "cold" reads b.N distinct files once each (one lookup, open and
// read each; for trove, a GetMemory each). Run cold with a fixed count:
//
//	go test -run '^$' -bench OpenRead -benchtime 2000x ./fusefs/
func BenchmarkOpenRead(b *testing.B) {
	if why := fuseUsable(); why != "" {
		skipnote.Skip(b, "FUSE unavailable: "+why)
	}
	content := func(i int) []byte { return fmt.Appendf(nil, "%s%06d\n", small, i) }
	read := func(b *testing.B, p string) {
		if got, err := os.ReadFile(p); err != nil || len(got) < len(small) {
			b.Fatalf("read %d bytes: %v", len(got), err)
		}
	}
	// targets: name → prepare n files (0..n-1) and return their directory.
	type target struct {
		name    string
		prepare func(b *testing.B, n int) string
	}
	onDisk := func(b *testing.B, dir string, n int) {
		for i := range n {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%06d.md", i)), content(i), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	trove := func(how string, ro bool) func(b *testing.B, n int) string {
		return func(b *testing.B, n int) string {
			be := backend(b)
			st, err := be.Services.CreateStore(be.Ctx, trove.CreateStoreParams{Name: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if _, err := be.Services.CreateMemory(be.Ctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/f%06d.md", i), Content: string(content(i))}); err != nil {
					b.Fatal(err)
				}
			}
			srv, dir := mount(b, vfs.Config{Services: over(b, be, how), Principal: trove.PrincipalFrom(be.Ctx),
				Stores: []vfs.StoreConfig{{StoreID: st.ID, Name: "s", ReadOnly: ro}}, Limits: trove.DefaultLimits()})
			for deadline := time.Now().Add(10 * time.Second); !srv.Live(); {
				if time.Now().After(deadline) {
					b.Fatal("the mount's change feed did not connect")
				}
			}
			return filepath.Join(dir, "s")
		}
	}
	targets := []target{
		{"disk", func(b *testing.B, n int) string { d := b.TempDir(); onDisk(b, d, n); return d }},
		{"loopback", func(b *testing.B, n int) string {
			src := b.TempDir()
			onDisk(b, src, n)
			root, err := fs.NewLoopbackRoot(src)
			if err != nil {
				b.Fatal(err)
			}
			mnt := b.TempDir()
			sec := time.Minute
			srv, err := fs.Mount(mnt, root, &fs.Options{EntryTimeout: &sec, AttrTimeout: &sec, NegativeTimeout: &sec,
				MountOptions: fuse.MountOptions{DirectMount: os.Geteuid() == 0}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { srv.Unmount() })
			return mnt
		}},
		{"trove/local", trove("local", false)},
		{"trove/http", trove("http", false)},
		{"trove-ro/local", trove("local", true)},
		{"trove-ro/http", trove("http", true)},
	}
	for _, tg := range targets {
		b.Run("cached/"+tg.name, func(b *testing.B) {
			dir := tg.prepare(b, 1)
			p := filepath.Join(dir, "f000000.md")
			read(b, p) // fill the caches
			// Each read is timed too: on a loaded machine the median
			// (p50-ns/op) moves much less than the mean.
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				read(b, p)
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns/op")
		})
		b.Run("cold/"+tg.name, func(b *testing.B) {
			dir := tg.prepare(b, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				read(b, filepath.Join(dir, fmt.Sprintf("f%06d.md", i)))
			}
		})
	}
}
