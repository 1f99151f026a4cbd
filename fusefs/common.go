// Package fusefs mounts a vfs.FS with the kernel's FUSE, through
// github.com/hanwen/go-fuse/v2/fs. It is a thin adapter: every node asks the
// vfs by path (the inode's path from the mount root), and ToErrno is the one
// place where vfs errors become errno values.
//
// When the services offer the change feed (trove.ChangeService) the mount
// follows it (vfs.FS.Follow): each remote change updates the listing and
// drops the kernel's cached entry, attributes and pages of the names it
// touched (FUSE notify calls), so another writer's change is visible
// through the mount within the feed's latency, while everything unchanged
// stays cached: entries and attributes for Options.LiveTimeout, file pages
// across opens (FOPEN_KEEP_CACHE while the file's content hash is the one
// the pages were read with). Without a live feed the kernel caches
// entries, attributes and failed lookups for the vfs refresh bound
// (vfs.FS.Refresh), so a change is visible within about twice that
// bound. A new file the vfs drops (its content refused at close or fsync)
// leaves the kernel's caches at once.
//
// A mount where no store is writable (vfs.FS.ReadOnly) is mounted
// read-only ("ro": the kernel refuses writes with EROFS), and on Linux it
// answers OPEN and FLUSH with ENOSYS: the kernel then opens files of the
// mount without asking (no OPEN, FLUSH or RELEASE), keeping their pages
// until the feed's invalidation or, without a live feed, until their size
// or modification time changes (AUTO_INVAL_DATA). A READ then reads the file
// as the vfs shows it at that moment (no per-descriptor snapshot; ENOENT or
// ESTALE for a file gone since it was opened).
//
// Mounting needs Linux (/dev/fuse) or macOS (macFUSE); elsewhere Mount fails
// with ErrUnavailable, and ToErrno and Options still build for the callers
// that map vfs errors or carry options on every platform.
package fusefs

import (
	"errors"
	"log/slog"
	"syscall"
	"time"

	"github.com/trovehq/trove/vfs"
)

// ToErrno maps an error of the vfs to the errno the kernel returns: 0 for
// nil; EIO for anything outside the vfs's closed set.
func ToErrno(err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, vfs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, vfs.ErrExist):
		return syscall.EEXIST
	case errors.Is(err, vfs.ErrNotDir):
		return syscall.ENOTDIR
	case errors.Is(err, vfs.ErrIsDir):
		return syscall.EISDIR
	case errors.Is(err, vfs.ErrNotEmpty):
		return syscall.ENOTEMPTY
	case errors.Is(err, vfs.ErrReadOnly):
		return syscall.EROFS
	case errors.Is(err, vfs.ErrTooLarge):
		return syscall.EFBIG
	case errors.Is(err, vfs.ErrNotUTF8):
		return syscall.EILSEQ
	case errors.Is(err, vfs.ErrStale):
		return syscall.ESTALE
	case errors.Is(err, vfs.ErrInvalid):
		return syscall.EINVAL
	case errors.Is(err, vfs.ErrNoSpace):
		return syscall.ENOSPC
	case errors.Is(err, vfs.ErrCrossStore):
		return syscall.EXDEV
	case errors.Is(err, vfs.ErrPermission):
		return syscall.EACCES
	case errors.Is(err, vfs.ErrNotSupported):
		return syscall.ENOTSUP
	default: // vfs.ErrUnavailable and anything unexpected
		return syscall.EIO
	}
}

// DefaultLiveTimeout is Options.LiveTimeout's default.
const DefaultLiveTimeout = time.Minute

// Options configure a mount.
type Options struct {
	// Timeout is the kernel's entry, attribute and negative-lookup cache
	// time; 0 means the vfs refresh bound, or LiveTimeout while the
	// change feed is live.
	Timeout time.Duration
	// LiveTimeout is the kernel's cache time while every store's change
	// feed is live (vfs.FS.Live) and Timeout is 0: the feed's events
	// invalidate what changed, so this only bounds how long an entry
	// lives if an event were lost. 0 means DefaultLiveTimeout.
	LiveTimeout time.Duration
	// NoFollow leaves the change feed alone: the kernel caches for Timeout
	// (or the refresh bound) and the vfs reloads listings by age.
	NoFollow bool
	// AllowOther lets users other than the mounting one use the mount
	// (needs user_allow_other in /etc/fuse.conf unless root).
	AllowOther bool
	// Debug logs every FUSE request and reply to Logger, at level Debug.
	Debug bool
	// Logger receives errors the kernel cannot be told about (nil: discard).
	Logger *slog.Logger
}

// ErrUnavailable is the error of Mount where this build has no FUSE support
// (neither Linux nor macOS).
var ErrUnavailable = errors.New("FUSE mounts are not supported on this operating system")
