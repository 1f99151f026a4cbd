package vfstest

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trovehq/trove/fusefs"
	"github.com/trovehq/trove/vfs"
)

// Clock is a settable clock for the direct harness.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Direct mounts cfg without a kernel: the returned Mount drives the vfs
// methods directly, with errors turned into errno values by
// fusefs.ToErrno (the same mapping a kernel mount uses), and a settable
// clock (cfg.Now) that Advance moves past the refresh bound. clock may be
// shared by several mounts of one test; nil makes a new one.
func Direct(t *testing.T, cfg vfs.Config, clock *Clock) *Mount {
	t.Helper()
	if clock == nil {
		clock = NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = time.Second
	}
	cfg.Now = clock.Now
	v, err := vfs.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("vfs.New: %v", err)
	}
	return &Mount{
		FS:      &directOps{v: v},
		Refresh: cfg.Refresh,
		Advance: func() { clock.Advance(cfg.Refresh + time.Millisecond) },
	}
}

type directOps struct{ v *vfs.FS }

// errno turns a vfs error into an *fs.PathError carrying the errno, as the
// os package reports errors from a kernel mount.
func errno(op, name string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return &fs.PathError{Op: op, Path: name, Err: fusefs.ToErrno(err)}
}

func clean(name string) string {
	if name == "." || name == "" {
		return ""
	}
	return path.Clean(strings.TrimPrefix(name, "/"))
}

func (d *directOps) ReadFile(name string) ([]byte, error) {
	f, err := d.OpenFile(name, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (d *directOps) WriteFile(name string, data []byte) error {
	f, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err1 := f.Close(); err == nil {
		err = err1
	}
	return err
}

func (d *directOps) OpenFile(name string, flag int) (File, error) {
	h, err := d.v.Open(context.Background(), clean(name), flag)
	if err != nil {
		return nil, errno("open", name, err)
	}
	return &directFile{h: h, name: name}, nil
}

func (d *directOps) Mkdir(name string) error {
	return errno("mkdir", name, d.v.Mkdir(context.Background(), clean(name)))
}

func (d *directOps) Remove(name string) error {
	err := d.v.Remove(context.Background(), clean(name))
	if errors.Is(err, vfs.ErrIsDir) {
		err = d.v.Rmdir(context.Background(), clean(name))
	}
	return errno("remove", name, err)
}

func (d *directOps) Rename(from, to string) error {
	return errno("rename", from, d.v.Rename(context.Background(), clean(from), clean(to)))
}

func (d *directOps) Stat(name string) (Info, error) {
	a, err := d.v.Stat(context.Background(), clean(name))
	if err != nil {
		return Info{}, errno("stat", name, err)
	}
	return Info{Name: a.Name, Dir: a.Dir, Size: a.Size, Mode: a.Mode.Perm(), ModTime: a.ModTime}, nil
}

func (d *directOps) ReadDir(name string) ([]string, error) {
	list, err := d.v.ReadDir(context.Background(), clean(name))
	if err != nil {
		return nil, errno("readdir", name, err)
	}
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.Name
	}
	return out, nil
}

func (d *directOps) Truncate(name string, size int64) error {
	return errno("truncate", name, d.v.Truncate(context.Background(), clean(name), size))
}

type directFile struct {
	h      *vfs.Handle
	name   string
	off    int64
	closed bool
}

func (f *directFile) Read(p []byte) (int, error) {
	n, err := f.h.ReadAt(context.Background(), p, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, errno("read", f.name, err)
}

func (f *directFile) Write(p []byte) (int, error) {
	n, err := f.h.WriteAt(context.Background(), p, f.off)
	f.off += int64(n)
	return n, errno("write", f.name, err)
}

func (f *directFile) Truncate(size int64) error {
	return errno("truncate", f.name, f.h.Truncate(context.Background(), size))
}

func (f *directFile) Sync() error { return errno("sync", f.name, f.h.Fsync(context.Background())) }

func (f *directFile) Close() error {
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	err := f.h.Flush(context.Background())
	f.h.Release()
	return errno("close", f.name, err)
}

// OSOps returns file operations on the directory root through the os
// package, for a kernel mount.
func OSOps(root string) Ops { return osOps{root} }

type osOps struct{ root string }

func (o osOps) p(name string) string { return path.Join(o.root, name) }

func (o osOps) ReadFile(name string) ([]byte, error) { return os.ReadFile(o.p(name)) }

func (o osOps) WriteFile(name string, data []byte) error {
	return os.WriteFile(o.p(name), data, 0o644)
}

func (o osOps) OpenFile(name string, flag int) (File, error) {
	f, err := os.OpenFile(o.p(name), flag, 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (o osOps) Mkdir(name string) error             { return os.Mkdir(o.p(name), 0o755) }
func (o osOps) Remove(name string) error            { return os.Remove(o.p(name)) }
func (o osOps) Truncate(name string, n int64) error { return os.Truncate(o.p(name), n) }

func (o osOps) Stat(name string) (Info, error) {
	fi, err := os.Stat(o.p(name))
	if err != nil {
		return Info{}, err
	}
	return Info{Name: fi.Name(), Dir: fi.IsDir(), Size: fi.Size(), Mode: fi.Mode().Perm(), ModTime: fi.ModTime()}, nil
}

func (o osOps) ReadDir(name string) ([]string, error) {
	list, err := os.ReadDir(o.p(name))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.Name()
	}
	return out, nil
}

// Rename is rename(2) itself: os.Rename refuses any existing directory as
// the target before asking the kernel.
func (o osOps) Rename(from, to string) error {
	if err := syscall.Rename(o.p(from), o.p(to)); err != nil {
		return &os.LinkError{Op: "rename", Old: o.p(from), New: o.p(to), Err: err}
	}
	return nil
}
