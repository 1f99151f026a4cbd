package storefs

import (
	"context"
	"slices"
	"strings"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
)

// Mux is a memtool.FS over several stores, each under its own top-level
// directory (/memories/<slug>/…), as a session's stores are mounted. The
// mount directories themselves cannot be created, deleted or renamed, and
// rename does not move memories between stores; those calls return a
// *memtool.Refusal (which the engine shows to the model).
type Mux struct {
	mounts map[string]*FS
	slugs  []string
}

var _ memtool.CopyFS = (*Mux)(nil)

// NewMux returns a Mux with one FS per slug. Slugs must be valid single path
// names (trove.Slug output is).
func NewMux(mounts map[string]*FS) *Mux {
	m := &Mux{mounts: mounts}
	for s := range mounts {
		m.slugs = append(m.slugs, s)
	}
	slices.Sort(m.slugs)
	return m
}

// Slugs returns the mount names in order.
func (m *Mux) Slugs() []string { return m.slugs }

// Mount returns the FS mounted at slug, or nil.
func (m *Mux) Mount(slug string) *FS { return m.mounts[slug] }

// split returns the mount of name and the rest of the name inside it; fs is
// nil for the root or an unknown first segment.
func (m *Mux) split(name string) (slug string, fs *FS, rest string) {
	slug, rest, _ = strings.Cut(name, "/")
	return slug, m.mounts[slug], rest
}

func refuse(format string, args ...any) error {
	err := trove.Errorf(trove.EINVALID, format, args...)
	return &memtool.Refusal{By: refusedBy, Message: err.Message, Err: &storeError{op: "mux", err: err}}
}

// Stat implements memtool.FS.
func (m *Mux) Stat(ctx context.Context, name string) (memtool.Info, error) {
	if name == "" {
		return memtool.Info{Kind: memtool.KindDir}, nil
	}
	slug, fs, rest := m.split(name)
	if fs == nil {
		return memtool.Info{}, memtool.ErrNotExist
	}
	if rest == "" {
		return memtool.Info{Name: slug, Kind: memtool.KindDir}, nil
	}
	info, err := fs.Stat(ctx, rest)
	info.Name = name
	return info, err
}

// Copy implements memtool.CopyFS: the copy the mount's FS keeps.
func (m *Mux) Copy(name string) ([]byte, memtool.Version, bool) {
	_, fs, rest := m.split(name)
	if fs == nil || rest == "" {
		return nil, "", false
	}
	return fs.Copy(rest)
}

// ReadDir implements memtool.FS.
func (m *Mux) ReadDir(ctx context.Context, name string) ([]memtool.Info, error) {
	if name == "" {
		out := make([]memtool.Info, 0, len(m.slugs))
		for _, s := range m.slugs {
			out = append(out, memtool.Info{Name: s, Kind: memtool.KindDir})
		}
		return out, nil
	}
	_, fs, rest := m.split(name)
	if fs == nil {
		return nil, memtool.ErrNotExist
	}
	return fs.ReadDir(ctx, rest)
}

// ReadFile implements memtool.FS.
func (m *Mux) ReadFile(ctx context.Context, name string, maxBytes int64) ([]byte, memtool.Version, error) {
	if name == "" {
		return nil, "", memtool.ErrIsDir
	}
	_, fs, rest := m.split(name)
	switch {
	case fs == nil:
		return nil, "", memtool.ErrNotExist
	case rest == "":
		return nil, "", memtool.ErrIsDir
	}
	return fs.ReadFile(ctx, rest, maxBytes)
}

// WriteFile implements memtool.FS. Files can only be written inside a
// mount.
func (m *Mux) WriteFile(ctx context.Context, name string, data []byte, ifMatch memtool.Version) (memtool.Version, error) {
	_, fs, rest := m.split(name)
	switch {
	case name == "" || (fs != nil && rest == ""):
		if ifMatch == "" {
			return "", memtool.ErrExist
		}
		return "", memtool.ErrIsDir
	case fs == nil:
		return "", refuse("files can only be written inside a store's directory: %s", m.mountList())
	}
	return fs.WriteFile(ctx, rest, data, ifMatch)
}

// Remove implements memtool.FS. A mount directory cannot be removed.
func (m *Mux) Remove(ctx context.Context, name string) error {
	_, fs, rest := m.split(name)
	switch {
	case fs == nil:
		return memtool.ErrNotExist
	case rest == "":
		return refuse("a store's directory cannot be deleted; delete the files inside it instead")
	}
	return fs.Remove(ctx, rest)
}

// Rename implements memtool.FS within one mount.
func (m *Mux) Rename(ctx context.Context, oldname, newname string) error {
	oslug, ofs, orest := m.split(oldname)
	ns, nfs, nrest := m.split(newname)
	switch {
	case ofs == nil:
		return memtool.ErrNotExist
	case orest == "":
		return refuse("a store's directory cannot be renamed")
	case nfs != nil && nrest == "":
		return memtool.ErrExist
	case nfs == nil:
		return refuse("files can only be moved inside a store's directory: %s", m.mountList())
	case oslug != ns:
		return refuse("memories cannot be moved between stores; create the file in the other store and delete this one")
	}
	return ofs.Rename(ctx, orest, nrest)
}

func (m *Mux) mountList() string {
	var parts []string
	for _, s := range m.slugs {
		parts = append(parts, memtool.RootPath+"/"+s+"/")
	}
	return strings.Join(parts, ", ")
}
