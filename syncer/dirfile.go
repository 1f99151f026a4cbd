package syncer

import "os"

// dirFile returns an open handle on directory d (relative to the synced
// directory, "." for itself) for system calls made relative to it
// (createNew), opened once per round through the directory's root
// (dirRoot), and closed with the round's roots (closeDirRoots) or when the
// round removes the directory (dropDirRoot).
func (e *Engine) dirFile(d string) (*os.File, error) {
	e.amu.Lock()
	f := e.dfiles[d]
	e.amu.Unlock()
	if f != nil {
		return f, nil
	}
	r, err := e.dirRoot(d)
	if err != nil {
		return nil, err
	}
	f, err = r.Open(".")
	if err != nil {
		return nil, err
	}
	e.amu.Lock()
	defer e.amu.Unlock()
	if old := e.dfiles[d]; old != nil {
		f.Close()
		return old, nil
	}
	if e.dfiles == nil {
		e.dfiles = map[string]*os.File{}
	}
	e.dfiles[d] = f
	return f, nil
}

// closeDirFileLocked closes the handle dirFile opened on d, if any (amu
// held).
func (e *Engine) closeDirFileLocked(d string) {
	if f := e.dfiles[d]; f != nil {
		f.Close()
		delete(e.dfiles, d)
	}
}

// closeDirFilesLocked closes every handle dirFile opened (amu held).
func (e *Engine) closeDirFilesLocked() {
	for _, f := range e.dfiles {
		f.Close()
	}
	e.dfiles = nil
}
