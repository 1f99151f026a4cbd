//go:build linux || darwin

package fusefs_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/fusefs"
	"github.com/trovehq/trove/internal/skipnote"
	"github.com/trovehq/trove/vfs"
)

// BenchmarkSmallReads reads smallReadFiles files of 1 KiB cat-like (open,
// one read into a 4 KiB buffer, close) from five places in turn, inside
// every iteration, so that the ratios are of the same moments of a shared
// machine:
//
//   - disk: the files on local disk (t.TempDir);
//   - ro: a Trove mount of the store, read-only (--store NAME:ro);
//   - rw: a second Trove mount of the same store, read-write;
//   - floor: go-fuse's in-memory files whose Open does nothing but answer
//     FOPEN_KEEP_CACHE|FOPEN_NOFLUSH (the rw mount's flags for a clean
//     read): what an OPEN and RELEASE round trip costs in any file system
//     that asks the daemon at open, with no work behind it;
//   - floor-noopen: the same files with OPEN answered ENOSYS (the kernel
//     then opens every file of the mount itself, as on Trove's read-only
//     mount) but FLUSH answered, as a mount must to learn of the close of
//     a written file: what a read-write mount without OPEN would cost.
//
// Both Trove mounts follow the change feed (live); every mount is warm
// (one pass before timing). Reported: the median over iterations of each
// pass, per file (<target>-ns/file), and its ratio to disk's median
// (<target>/disk). Before timing, a pass over a separate, debug-logged
// mount of each kind counts the kernel's requests per file read, reported
// as <kind>-<OP>/file (LOOKUP, GETATTR, OPEN, READ, FLUSH, RELEASE). The
// benchmark fails if the reads changed the store (a close of a descriptor
// that only read must write nothing).
//
//	go test -run '^$' -bench SmallReads -benchtime 20x ./fusefs/
func BenchmarkSmallReads(b *testing.B) {
	if why := fuseUsable(); why != "" {
		skipnote.Skip(b, "FUSE unavailable: "+why)
	}
	const n = smallReadFiles
	content := func(i int) string { return fmt.Sprintf("%06d\n", i) + strings.Repeat("x", 1024-7) }
	name := func(i int) string { return fmt.Sprintf("d%02d/f%04d.md", i%10, i) }

	disk := b.TempDir()
	for i := range n {
		p := filepath.Join(disk, name(i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content(i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	be := backend(b)
	st, err := be.Services.CreateStore(be.Ctx, trove.CreateStoreParams{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if _, err := be.Services.CreateMemory(be.Ctx, st.ID, trove.CreateMemoryParams{Path: "/" + name(i), Content: content(i)}); err != nil {
			b.Fatal(err)
		}
	}
	// The store's newest seq: reads must leave it unchanged (a close of a
	// descriptor that only read costs nothing durable).
	newest := func() int64 {
		cb, err := be.Services.(trove.ChangeService).ListChanges(be.Ctx, st.ID, trove.ListChangesParams{After: 0, Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		for cb.More {
			if cb, err = be.Services.(trove.ChangeService).ListChanges(be.Ctx, st.ID, trove.ListChangesParams{After: cb.Cursor, Limit: 100}); err != nil {
				b.Fatal(err)
			}
		}
		return cb.Cursor
	}
	seq0 := newest()
	buf := make([]byte, 4096)
	pass := func(b *testing.B, dir string) {
		for i := range n {
			f, err := os.Open(filepath.Join(dir, name(i)))
			if err != nil {
				b.Fatal(err)
			}
			c, err := f.Read(buf)
			if err != nil && err != io.EOF || c != 1024 {
				b.Fatalf("read %s: %d bytes, %v", name(i), c, err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	mountKind := func(b *testing.B, ro bool, opts fusefs.Options) string {
		cfg := vfs.Config{Services: be.Services, Principal: trove.PrincipalFrom(be.Ctx),
			Stores: []vfs.StoreConfig{{StoreID: st.ID, Name: "s", ReadOnly: ro}}, Limits: trove.DefaultLimits()}
		srv, dir := mountWith(b, cfg, opts)
		for deadline := time.Now().Add(10 * time.Second); !srv.Live(); {
			if time.Now().After(deadline) {
				b.Fatal("the mount's change feed did not connect")
			}
		}
		dir = filepath.Join(dir, "s")
		pass(b, dir) // warm: entries, attributes, pages
		return dir
	}
	// Requests per file read on a warm mount of each kind (reported after
	// the loop: b.Loop's first call drops metrics reported before it).
	counts := map[string]float64{}
	for _, kind := range []string{"ro", "rw", "floor", "floor-noopen"} {
		reqs := &requestCounter{n: map[string]int{}}
		var dir string
		switch kind {
		case "ro", "rw":
			dir = mountKind(b, kind == "ro", fusefs.Options{Debug: true, Logger: slog.New(reqs)})
		default:
			dir = floorMount(b, n, name, content, kind == "floor-noopen", slog.NewLogLogger(reqs, slog.LevelDebug))
			pass(b, dir)
		}
		reqs.mu.Lock()
		clear(reqs.n)
		reqs.mu.Unlock()
		pass(b, dir)
		for _, op := range []string{"LOOKUP", "GETATTR", "OPEN", "READ", "FLUSH", "RELEASE"} {
			counts[kind+"-"+op+"/file"] = float64(reqs.get(op)) / n
		}
	}
	ro := mountKind(b, true, fusefs.Options{})
	rw := mountKind(b, false, fusefs.Options{})
	floor := floorMount(b, n, name, content, false, nil)
	noOpen := floorMount(b, n, name, content, true, nil)
	pass(b, floor)
	pass(b, noOpen)
	pass(b, disk)
	var took [5][]time.Duration
	for b.Loop() {
		for k, dir := range []string{disk, ro, rw, floor, noOpen} {
			t0 := time.Now()
			pass(b, dir)
			took[k] = append(took[k], time.Since(t0))
		}
	}
	if seq := newest(); seq != seq0 {
		b.Fatalf("reading through the mounts changed the store: newest seq %d, was %d", seq, seq0)
	}
	var med [5]float64
	for k := range took {
		slices.Sort(took[k])
		med[k] = float64(took[k][len(took[k])/2].Nanoseconds()) / n
	}
	for unit, v := range counts {
		b.ReportMetric(v, unit)
	}
	b.ReportMetric(med[0], "disk-ns/file")
	b.ReportMetric(med[1], "ro-ns/file")
	b.ReportMetric(med[2], "rw-ns/file")
	b.ReportMetric(med[3], "floor-ns/file")
	b.ReportMetric(med[4], "floor-noopen-ns/file")
	b.ReportMetric(med[4]/med[0], "floor-noopen/disk")
	b.ReportMetric(med[1]/med[0], "ro/disk")
	b.ReportMetric(med[3]/med[0], "floor/disk")
	b.ReportMetric(med[2]/med[0], "rw/disk")
}

// openOnlyFile is an in-memory file whose Open asks for the page cache to
// be kept and no FLUSH at close, and does nothing else; with noOpen it
// answers ENOSYS instead (FLUSH is still answered, with success).
type openOnlyFile struct {
	fs.MemRegularFile
	noOpen bool
}

func (f *openOnlyFile) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if f.noOpen {
		return nil, 0, syscall.ENOSYS
	}
	return nil, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

// floorMount mounts n openOnlyFiles named name(i) holding content(i), with
// the kernel's entry and attribute caches at a minute (as a live mount). A
// non-nil debug logs every request to it.
func floorMount(b *testing.B, n int, name func(int) string, content func(int) string, noOpen bool, debug *log.Logger) string {
	root := &fs.Inode{}
	dirs := map[string]*fs.Inode{}
	mnt := b.TempDir()
	sec := time.Minute
	srv, err := fs.Mount(mnt, root, &fs.Options{EntryTimeout: &sec, AttrTimeout: &sec, NegativeTimeout: &sec,
		MountOptions: fuse.MountOptions{DirectMount: os.Geteuid() == 0, Debug: debug != nil, Logger: debug},
		OnAdd: func(ctx context.Context) {
			for i := range n {
				d, f := filepath.Split(name(i))
				d = filepath.Clean(d)
				dn := dirs[d]
				if dn == nil {
					dn = root.NewPersistentInode(ctx, &fs.Inode{}, fs.StableAttr{Mode: syscall.S_IFDIR})
					root.AddChild(d, dn, false)
					dirs[d] = dn
				}
				file := &openOnlyFile{fs.MemRegularFile{Data: []byte(content(i)), Attr: fuse.Attr{Mode: 0o644}}, noOpen}
				dn.AddChild(f, dn.NewPersistentInode(ctx, file, fs.StableAttr{}), false)
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Unmount() })
	return mnt
}

// smallReadFiles is how many files BenchmarkSmallReads reads per pass.
const smallReadFiles = 1000
