package syncer

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/trovehq/trove/storetree"
)

var rel = storetree.Rel

// readExpect reads the local file at p and checks it still hashes to sha;
// errRace otherwise.
func (e *Engine) readExpect(p, sha string) ([]byte, error) {
	b, _, err := readLocal(e.root, rel(p))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errRace
		}
		return nil, err
	}
	if hashBytes(b) != sha {
		return nil, errRace
	}
	return b, nil
}

func (e *Engine) hasDir(d string) bool {
	e.amu.Lock()
	defer e.amu.Unlock()
	return e.dirs[d]
}

// dirRoot returns a handle on directory d (relative to the synced
// directory, "." for itself), opened once per round, so that writing a
// file there does not re-walk its path in every call (os.Root opens each
// component per operation). A directory the round removes loses its
// handle (dropDirRoot); closeDirRoots ends the round's handles.
func (e *Engine) dirRoot(d string) (*os.Root, error) {
	if d == "." {
		return e.root, nil
	}
	e.amu.Lock()
	r := e.droots[d]
	e.amu.Unlock()
	if r != nil {
		return r, nil
	}
	r, err := e.root.OpenRoot(d)
	if err != nil {
		return nil, err
	}
	e.amu.Lock()
	defer e.amu.Unlock()
	if old := e.droots[d]; old != nil {
		r.Close()
		return old, nil
	}
	if e.droots == nil {
		e.droots = map[string]*os.Root{}
	}
	e.droots[d] = r
	return r, nil
}

// dropDirRoot closes the handle on directory d, if any.
func (e *Engine) dropDirRoot(d string) {
	e.amu.Lock()
	defer e.amu.Unlock()
	e.closeDirFileLocked(d)
	if r := e.droots[d]; r != nil {
		r.Close()
		delete(e.droots, d)
	}
}

// closeDirRoots closes every directory handle of the round.
func (e *Engine) closeDirRoots() {
	e.amu.Lock()
	defer e.amu.Unlock()
	e.closeDirFilesLocked()
	for _, r := range e.droots {
		r.Close()
	}
	e.droots = nil
}

// writeLocal atomically replaces the file at p with b, provided the file
// still holds expectSHA ("" : provided it is still absent). It returns the
// new file's stat key, or errRace when the local file changed. A new file
// (expectSHA "") is written unnamed and linked into place where the system
// can (createNew); otherwise, and for a replacement, through a temp file
// and a rename.
func (e *Engine) writeLocal(p string, b []byte, expectSHA string) (StatKey, error) {
	r := rel(p)
	dir := path.Dir(r)
	if dir != "." && !e.hasDir(dir) {
		if err := e.root.MkdirAll(dir, 0o755); err != nil {
			return StatKey{}, fmt.Errorf("cannot create directory %s: %w", dir, err)
		}
		e.amu.Lock()
		e.dirs[dir] = true
		e.amu.Unlock()
	}
	d, err := e.dirRoot(dir)
	if err != nil {
		return StatKey{}, err
	}
	name := path.Base(r)
	if expectSHA == "" {
		if key, ok, err := e.createNew(dir, name, b); ok {
			if err == nil {
				e.amu.Lock()
				e.wrote = true
				e.amu.Unlock()
			}
			return key, err
		}
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := tempPrefix + hex.EncodeToString(rnd[:]) + tempSuffix
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return StatKey{}, err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		d.Remove(tmp)
		return StatKey{}, err
	}
	if syncEachFile {
		if err := f.Sync(); err != nil {
			f.Close()
			d.Remove(tmp)
			return StatKey{}, err
		}
	}
	if err := f.Close(); err != nil {
		d.Remove(tmp)
		return StatKey{}, err
	}
	// Re-check the target just before replacing it: never overwrite bytes
	// the planner did not see.
	if expectSHA == "" {
		if _, err := d.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
			d.Remove(tmp)
			return StatKey{}, errRace
		}
	} else if _, err := e.readExpect(p, expectSHA); err != nil {
		d.Remove(tmp)
		return StatKey{}, err
	}
	if err := d.Rename(tmp, name); err != nil {
		d.Remove(tmp)
		return StatKey{}, err
	}
	e.amu.Lock()
	e.wrote = true
	e.amu.Unlock()
	fi, err := d.Lstat(name)
	if err != nil {
		return StatKey{}, err
	}
	return statKey(fi), nil
}

func (e *Engine) removeEmptyParents(p string) {
	for d := path.Dir(rel(p)); d != "." && d != "/"; d = path.Dir(d) {
		if e.root.Remove(d) != nil { // fails unless empty
			return
		}
		e.dropDirRoot(d)
		e.amu.Lock()
		delete(e.dirs, d)
		e.amu.Unlock()
	}
}
