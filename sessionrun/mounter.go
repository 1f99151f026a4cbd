package sessionrun

import (
	"context"
	"log/slog"
	"path"
	"time"

	"github.com/trovehq/trove"
)

// Mounter makes one attached store available as a directory for the length
// of a session. CopyMounter (the sync engine) is the portable
// implementation; FUSEMounter is the live one where the kernel allows.
type Mounter interface {
	// Mount prepares spec.Dir with the store's contents (it returns only
	// once the agent can read them) and returns the running mount. On error
	// nothing of the mount is left running.
	Mount(ctx context.Context, spec MountSpec) (Mount, error)
	// Live reports whether every close of a written file reaches the store
	// at once (a FUSE mount) rather than at a later sync pass; it chooses
	// the prompt note's wording.
	Live() bool
}

// Mount is a store made available by a Mounter.
type Mount interface {
	// Run keeps the directory and the store in sync until ctx is done, then
	// flushes (bounded) and returns. It returns nil only when everything
	// written in the directory is in the store (or was refused at once, as
	// a live mount does, with the store unchanged), so that the directory
	// and its state may be removed. Any other outcome is an error saying
	// what stays on disk.
	Run(ctx context.Context) error
	// Close releases the mount's resources after Run returned (or instead
	// of Run, when the session stops before the command starts). A non-nil
	// error means the directory may still be in use (a mount that failed
	// to unmount) and must not be removed.
	Close() error
}

// MountSpec is what a Mounter needs for one attached store. Services act
// with the session's credential; the ctx given to Mount carries the
// session's principal for local services.
type MountSpec struct {
	Store     trove.SessionStore
	Dir       string
	StateDir  string // the copy state (manifest, base copies, quarantine); unused by live mounts
	SessionID string
	Services  trove.Services
	Interval  time.Duration // longest time between sync passes (copy mounts)
	Logger    *slog.Logger  // nil: discarded
	// Notices receives what the agent should know about (conflict copies,
	// refused files, restored read-only files); nil: nowhere.
	Notices *Notices
}

func (s MountSpec) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// DirName is the directory name of an attached store under the session
// root: the last element of its mount path (the slug of its name).
func DirName(ss trove.SessionStore) string { return path.Base(ss.MountPath) }
