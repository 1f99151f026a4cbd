//go:build linux || darwin

package fusefs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/trovehq/trove/vfs"
)

// Server is a live mount.
type Server struct {
	dir  string
	srv  *fuse.Server
	root *node
	stop context.CancelFunc // ends Follow; nil when not following
	done chan struct{}      // closed when Follow has returned
}

// mount is what every node of one mount shares.
type mount struct {
	v    *vfs.FS
	log  *slog.Logger
	base time.Duration // kernel cache time without a live feed
	live time.Duration // kernel cache time while every store's feed is live
	// noOpen: the mount is read-only and the kernel stops sending OPEN,
	// FLUSH and RELEASE once they are answered ENOSYS (see Mount).
	noOpen bool
}

// ttl is how long the kernel may cache an entry or attributes given now.
func (m *mount) ttl() time.Duration {
	if m.live > 0 && m.v.Live() {
		return m.live
	}
	return m.base
}

// Mount mounts v at dir (an existing empty directory) and returns once the
// kernel serves it. Unmount it with Server.Unmount.
func Mount(dir string, v *vfs.FS, opts Options) (*Server, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = v.Refresh()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &mount{v: v, log: log, base: timeout}
	if opts.Timeout <= 0 && !opts.NoFollow && v.CanFollow() {
		m.live = opts.LiveTimeout
		if m.live <= 0 {
			m.live = DefaultLiveTimeout
		}
	}
	root := &node{v: v, log: log, m: m}
	ro := v.ReadOnly()
	o := &fs.Options{
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		MountOptions: fuse.MountOptions{
			FsName:        "trove",
			Name:          "trove",
			AllowOther:    opts.AllowOther,
			DisableXAttrs: true,
			Debug:         opts.Debug,
			MaxWrite:      128 << 10,
			// As root, mount(2) directly, so no fusermount3 is needed;
			// go-fuse falls back to fusermount when that fails.
			DirectMount: os.Geteuid() == 0,
		},
		UID: uint32(os.Getuid()),
		GID: uint32(os.Getgid()),
	}
	if opts.Debug {
		o.MountOptions.Logger = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	}
	if ro {
		// The kernel refuses every write (EROFS) before asking us.
		o.MountOptions.Options = append(o.MountOptions.Options, "ro")
	}
	// fs.Mount, with a look at what the kernel offered (INIT is answered
	// inside NewServer) before the first request is served.
	srv, err := fuse.NewServer(fs.NewNodeFS(root, o), dir, &o.MountOptions)
	if err != nil {
		return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
	}
	// A mount with nothing writable needs no per-descriptor state: OPEN
	// is answered ENOSYS, after which the kernel opens files of this
	// mount without asking (and without RELEASE), keeping their pages
	// (FOPEN_KEEP_CACHE) until an invalidation or a change of size or
	// modification time (AUTO_INVAL_DATA) drops them.
	m.noOpen = ro && srv.KernelSettings().Flags64()&fuse.CAP_NO_OPEN_SUPPORT != 0
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
	}
	out := &Server{dir: dir, srv: srv, root: root}
	if !opts.NoFollow && v.CanFollow() {
		ctx, cancel := context.WithCancel(context.Background())
		out.stop, out.done = cancel, make(chan struct{})
		go func() {
			defer close(out.done)
			_ = v.Follow(ctx, out.invalidate)
		}()
	}
	return out, nil
}

// invalidate drops what the kernel caches about the vfs name (see
// vfs.FS.Follow): a file's pages, attributes and directory entry; a
// directory's attributes (never its entry: a directory dentry dropped
// while it is a process's working directory breaks getcwd(3)); for a name
// not in the kernel's tree, the (negative) entry of its first missing
// component. "" drops everything known.
func (s *Server) invalidate(name string) {
	root := &s.root.Inode
	if name == "" {
		invalidateTree(root)
		return
	}
	parent := root
	for {
		seg, rest, more := strings.Cut(name, "/")
		c := parent.GetChild(seg)
		switch {
		case c == nil:
			parent.NotifyEntry(seg)
			return
		case !more:
			c.NotifyContent(0, 0)
			if !c.IsDir() {
				parent.NotifyEntry(seg)
			}
			return
		}
		parent, name = c, rest
	}
}

// invalidateTree drops the kernel's pages, attributes and file entries of
// everything below dir.
func invalidateTree(dir *fs.Inode) {
	for name, c := range dir.Children() {
		c.NotifyContent(0, 0)
		if c.IsDir() {
			invalidateTree(c)
		} else {
			dir.NotifyEntry(name)
		}
	}
}

// Dir returns the mount point.
func (s *Server) Dir() string { return s.dir }

// Live reports whether the mount follows the change feed of every store
// now (vfs.FS.Live): remote changes then show within the feed's latency.
func (s *Server) Live() bool { return s.stop != nil && s.root.v.Live() }

// Unmount unmounts the file system and waits for the serve loop to end. It
// fails (EBUSY) while a process uses the mount; Unmount may be retried.
func (s *Server) Unmount() error {
	if err := s.srv.Unmount(); err != nil {
		return fmt.Errorf("fusefs: unmount %s: %w", s.dir, err)
	}
	s.srv.Wait()
	if s.stop != nil {
		s.stop()
		<-s.done
	}
	return nil
}

// node is every inode: the root, store directories, directories and files.
type node struct {
	fs.Inode
	v   *vfs.FS
	log *slog.Logger
	m   *mount

	mu      sync.Mutex
	pageSHA string // content hash of what the kernel's page cache holds ("" unknown)
}

var (
	_ fs.NodeLookuper   = (*node)(nil)
	_ fs.NodeGetattrer  = (*node)(nil)
	_ fs.NodeSetattrer  = (*node)(nil)
	_ fs.NodeReaddirer  = (*node)(nil)
	_ fs.NodeOpener     = (*node)(nil)
	_ fs.NodeCreater    = (*node)(nil)
	_ fs.NodeReader     = (*node)(nil)
	_ fs.NodeWriter     = (*node)(nil)
	_ fs.NodeFlusher    = (*node)(nil)
	_ fs.NodeFsyncer    = (*node)(nil)
	_ fs.NodeReleaser   = (*node)(nil)
	_ fs.NodeUnlinker   = (*node)(nil)
	_ fs.NodeMkdirer    = (*node)(nil)
	_ fs.NodeRmdirer    = (*node)(nil)
	_ fs.NodeRenamer    = (*node)(nil)
	_ fs.NodeStatfser   = (*node)(nil)
	_ fs.NodeSymlinker  = (*node)(nil)
	_ fs.NodeLinker     = (*node)(nil)
	_ fs.NodeMknoder    = (*node)(nil)
	_ fs.NodeOpendirer  = (*node)(nil)
	_ fs.NodeAccesser   = (*node)(nil)
	_ fs.NodeReadlinker = (*node)(nil)
)

// path is the node's vfs name: its path from the mount root. For a node no
// longer attached to the root (unlinked while open), go-fuse puts a
// ".go-fuse.N/deleted" segment first, which the vfs reports as not found.
func (n *node) path() string { return n.Path(n.Root()) }

// errno maps err with ToErrno and logs what becomes EIO, since the kernel
// tells the caller nothing more.
func (n *node) errno(err error) syscall.Errno {
	e := ToErrno(err)
	if e == syscall.EIO {
		n.log.Error("fusefs: I/O error", "path", n.path(), "err", err)
	}
	return e
}

func (n *node) child(name string) string {
	if p := n.path(); p != "" {
		return p + "/" + name
	}
	return name
}

func fillAttr(a vfs.Attr, out *fuse.Attr) {
	out.Mode = uint32(a.Mode.Perm()) | stable(a).Mode
	out.Size = uint64(a.Size)
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = 4096
	out.Nlink = a.Nlink
	t := a.ModTime
	out.SetTimes(&t, &t, &t)
	out.Owner = fuse.Owner{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
}

func stable(a vfs.Attr) fs.StableAttr {
	if a.Dir {
		return fs.StableAttr{Mode: syscall.S_IFDIR}
	}
	return fs.StableAttr{Mode: syscall.S_IFREG}
}

func (n *node) newChild(ctx context.Context, a vfs.Attr, out *fuse.EntryOut) *fs.Inode {
	fillAttr(a, &out.Attr)
	ttl := n.m.ttl()
	out.SetEntryTimeout(ttl)
	out.SetAttrTimeout(ttl)
	return n.NewInode(ctx, &node{v: n.v, log: n.log, m: n.m}, stable(a))
}

// Lookup implements fs.NodeLookuper. Entries, attributes and misses are
// cached by the kernel for the refresh bound, or, while the change feed is
// live, for Options.LiveTimeout: the feed's events drop them earlier.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ttl := n.m.ttl()
	a, err := n.v.Stat(ctx, n.child(name))
	if err != nil {
		out.SetEntryTimeout(ttl) // a miss
		return nil, n.errno(err)
	}
	return n.newChild(ctx, a, out), 0
}

// Getattr implements fs.NodeGetattrer.
func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	a, err := n.v.Stat(ctx, n.path())
	if err != nil {
		h, ok := f.(*handle)
		if !ok {
			return n.errno(err)
		}
		// An unlinked file still open: describe the descriptor.
		a = vfs.Attr{Mode: 0o644, Size: h.h.Size(), Nlink: 0, ModTime: time.Now()}
	}
	fillAttr(a, &out.Attr)
	out.SetTimeout(n.m.ttl())
	return 0
}

// Setattr implements fs.NodeSetattrer: only the size changes anything;
// modes, owners and times are accepted and ignored.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		var err error
		if h, isH := f.(*handle); isH {
			err = h.h.Truncate(ctx, int64(size))
		} else {
			err = n.v.Truncate(ctx, n.path(), int64(size))
		}
		if err != nil {
			return n.errno(err)
		}
	}
	return n.Getattr(ctx, f, out)
}

// Opendir implements fs.NodeOpendirer.
func (n *node) Opendir(ctx context.Context) syscall.Errno {
	a, err := n.v.Stat(ctx, n.path())
	if err != nil {
		return n.errno(err)
	}
	if !a.Dir {
		return syscall.ENOTDIR
	}
	return 0
}

// Readdir implements fs.NodeReaddirer.
func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	list, err := n.v.ReadDir(ctx, n.path())
	if err != nil {
		return nil, n.errno(err)
	}
	out := make([]fuse.DirEntry, 0, len(list))
	for _, a := range list {
		out = append(out, fuse.DirEntry{Name: a.Name, Mode: stable(a).Mode})
	}
	return fs.NewListDirStream(out), 0
}

// Access implements fs.NodeAccesser: writes to the root and to read-only
// stores are refused; everything else is allowed.
func (n *node) Access(ctx context.Context, mask uint32) syscall.Errno {
	if mask&unix.W_OK == 0 {
		return 0
	}
	a, err := n.v.Stat(ctx, n.path())
	if err != nil {
		return n.errno(err)
	}
	if a.Mode.Perm()&0o200 == 0 {
		return syscall.EROFS
	}
	return 0
}

// handle is an open file.
type handle struct{ h *vfs.Handle }

// Open implements fs.NodeOpener. The kernel keeps the file's page cache
// from the last open (FOPEN_KEEP_CACHE) when the file shows the same store
// content as when the cache was filled; a read-only open needs no flush at
// close (FOPEN_NOFLUSH: the release ends it). On a read-only mount Open
// answers ENOSYS: the kernel then never asks again (see Mount).
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.m.noOpen {
		return nil, 0, syscall.ENOSYS
	}
	h, err := n.v.Open(ctx, n.path(), int(flags))
	if err != nil {
		return nil, 0, n.errno(err)
	}
	var fl uint32
	sha := h.CleanSHA()
	n.mu.Lock()
	switch {
	case flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 || sha == "":
		// Writes pass through the page cache: what it holds after them
		// is known only once they are uploaded.
		n.pageSHA = ""
	case sha == n.pageSHA:
		fl |= fuse.FOPEN_KEEP_CACHE
	default:
		n.pageSHA = sha // the kernel drops the old pages at this open
	}
	n.mu.Unlock()
	if flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		fl |= fuse.FOPEN_NOFLUSH
	}
	return &handle{h}, fl, 0
}

// Create implements fs.NodeCreater.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	p := n.child(name)
	h, err := n.v.Open(ctx, p, int(flags)|os.O_CREATE)
	if err != nil {
		return nil, nil, 0, n.errno(err)
	}
	a, err := n.v.Stat(ctx, p)
	if err != nil {
		h.Release()
		return nil, nil, 0, n.errno(err)
	}
	return n.newChild(ctx, a, out), &handle{h}, 0, 0
}

// Read implements fs.NodeReader.
func (n *node) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, ok := f.(*handle)
	if !ok {
		if n.m.noOpen {
			return n.readUnopened(ctx, dest, off)
		}
		return nil, syscall.EBADF
	}
	c, err := h.h.ReadAt(ctx, dest, off)
	if err != nil && err != io.EOF {
		return nil, n.errno(err)
	}
	return fuse.ReadResultData(dest[:c]), 0
}

// readUnopened reads on a mount without OPEN: the file as the vfs shows it
// now, through a handle that lives for this request only (nothing waits
// for a RELEASE). A file gone or renamed since the kernel looked it up is
// ESTALE, as on a network file system.
func (n *node) readUnopened(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, err := n.v.Open(ctx, n.path(), os.O_RDONLY)
	if err != nil {
		if e := n.errno(err); e != syscall.ENOENT {
			return nil, e
		}
		return nil, syscall.ESTALE
	}
	defer h.Release()
	c, err := h.ReadAt(ctx, dest, off)
	if err != nil && err != io.EOF {
		return nil, n.errno(err)
	}
	return fuse.ReadResultData(dest[:c]), 0
}

// Write implements fs.NodeWriter.
func (n *node) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	h, ok := f.(*handle)
	if !ok {
		return 0, syscall.EBADF
	}
	n.mu.Lock()
	n.pageSHA = ""
	n.mu.Unlock()
	c, err := h.h.WriteAt(ctx, data, off)
	return uint32(c), n.errno(err)
}

// Flush implements fs.NodeFlusher: close(2) uploads a changed file. On a
// mount without OPEN it answers ENOSYS, after which the kernel sends no
// FLUSH at all.
func (n *node) Flush(ctx context.Context, f fs.FileHandle) syscall.Errno {
	h, ok := f.(*handle)
	if !ok {
		if n.m.noOpen {
			return syscall.ENOSYS
		}
		return 0
	}
	err := h.h.Flush(ctx)
	n.detachIfDropped(h)
	return n.errno(err)
}

// Fsync implements fs.NodeFsyncer.
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	h, ok := f.(*handle)
	if !ok {
		return 0
	}
	err := h.h.Fsync(ctx)
	n.detachIfDropped(h)
	return n.errno(err)
}

// Release implements fs.NodeReleaser.
func (n *node) Release(ctx context.Context, f fs.FileHandle) syscall.Errno {
	if h, ok := f.(*handle); ok {
		h.h.Release()
		n.detachIfDropped(h)
	}
	return 0
}

// detachIfDropped removes n from its parent, in go-fuse's tree and in the
// kernel's entry cache, when the vfs dropped the file behind h while the
// inode is still attached under its name: a new file whose content the store
// refused at a close, fsync or last release. Without it the kernel would go
// on serving the name from its caches (stat succeeds, open(O_CREAT) of the
// name fails ENOENT) until the entry timeout. Unlinks and renames over a
// file detach the inode through go-fuse already.
func (n *node) detachIfDropped(h *handle) {
	if !h.h.Dropped() {
		return
	}
	name, parent := n.Parent()
	if parent == nil || parent.GetChild(name) != &n.Inode {
		return
	}
	parent.RmChild(name)
	// NotifyEntry, not NotifyDelete: the kernel handles the notification
	// with the parent directory locked, and NotifyDelete also locks the
	// child inode, which fsync(2) holds while it waits for this request (a
	// deadlock). Close, fsync and release hold no directory lock.
	if errno := parent.NotifyEntry(name); errno != 0 && errno != syscall.ENOENT {
		n.log.Warn("fusefs: dropping a refused file from the kernel cache failed", "name", name, "errno", errno)
	}
}

// Unlink implements fs.NodeUnlinker.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.errno(n.v.Remove(ctx, n.child(name)))
}

// Mkdir implements fs.NodeMkdirer.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := n.child(name)
	if err := n.v.Mkdir(ctx, p); err != nil {
		return nil, n.errno(err)
	}
	a, err := n.v.Stat(ctx, p)
	if err != nil {
		return nil, n.errno(err)
	}
	return n.newChild(ctx, a, out), 0
}

// Rmdir implements fs.NodeRmdirer.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.errno(n.v.Rmdir(ctx, n.child(name)))
}

// Rename implements fs.NodeRenamer. The no-replace flag (Linux
// RENAME_NOREPLACE, macOS RENAME_EXCL) is honoured; exchanging is not
// supported.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	to := path.Join(newParent.EmbeddedInode().Path(n.Root()), newName)
	switch flags {
	case 0:
	case renameNoReplace:
		if _, err := n.v.Stat(ctx, to); err == nil {
			return syscall.EEXIST
		}
	default:
		return syscall.ENOTSUP
	}
	return n.errno(n.v.Rename(ctx, n.child(name), to))
}

// Statfs implements fs.NodeStatfser with nominal figures, so that df and
// tools that check free space work.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	out.Bsize, out.Frsize, out.NameLen = 4096, 4096, 255
	out.Blocks, out.Bfree, out.Bavail = 1<<20, 1<<19, 1<<19
	out.Files, out.Ffree = 1<<20, 1<<19
	return 0
}

// Symlink implements fs.NodeSymlinker: stores hold no links.
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Link implements fs.NodeLinker: stores hold no links.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Mknod implements fs.NodeMknoder: stores hold no special files.
func (n *node) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

// Readlink implements fs.NodeReadlinker.
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	return nil, syscall.EINVAL
}
