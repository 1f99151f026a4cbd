package memtool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"time"
)

// MemFS is an in-memory FS. Like a memory store, it holds only files;
// directories exist only as prefixes of file names (so a directory vanishes
// with its last file). It records access times (Toucher). The zero value is
// not usable; call NewMemFS.
type MemFS struct {
	mu    sync.RWMutex
	files map[string]*memFile
	now   func() time.Time
}

type memFile struct {
	data     []byte
	version  Version
	accessed time.Time
}

// NewMemFS returns an empty in-memory FS. now stamps the access time of
// files written directly (nil means time.Now); the engine sets its own via
// Touch.
func NewMemFS(now func() time.Time) *MemFS {
	if now == nil {
		now = time.Now
	}
	return &MemFS{files: map[string]*memFile{}, now: now}
}

func contentVersion(data []byte) Version {
	sum := sha256.Sum256(data)
	return Version(hex.EncodeToString(sum[:]))
}

// statLocked returns the kind of name: a file, a directory (the root or a
// prefix of a file name), or an error.
func (m *MemFS) statLocked(name string) (Kind, error) {
	if name == "" {
		return KindDir, nil
	}
	for d := parentOf(name); d != ""; d = parentOf(d) {
		if _, ok := m.files[d]; ok {
			return 0, ErrNotDir
		}
	}
	if _, ok := m.files[name]; ok {
		return KindFile, nil
	}
	prefix := name + "/"
	for k := range m.files {
		if strings.HasPrefix(k, prefix) {
			return KindDir, nil
		}
	}
	return 0, ErrNotExist
}

// Stat implements FS.
func (m *MemFS) Stat(_ context.Context, name string) (Info, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	k, err := m.statLocked(name)
	if err != nil {
		return Info{}, err
	}
	info := Info{Name: name, Kind: k}
	if f := m.files[name]; k == KindFile {
		info.Size, info.Accessed = int64(len(f.data)), f.accessed
	}
	return info, nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(_ context.Context, name string) ([]Info, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	k, err := m.statLocked(name)
	if err != nil {
		return nil, err
	}
	if k != KindDir {
		return nil, ErrNotDir
	}
	prefix := ""
	if name != "" {
		prefix = name + "/"
	}
	seen := map[string]bool{}
	var out []Info
	for key, f := range m.files {
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		rest := key[len(prefix):]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			if d := rest[:i]; !seen[d] {
				seen[d] = true
				out = append(out, Info{Name: d, Kind: KindDir})
			}
			continue
		}
		out = append(out, Info{Name: rest, Kind: KindFile, Size: int64(len(f.data)), Accessed: f.accessed})
	}
	return out, nil
}

// ReadFile implements FS.
func (m *MemFS) ReadFile(_ context.Context, name string, maxBytes int64) ([]byte, Version, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	k, err := m.statLocked(name)
	if err != nil {
		return nil, "", err
	}
	if k == KindDir {
		return nil, "", ErrIsDir
	}
	f := m.files[name]
	if maxBytes >= 0 && int64(len(f.data)) > maxBytes {
		return nil, "", ErrTooLarge
	}
	return append([]byte(nil), f.data...), f.version, nil
}

// WriteFile implements FS.
func (m *MemFS) WriteFile(_ context.Context, name string, data []byte, ifMatch Version) (Version, error) {
	if name == "" {
		return "", ErrExist
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k, err := m.statLocked(name)
	switch {
	case ifMatch == "" && err == nil:
		return "", ErrExist
	case ifMatch == "" && err != ErrNotExist:
		return "", err
	case ifMatch != "" && err == nil && k == KindDir:
		return "", ErrIsDir
	case ifMatch != "" && (err != nil || m.files[name].version != ifMatch):
		return "", ErrConflict
	}
	v := contentVersion(data)
	m.files[name] = &memFile{data: append([]byte(nil), data...), version: v, accessed: m.now()}
	return v, nil
}

// Remove implements FS.
func (m *MemFS) Remove(_ context.Context, name string) error {
	if name == "" {
		return ErrExist
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k, err := m.statLocked(name)
	if err != nil {
		return err
	}
	if k == KindFile {
		delete(m.files, name)
		return nil
	}
	for key := range m.files {
		if strings.HasPrefix(key, name+"/") {
			delete(m.files, key)
		}
	}
	return nil
}

// Rename implements FS.
func (m *MemFS) Rename(_ context.Context, oldname, newname string) error {
	if oldname == "" || newname == "" || strings.HasPrefix(newname, oldname+"/") {
		return ErrExist
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k, err := m.statLocked(oldname)
	if err != nil {
		return err
	}
	switch _, err := m.statLocked(newname); {
	case err == nil:
		return ErrExist
	case err != ErrNotExist:
		return err
	}
	if k == KindFile {
		m.files[newname] = m.files[oldname]
		delete(m.files, oldname)
		return nil
	}
	moved := map[string]*memFile{}
	for key, f := range m.files {
		if strings.HasPrefix(key, oldname+"/") {
			moved[newname+key[len(oldname):]] = f
			delete(m.files, key)
		}
	}
	for key, f := range moved {
		m.files[key] = f
	}
	return nil
}

// Touch implements Toucher. Touching a directory is a no-op.
func (m *MemFS) Touch(_ context.Context, name string, t time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.statLocked(name); err != nil {
		return err
	}
	if f, ok := m.files[name]; ok {
		f.accessed = t
	}
	return nil
}
