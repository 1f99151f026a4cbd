// Package atomicfile replaces a file's content so that a crash at any point
// leaves either the old file or the new one, never a mix or a partial file:
// the content goes to a temporary file in the same directory, which is
// synced, renamed over the target, and then the directory itself is synced,
// so the rename survives a power loss too.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write creates or replaces path with mode perm and the bytes fill writes.
// When fill or any step fails, path is unchanged, the temporary file is
// removed and the first error is returned.
func Write(path string, perm os.FileMode, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = fill(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// WriteFile is Write with data as the content.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
