package vfs

import (
	"errors"
	"io/fs"

	"github.com/trovehq/trove"
)

// The closed set of errors the VFS returns, always wrapped in an
// *fs.PathError naming the operation and the path; test with errors.Is.
// fusefs maps each one to exactly one errno (in parentheses).
var (
	// ErrNotExist: the name, or one of its parents, does not exist (ENOENT).
	ErrNotExist = fs.ErrNotExist
	// ErrExist: the name is taken, or the store reported a path conflict (EEXIST).
	ErrExist = fs.ErrExist
	// ErrNotDir: a directory operation named a file, or a parent is a file (ENOTDIR).
	ErrNotDir = errors.New("vfs: not a directory")
	// ErrIsDir: a file operation named a directory (EISDIR).
	ErrIsDir = errors.New("vfs: is a directory")
	// ErrNotEmpty: rmdir or rename over a directory that has entries (ENOTEMPTY).
	ErrNotEmpty = errors.New("vfs: directory not empty")
	// ErrReadOnly: a mutation of a read_only store or of the mount root (EROFS).
	ErrReadOnly = errors.New("vfs: read-only file system")
	// ErrTooLarge: the file would exceed the content limit; the store is unchanged (EFBIG).
	ErrTooLarge = errors.New("vfs: file too large for a memory")
	// ErrNotUTF8: the bytes written are not valid UTF-8; the store is unchanged (EILSEQ).
	ErrNotUTF8 = errors.New("vfs: content is not valid UTF-8")
	// ErrStale: a precondition race was lost (someone else changed or
	// deleted the memory since this mount read it). For a close or fsync the
	// written bytes were saved as a conflict copy (ESTALE).
	ErrStale = errors.New("vfs: memory changed since it was read")
	// ErrInvalid: the name breaks the path rules, or the operation makes no
	// sense (rename of a directory into itself) (EINVAL).
	ErrInvalid = errors.New("vfs: invalid argument")
	// ErrNoSpace: the store holds the maximum number of memories (ENOSPC).
	ErrNoSpace = errors.New("vfs: store memory limit reached")
	// ErrCrossStore: a rename between two stores (EXDEV).
	ErrCrossStore = errors.New("vfs: rename across stores")
	// ErrPermission: the credential may not do this (EACCES).
	ErrPermission = errors.New("vfs: permission denied")
	// ErrNotSupported: links, special files, extended attributes (ENOTSUP).
	ErrNotSupported = errors.New("vfs: operation not supported")
	// ErrUnavailable: the store service is unreachable or failed (EIO).
	ErrUnavailable = errors.New("vfs: store service unavailable")
)

// storeErr turns an error of the store services into one of the VFS errors.
// It is the single place where trove error codes become VFS errors.
func storeErr(err error) error {
	if err == nil {
		return nil
	}
	switch trove.ErrorCode(err) {
	case trove.ENOTFOUND:
		return ErrNotExist
	case trove.EPATHCONFLICT:
		return ErrExist
	case trove.EPRECONDITION, trove.ECONFLICT:
		return ErrStale
	case trove.ETOOLARGE:
		return ErrTooLarge
	case trove.EFORBIDDEN:
		return ErrReadOnly
	case trove.EUNAUTHENTICATED:
		return ErrPermission
	case trove.EINVALID:
		return ErrInvalid
	default: // EUNAVAILABLE, EINTERNAL, transport errors
		return ErrUnavailable
	}
}

func pathErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}
