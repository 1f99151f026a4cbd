package syncer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/trovehq/trove"
)

// The engine's own temp files, skipped by the scanner.
const (
	tempPrefix = ".trove-sync-"
	tempSuffix = ".tmp"
)

func isTempName(name string) bool {
	return strings.HasPrefix(name, tempPrefix) && strings.HasSuffix(name, tempSuffix)
}

// LocalFile is one regular file found by a scan.
type LocalFile struct {
	SHA  string
	Size int64
	Stat StatKey
	// HashedAt is when SHA was computed (unix ns, wall clock).
	HashedAt int64
	// Problem is why the store can never accept this file ("" when it can):
	// too large, not UTF-8, or an illegal path.
	Problem string
	// Fresh is true when the file was read during this scan (not from the
	// stat cache).
	Fresh bool
}

// Scan is a local directory's state.
type Scan struct {
	Files map[string]LocalFile // key: store path
	// Skipped lists entries not synced (symlinks, special files, unreadable
	// files or directories), with the reason.
	Skipped []Problem
	// Blocked are the store paths, and prefixes ending in "/", the scan could
	// not see as regular files: the engine leaves them alone on both sides,
	// so an unreadable file is never taken for a deleted one.
	Blocked []string
	// Hashed counts files read during the scan.
	Hashed int
	// Temps are the engine's temp files found (relative paths), left by
	// an interrupted write: never synced, removed by the engine.
	Temps []string
	// Normalized are the local names (relative paths) that were not in
	// Unicode NFC and were renamed to their NFC spelling by the scan (see
	// scanner.nfc).
	Normalized []string
}

// Problem is a path the engine will not sync and why.
type Problem struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// scanner walks a directory and hashes its regular files, reusing a cached
// hash when the file's (inode, size, mtime, ctime) are unchanged and the hash
// was taken at least trust after the later of mtime and ctime (so a write in
// the same timestamp tick as the hashing is never missed).
type scanner struct {
	root   *os.Root
	limits trove.Limits
	trust  time.Duration
	cache  map[string]*Entry
}

// maxScanPasses bounds the walks of one scan: a walk that renames a
// directory to its NFC spelling skips it and walks again.
const maxScanPasses = 64

func (s *scanner) scan() (*Scan, error) {
	var normalized []string
	for pass := 1; ; pass++ {
		out, again, err := s.walk()
		if err != nil {
			return nil, err
		}
		normalized = append(normalized, out.Normalized...)
		if !again || pass == maxScanPasses {
			out.Normalized = normalized
			return out, nil
		}
	}
}

// walk is one pass over the directory; again reports that it renamed a
// directory (to its NFC spelling) without walking into it.
func (s *scanner) walk() (_ *Scan, again bool, _ error) {
	out := &Scan{Files: map[string]LocalFile{}}
	err := fs.WalkDir(s.root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if rel == "." {
				return err
			}
			out.block("/"+rel, "cannot read: "+err.Error())
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if rel == "." || isTempName(d.Name()) && !d.IsDir() {
			if rel != "." && d.Type().IsRegular() {
				out.Temps = append(out.Temps, rel)
			}
			return nil
		}
		if !norm.NFC.IsNormalString(rel) {
			nfc, renamed, problem := s.nfc(rel)
			switch {
			case problem != "":
				out.block("/"+rel, problem)
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			case renamed:
				out.Normalized = append(out.Normalized, rel)
				if d.IsDir() {
					again = true
					return fs.SkipDir // walked by the next pass under its new name
				}
			}
			rel = nfc
		}
		if d.IsDir() {
			return nil
		}
		p := "/" + rel
		if !d.Type().IsRegular() {
			what := "special file"
			if d.Type()&fs.ModeSymlink != 0 {
				what = "symbolic link"
			}
			out.block(p, what+" is not synced")
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // vanished during the walk: absent
		}
		key := statKey(info)
		if e := s.cache[p]; e != nil && e.LocalSHA != "" && e.Stat == key && s.trusted(key, e.HashedAt) {
			f := LocalFile{SHA: e.LocalSHA, Size: key.Size, Stat: key, HashedAt: e.HashedAt}
			f.Problem = s.pathProblem(p)
			if f.Problem == "" && e.RefusedSHA == f.SHA {
				f.Problem = e.RefusedReason
			}
			out.Files[p] = f
			return nil
		}
		f, err := s.hash(rel)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // vanished during the walk: absent
		}
		if err != nil {
			out.block(p, "cannot read: "+err.Error())
			return nil
		}
		out.Hashed++
		if pp := s.pathProblem(p); pp != "" {
			f.Problem = pp
		}
		out.Files[p] = f
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	sort.Slice(out.Skipped, func(i, j int) bool { return out.Skipped[i].Path < out.Skipped[j].Path })
	return out, again, nil
}

// nfc handles a local name that is not in Unicode NFC (macOS writes "é" as
// "e" and U+0301, NFD), which store paths must be: the file is synced as
// its NFC spelling. Where the file system takes both spellings for one
// name (macOS's), the NFC name opens the same file and nothing changes;
// elsewhere the entry is renamed to its NFC spelling (renamed), so that the
// engine finds it under the store path. When another file already has the
// NFC spelling, the entry is not synced (problem says why).
func (s *scanner) nfc(rel string) (nfc string, renamed bool, problem string) {
	nfc = norm.NFC.String(rel)
	fi, err := s.root.Lstat(rel)
	if err != nil {
		return "", false, "cannot read: " + err.Error()
	}
	other, err := s.root.Lstat(nfc)
	switch {
	case err == nil && os.SameFile(fi, other):
		return nfc, false, ""
	case err == nil:
		return "", false, fmt.Sprintf("its name is not in Unicode NFC and %s, its NFC spelling, exists too: rename or remove one of them", "/"+nfc)
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, "cannot read: " + err.Error()
	}
	if err := s.root.Rename(rel, nfc); err != nil {
		return "", false, "its name is not in Unicode NFC and renaming it to its NFC spelling failed: " + err.Error()
	}
	return nfc, true, ""
}

// block skips store path p for reason and leaves it, and everything below
// it, alone on both sides.
func (sc *Scan) block(p, reason string) {
	sc.Skipped = append(sc.Skipped, Problem{Path: p, Reason: reason})
	sc.Blocked = append(sc.Blocked, p, p+"/")
}

// trusted reports whether a hash taken at hashedAt may stand for key.
func (s *scanner) trusted(key StatKey, hashedAt int64) bool {
	last := max(key.MtimeNs, key.CtimeNs)
	return hashedAt-last >= int64(s.trust)
}

// hash reads rel and describes it.
func (s *scanner) hash(rel string) (LocalFile, error) {
	b, key, err := readLocal(s.root, rel)
	if err != nil {
		return LocalFile{}, err
	}
	f := LocalFile{SHA: hashBytes(b), Size: int64(len(b)), Stat: key, HashedAt: time.Now().UnixNano(), Fresh: true}
	f.Problem = contentProblem(b, s.limits)
	return f, nil
}

// blocked reports whether store path p is covered by one of the blocked
// paths or prefixes.
func (sc *Scan) blocked(p string) bool {
	for _, b := range sc.Blocked {
		if p == b || (strings.HasSuffix(b, "/") && strings.HasPrefix(p, b)) {
			return true
		}
	}
	return false
}

// readLocal reads a regular file below root without following a symlink at
// the leaf, and returns its bytes with the stat key of the opened file.
func readLocal(root *os.Root, rel string) ([]byte, StatKey, error) {
	fi, err := root.Lstat(rel)
	if err != nil {
		return nil, StatKey{}, err
	}
	if !fi.Mode().IsRegular() {
		return nil, StatKey{}, fmt.Errorf("%s is not a regular file", rel)
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, StatKey{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, StatKey{}, err
	}
	if !info.Mode().IsRegular() {
		return nil, StatKey{}, fmt.Errorf("%s is not a regular file", rel)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, StatKey{}, err
	}
	return b, statKey(info), nil
}

// contentProblem says why the store would refuse b, or "".
func contentProblem(b []byte, l trove.Limits) string {
	if len(b) > l.MaxContentBytes {
		return fmt.Sprintf("file is %d bytes; the store accepts at most %d bytes", len(b), l.MaxContentBytes)
	}
	if !utf8.Valid(b) {
		return "file is not valid UTF-8 text (binary files are not synced)"
	}
	return ""
}

// pathProblem says why the store would refuse path p, or "".
func (s *scanner) pathProblem(p string) string {
	if err := trove.ValidatePath(p, s.limits.MaxPathBytes, s.limits.MaxPathSegments); err != nil {
		return "illegal store path: " + trove.ErrorMessage(err)
	}
	return ""
}
