package memtool

import (
	"context"
	"errors"
	"io/fs"
	"time"
)

// Kind is the type of an entry in an FS.
type Kind uint8

const (
	KindFile    Kind = iota + 1 // a regular file
	KindDir                     // a directory (possibly only implied by the paths under it)
	KindSymlink                 // a symbolic link; never followed (see package doc)
	KindOther                   // a FIFO, socket, device...: listed nowhere, read by nobody
)

// Info describes one entry.
type Info struct {
	// Name is the base name (for ReadDir) or the full relative name (for Stat).
	Name string
	Kind Kind
	// Size is the length in bytes of a file; meaningless for other kinds.
	Size int64
	// Accessed is the last access time recorded by Touch (or by the
	// backend's own notion of access); the zero time when not tracked.
	Accessed time.Time
}

// Version is an opaque token identifying the content of a file as returned
// by ReadFile. Backends typically use the hex SHA-256 of the content, which is
// what a memory store's content_sha256 precondition takes. The empty Version
// is never returned for an existing file; passed to WriteFile it means "the
// file must not exist".
type Version string

// Errors returned by FS implementations (possibly wrapped; test with
// errors.Is). The engine maps each one to a message for the model.
var (
	// ErrNotExist: the entry, or one of its parents, does not exist.
	ErrNotExist = fs.ErrNotExist
	// ErrExist: WriteFile with the empty Version, or the destination of
	// Rename, found an existing entry (of any kind).
	ErrExist = fs.ErrExist
	// ErrNotDir: a parent of the name is a file (or another non-directory).
	ErrNotDir = errors.New("memtool: a parent is not a directory")
	// ErrIsDir: ReadFile or a replacing WriteFile named a directory.
	ErrIsDir = errors.New("memtool: is a directory")
	// ErrSymlink: the name goes through a symbolic link, or an operation
	// that does not act on links themselves named one.
	ErrSymlink = errors.New("memtool: path goes through a symbolic link")
	// ErrConflict: WriteFile's Version precondition failed because the file
	// changed (or disappeared) since it was read.
	ErrConflict = errors.New("memtool: file changed since it was read")
	// ErrNotRegular: ReadFile named a FIFO, socket, device or other
	// special file.
	ErrNotRegular = errors.New("memtool: not a regular file")
	// ErrTooLarge: ReadFile refused a file larger than the limit it was given.
	ErrTooLarge = errors.New("memtool: file too large")
)

// Refusal is the error an FS returns when its storage refuses an operation
// for a reason the model can understand and act on: an archived or
// read-only store, a quota, a name or content the storage does not accept.
// The engine shows it to the model (wherever it appears, possibly wrapped)
// as
//
//	Error: The {By} refused the {command} of {path}: {Message}.
//
// followed by " Nothing was written." for create, str_replace and insert,
// instead of the generic storage-error message. Message must be safe to show
// to the model: no host paths, credentials or internal detail (those go in
// Err). Any other unexpected error stays a generic "storage error" (its
// detail goes to Options.OnInternalError).
type Refusal struct {
	// By names the refusing storage ("memory store"); "" means "storage".
	By string
	// Message says what was refused and why, e.g. "the store is archived";
	// a final "." is optional.
	Message string
	// Err is the underlying error, for logs and errors.Is/As; it may be nil.
	Err error
}

func (e *Refusal) Error() string {
	by := e.By
	if by == "" {
		by = "storage"
	}
	s := "memtool: refused by the " + by + ": " + e.Message
	if e.Err != nil {
		s += " (" + e.Err.Error() + ")"
	}
	return s
}

// Unwrap returns Err.
func (e *Refusal) Unwrap() error { return e.Err }

// FS is the storage the engine runs on. Names are relative, slash-separated
// and already validated by ParsePath ("" is the root, "a/b.md" a file); FS
// implementations must not accept anything else and must never touch
// anything outside their tree.
//
// The root always exists: an implementation creates it lazily (or
// re-creates it) as needed. Directories may be real (a host directory) or only
// implied by the names of the files under them (a memory store); the engine
// never creates an empty directory and does not rely on empty directories
// persisting.
//
// Implementations must be safe for concurrent use; the engine serialises
// conflicting operations on overlapping names itself (see Tool), so an FS
// only needs each single call to be atomic.
//
// Besides the sentinel errors listed per method, any method may return a
// *Refusal, whose message the model sees, or any other error, which the
// model only sees as a generic storage error.
type FS interface {
	// Stat describes name without following a final symbolic link. It
	// returns ErrNotExist, ErrNotDir or ErrSymlink (an intermediate link).
	Stat(ctx context.Context, name string) (Info, error)

	// ReadDir lists the direct children of the directory name in any
	// order, with Info.Name the base name. It returns ErrNotExist, ErrNotDir
	// (name is a file) or ErrSymlink.
	ReadDir(ctx context.Context, name string) ([]Info, error)

	// ReadFile returns the content of the regular file name and its current
	// Version. If the file is larger than maxBytes (when maxBytes >= 0) it
	// returns ErrTooLarge without reading it. It returns ErrNotExist,
	// ErrNotDir, ErrIsDir or ErrSymlink (name is, or goes through, a link).
	ReadFile(ctx context.Context, name string, maxBytes int64) ([]byte, Version, error)

	// WriteFile atomically stores data as the content of the file name,
	// conditionally: with ifMatch == "" the file must not exist (ErrExist
	// otherwise; missing parent directories are created); with ifMatch != ""
	// the file must exist with exactly that Version (ErrConflict otherwise,
	// including when it vanished; ErrIsDir if it is a directory). Readers see
	// either the old or the new content, never a mix. It returns the new
	// Version.
	WriteFile(ctx context.Context, name string, data []byte, ifMatch Version) (Version, error)

	// Remove deletes name, recursively for a directory. A symbolic link is
	// removed itself, never its target. It returns ErrNotExist, ErrNotDir or
	// ErrSymlink (an intermediate link). name is never "".
	Remove(ctx context.Context, name string) error

	// Rename moves oldname (file, directory or link) to newname without
	// ever replacing an existing entry: it returns ErrExist if newname
	// exists, ErrNotExist if oldname does not (without side effects), and
	// ErrNotDir if a parent of newname is a file. Missing parents of
	// newname are created. newname is never inside oldname and neither is "".
	Rename(ctx context.Context, oldname, newname string) error
}

// Toucher is implemented by backends that can record access times, which
// Tool.Sweep needs. Touch records that the file name was used at t; the
// time is then reported in Info.Accessed.
type Toucher interface {
	Touch(ctx context.Context, name string, t time.Time) error
}

// TouchingFS is implemented by backends that can record an access as part
// of a read or a write, which saves the engine a separate Touch (for DirFS,
// a path resolution and two system calls) per command. When the FS
// implements it, view reads with ReadFileTouch and create, str_replace and
// insert write with WriteFileTouch instead of calling Touch afterwards.
type TouchingFS interface {
	Toucher
	// ReadFileTouch is ReadFile that, when the read succeeds, also records
	// an access at t as Touch would. A failure to record the access does
	// not fail the read: it is returned as touchErr, with the data.
	ReadFileTouch(ctx context.Context, name string, maxBytes int64, t time.Time) (data []byte, v Version, touchErr, err error)
	// WriteFileTouch is WriteFile whose new content is recorded as
	// accessed at t.
	WriteFileTouch(ctx context.Context, name string, data []byte, ifMatch Version, t time.Time) (Version, error)
}

// CopyFS is implemented by backends that keep a copy of the content they
// last read or wrote of a file and can hand it to an edit without asking
// their storage: over a remote store it saves str_replace and insert one
// request of their two. The engine writes the edited copy conditionally on
// the copy's Version, as it writes any edit, so a copy older than the
// stored file costs a refused write and a fresh read, never a lost update;
// and when the edit does not apply to the copy (old_str not found, a line
// out of range), the engine reads the file afresh before it answers. view
// never uses the copy.
type CopyFS interface {
	FS
	// Copy returns the content of the file name as the FS last read or
	// wrote it, and the Version that content has (the Version a
	// conditional write must match for the copy to be the stored file),
	// without I/O; ok is false when the FS has no copy it can vouch for.
	Copy(name string) (data []byte, v Version, ok bool)
}
