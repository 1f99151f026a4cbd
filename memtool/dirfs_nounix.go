//go:build !unix

// Where there are no directory descriptors (Windows), DirFS is the os.Root
// implementation only.

package memtool

import (
	"context"
	"os"
	"time"
)

// haveDescriptorFS: there is no descriptor implementation here.
const haveDescriptorFS = false

// No open flags to add: there are no FIFOs to block on and no O_NOATIME.
const (
	rootOpenFlags = 0
	rootNoatime   = 0
)

// unlinked is false: a directory in use cannot be removed here.
func unlinked(os.FileInfo) bool { return false }

// syncDir does nothing: directories cannot be fsynced on Windows (NTFS
// journals its metadata).
func syncDir(*os.File) error { return nil }

// Stat implements FS.
func (d *DirFS) Stat(_ context.Context, name string) (Info, error) {
	if name == "" {
		return Info{Kind: KindDir}, nil // the root (re-created by do when needed)
	}
	return d.statRoot(name)
}

// ReadDir implements FS.
func (d *DirFS) ReadDir(_ context.Context, name string) ([]Info, error) {
	return d.readDirRoot(name)
}

// ReadFile implements FS.
func (d *DirFS) ReadFile(_ context.Context, name string, maxBytes int64) ([]byte, Version, error) {
	if name == "" {
		return nil, "", ErrIsDir
	}
	data, _, err := d.readRoot(name, maxBytes, nil)
	if err != nil {
		return nil, "", err
	}
	return data, contentVersion(data), nil
}

// ReadFileTouch implements TouchingFS: ReadFile, then the file's access
// time is set to t.
func (d *DirFS) ReadFileTouch(_ context.Context, name string, maxBytes int64, t time.Time) ([]byte, Version, error, error) {
	if name == "" {
		return nil, "", nil, ErrIsDir
	}
	data, touchErr, err := d.readRoot(name, maxBytes, &t)
	if err != nil {
		return nil, "", nil, err
	}
	return data, contentVersion(data), touchErr, nil
}

// WriteFile implements FS.
func (d *DirFS) WriteFile(_ context.Context, name string, data []byte, ifMatch Version) (Version, error) {
	if name == "" {
		return "", ErrExist
	}
	return d.writeRoot(name, data, ifMatch, nil)
}

// WriteFileTouch implements TouchingFS: WriteFile whose new file has the
// access time t.
func (d *DirFS) WriteFileTouch(_ context.Context, name string, data []byte, ifMatch Version, t time.Time) (Version, error) {
	if name == "" {
		return "", ErrExist
	}
	return d.writeRoot(name, data, ifMatch, &t)
}

// Touch implements Toucher by setting the file's access time.
func (d *DirFS) Touch(_ context.Context, name string, t time.Time) error {
	if name == "" {
		return nil
	}
	return d.touchRoot(name, t)
}

// renameEntry renames oparent/obase to nparent/nbase (see the Unix one).
func (d *DirFS) renameEntry(r *os.Root, oparent, obase, nparent, nbase string, isDir bool) error {
	return renameEntryRoot(r, oparent, obase, nparent, nbase, isDir)
}
