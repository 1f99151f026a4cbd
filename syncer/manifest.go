package syncer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/trovehq/trove"
)

// manifestVersion is the on-disk format of manifest.json.
const manifestVersion = 1

// Manifest is the last state both sides agreed on, per store path, plus the
// local stat cache. It lives in the state directory, outside the synced
// directory, and is replaced atomically. An entry's BaseSHA is only ever set
// after the store and the local file were both seen holding those bytes, so a
// crash at any point leaves a manifest that under-claims, never over-claims:
// the next pass re-derives what happened by comparing hashes.
type Manifest struct {
	Version int               `json:"version"`
	StoreID string            `json:"store_id"`
	Dir     string            `json:"dir"`
	Entries map[string]*Entry `json:"entries"` // key: store path ("/a/b.md")
}

// Entry is the agreed state of one path.
type Entry struct {
	// MemoryID is the memory the path is bound to ("" when none yet).
	MemoryID string `json:"memory_id,omitempty"`
	// BaseSHA is the content hash both sides last agreed on ("" = none). Its
	// bytes, for three-way merges, are in objects/ when this engine uploaded
	// them, else in the memory's version history (Engine.base).
	BaseSHA string `json:"base_sha,omitempty"`
	// Stat cache: the local file's identity when it was hashed to LocalSHA,
	// and the wall-clock time of that hashing.
	Stat     StatKey `json:"stat,omitzero"`
	LocalSHA string  `json:"local_sha,omitempty"`
	HashedAt int64   `json:"hashed_at,omitempty"` // unix ns
	// AbsentSince is when the local file was first seen missing (delete
	// grace period); zero while present.
	AbsentSince time.Time `json:"absent_since,omitzero"`
	// RefusedSHA/RefusedReason remember bytes the store can never accept, so
	// they are reported but not re-sent until they change.
	RefusedSHA    string `json:"refused_sha,omitempty"`
	RefusedReason string `json:"refused_reason,omitempty"`
}

// StatKey identifies one state of a local file for the stat cache.
type StatKey struct {
	Ino     uint64 `json:"ino,omitempty"`
	Size    int64  `json:"size,omitempty"`
	MtimeNs int64  `json:"mtime_ns,omitempty"`
	CtimeNs int64  `json:"ctime_ns,omitempty"`
}

// loadManifest reads stateDir/manifest.json, or returns a new manifest when
// there is none. It returns EINVALID if the manifest belongs to another store
// or directory: a state directory serves exactly one pair.
func loadManifest(stateDir, storeID, dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, "manifest.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return &Manifest{Version: manifestVersion, StoreID: storeID, Dir: dir, Entries: map[string]*Entry{}}, nil
	}
	if err != nil {
		return nil, &trove.Error{Code: trove.EINTERNAL, Message: "cannot read the sync manifest", Err: err}
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, &trove.Error{Code: trove.EINVALID, Message: fmt.Sprintf("sync manifest %s is corrupt", filepath.Join(stateDir, "manifest.json")), Err: err}
	}
	if m.Version != manifestVersion {
		return nil, trove.Errorf(trove.EINVALID, "sync manifest version %d is not supported", m.Version)
	}
	if m.StoreID != storeID || m.Dir != dir {
		return nil, trove.Errorf(trove.EINVALID, "state directory %s belongs to store %s at %s, not %s at %s", stateDir, m.StoreID, m.Dir, storeID, dir)
	}
	if m.Entries == nil {
		m.Entries = map[string]*Entry{}
	}
	return &m, nil
}

// save writes the manifest atomically: temp file, fsync, rename, fsync dir.
func (m *Manifest) save(stateDir string) error {
	st, err := m.stage(stateDir)
	if err != nil {
		return err
	}
	return st.commit(false)
}

// stagedManifest is a manifest written to a temp file in the state
// directory, not yet in place: commit renames it over manifest.json.
type stagedManifest struct{ dir, tmp string }

// stage writes the manifest's bytes to a temp file next to manifest.json,
// without fsync: a flush of the file system that follows (Engine.persist's
// syncfs) can make them durable together with the synced files.
func (m *Manifest) stage(stateDir string) (*stagedManifest, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, &trove.Error{Code: trove.EINTERNAL, Message: "cannot encode the sync manifest", Err: err}
	}
	f, err := os.CreateTemp(stateDir, tempPrefix+"*"+tempSuffix)
	if err != nil {
		return nil, &trove.Error{Code: trove.EINTERNAL, Message: "cannot write the sync manifest", Err: err}
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, &trove.Error{Code: trove.EINTERNAL, Message: "cannot write the sync manifest", Err: err}
	}
	return &stagedManifest{dir: stateDir, tmp: f.Name()}, nil
}

// commit puts the staged manifest in place: fsync of its bytes (unless
// flushed: a flush of its file system since stage made them durable),
// rename over manifest.json, fsync of the state directory.
func (s *stagedManifest) commit(flushed bool) error {
	err := s.put(flushed)
	if err != nil {
		os.Remove(s.tmp)
		return &trove.Error{Code: trove.EINTERNAL, Message: "cannot write the sync manifest", Err: err}
	}
	return nil
}

func (s *stagedManifest) put(flushed bool) error {
	if !flushed {
		f, err := os.OpenFile(s.tmp, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if err := os.Rename(s.tmp, filepath.Join(s.dir, "manifest.json")); err != nil {
		return err
	}
	d, err := os.Open(s.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// abort removes the staged temp file.
func (s *stagedManifest) abort() { os.Remove(s.tmp) }

// writeFileAtomic writes dir/name through a temp file and a rename. With
// durable it fsyncs the file before the rename and the directory after it.
func writeFileAtomic(dir, name string, b []byte, durable bool) error {
	f, err := os.CreateTemp(dir, tempPrefix+"*"+tempSuffix)
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if durable {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	if durable {
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		defer d.Close()
		return d.Sync()
	}
	return nil
}

// objects is the content-addressed store of base contents under
// stateDir/objects/<sha256>. Objects are a cache: a missing or corrupt object
// only turns a three-way merge into a conflict copy.
type objects struct{ dir string }

func (o objects) put(sha string, content []byte) error {
	// Written in place with O_EXCL: an object torn by a crash fails the hash
	// check in get and is rewritten by the next put.
	p := filepath.Join(o.dir, sha)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		if _, ok := o.get(sha); ok {
			return nil
		}
		os.Remove(p)
		f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// get returns the object's bytes, or false when it is missing or corrupt.
func (o objects) get(sha string) ([]byte, bool) {
	if sha == "" {
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(o.dir, sha))
	if err != nil || hashBytes(b) != sha {
		return nil, false
	}
	return b, true
}

// gc removes objects no entry refers to.
func (o objects) gc(keep map[string]bool) {
	ents, err := os.ReadDir(o.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !keep[e.Name()] {
			os.Remove(filepath.Join(o.dir, e.Name()))
		}
	}
}

func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
