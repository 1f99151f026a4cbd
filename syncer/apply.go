package syncer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/trovehq/trove"
)

// agree records that p holds sha on both sides, bound to memory id.
// key is the local file's stat when it held sha, hashed at hashedAt (unix ns;
// 0 means now); nil leaves the stat cache alone.
func (e *Engine) agree(p, id, sha string, content []byte, key *StatKey, hashedAt ...int64) {
	if content != nil {
		if err := e.objs.put(sha, content); err != nil {
			e.log.Warn("cannot keep the base object", "path", p, "err", err)
		}
	}
	e.amu.Lock()
	defer e.amu.Unlock()
	en := e.entry(p)
	en.MemoryID, en.BaseSHA = id, sha
	en.AbsentSince = time.Time{}
	en.RefusedSHA, en.RefusedReason = "", ""
	if key != nil {
		en.Stat, en.LocalSHA, en.HashedAt = *key, sha, time.Now().UnixNano()
		if len(hashedAt) > 0 && hashedAt[0] != 0 {
			en.HashedAt = hashedAt[0]
		}
	}
	e.dirty = true
}

// agreeScanned is agree for the local file at p holding b as this round's
// scan saw it.
func (e *Engine) agreeScanned(p, id, sha string, b []byte) {
	f := e.scan.Files[p]
	e.agree(p, id, sha, b, &f.Stat, f.HashedAt)
}

func isRace(err error) bool {
	switch trove.ErrorCode(err) {
	case trove.EPRECONDITION, trove.ENOTFOUND:
		return true
	}
	return false
}

func (e *Engine) apply(ctx context.Context, a Action) error {
	switch a.Kind {
	case KindMarkAbsent:
		en := e.entry(a.Path)
		en.AbsentSince = a.Since
		e.dirty = true
		return nil
	case KindForget:
		delete(e.man.Entries, a.Path)
		e.dirty = true
		return nil
	case KindRefuse:
		en := e.entry(a.Path)
		en.RefusedSHA, en.RefusedReason = a.LocalSHA, a.Reason
		e.dirty = true
		e.log.Warn("file not synced: the store cannot accept it; it stays local", "path", a.Path, "reason", a.Reason)
		return nil
	case KindAdopt:
		b, err := e.readExpect(a.Path, a.LocalSHA)
		if err != nil {
			return err
		}
		e.agreeScanned(a.Path, a.MemoryID, a.LocalSHA, b)
		return nil
	case KindDownload:
		return e.download(ctx, a)
	case KindUpload:
		b, err := e.readExpect(a.Path, a.LocalSHA)
		if err != nil {
			return err
		}
		s := string(b)
		m, err := e.tree.Update(ctx, a.MemoryID, trove.UpdateMemoryParams{Content: &s, PreconditionSHA256: a.RemoteSHA})
		if isRace(err) {
			return errRace
		}
		if err != nil {
			return err
		}
		e.agreeScanned(a.Path, m.ID, m.SHA256, b)
		return nil
	case KindCreate:
		b, err := e.readExpect(a.Path, a.LocalSHA)
		if err != nil {
			return err
		}
		m, err := e.tree.Create(ctx, a.Path, string(b))
		if err != nil {
			var te *trove.Error
			if errors.As(err, &te) && te.Code == trove.EPATHCONFLICT && (te.ConflictingPath == "" || te.ConflictingPath == a.Path) {
				return errRace // created concurrently: re-plan as both-created
			}
			return err
		}
		e.agreeScanned(a.Path, m.ID, m.SHA256, b)
		return nil
	case KindDeleteLocal:
		return e.deleteLocal(a)
	case KindDeleteRemote:
		if _, err := e.root.Lstat(rel(a.Path)); !errors.Is(err, fs.ErrNotExist) {
			return errRace // came back
		}
		err := e.tree.Delete(ctx, a.MemoryID, a.BaseSHA)
		switch trove.ErrorCode(err) {
		case "", trove.ENOTFOUND:
		case trove.EPRECONDITION:
			return errRace // changed remotely: the next round restores it
		default:
			return err
		}
		delete(e.man.Entries, a.Path)
		e.dirty = true
		return nil
	case KindRename:
		if _, err := e.root.Lstat(rel(a.Path)); !errors.Is(err, fs.ErrNotExist) {
			return errRace
		}
		b, err := e.readExpect(a.To, a.LocalSHA)
		if err != nil {
			return err
		}
		to := a.To
		m, err := e.tree.Update(ctx, a.MemoryID, trove.UpdateMemoryParams{Path: &to, PreconditionSHA256: a.BaseSHA})
		if isRace(err) || trove.ErrorCode(err) == trove.EPATHCONFLICT {
			return errRace
		}
		if err != nil {
			return err
		}
		delete(e.man.Entries, a.Path)
		e.agreeScanned(a.To, m.ID, m.SHA256, b)
		return nil
	case KindMerge:
		return e.merge(ctx, a)
	case KindConflict:
		b, err := e.readExpect(a.Path, a.LocalSHA)
		if err != nil {
			return err
		}
		m, err := e.fetch(ctx, a.MemoryID)
		if err != nil {
			return err
		}
		return e.conflict(ctx, a, b, m)
	case KindRestore:
		return e.restore(ctx, a)
	}
	return fmt.Errorf("unknown action %q", a.Kind)
}

// restore (read-only stores) moves the local bytes to quarantine and puts the
// store's version back.
func (e *Engine) restore(ctx context.Context, a Action) error {
	local, err := e.readExpect(a.Path, a.LocalSHA)
	if err != nil {
		return err
	}
	qdir := filepath.Join(e.o.StateDir, QuarantineDir, e.o.Now().UTC().Format("20060102T150405Z"))
	first := filepath.Join(qdir, filepath.FromSlash(rel(a.Path)))
	qpath := first
	for i := 2; ; i++ { // never overwrite an earlier quarantined copy
		if _, err := os.Lstat(qpath); errors.Is(err, fs.ErrNotExist) {
			break
		}
		qpath = first + "." + strconv.Itoa(i)
	}
	if err := os.MkdirAll(filepath.Dir(qpath), 0o755); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Dir(qpath), filepath.Base(qpath), local, true); err != nil {
		return fmt.Errorf("cannot quarantine %s: %w", a.Path, err)
	}
	e.rep.Quarantined = append(e.rep.Quarantined, Problem{Path: a.Path, Reason: a.Reason + " (local bytes saved at " + qpath + ")"})
	e.log.Warn("read-only store: local change moved to quarantine", "path", a.Path, "quarantine", qpath)
	if a.RemoteSHA == "" {
		return e.deleteLocal(a)
	}
	return e.download(ctx, a)
}

// download writes the store's version of a.MemoryID at a.Path, provided the
// local file still holds a.LocalSHA, and records the agreement.
func (e *Engine) download(ctx context.Context, a Action) error {
	m, err := e.fetch(ctx, a.MemoryID)
	if err != nil {
		return err
	}
	content := []byte(*m.Content)
	key, err := e.writeLocal(a.Path, content, a.LocalSHA)
	if err != nil {
		return err
	}
	// No base object: the store holds these bytes as a version, where a
	// later merge finds them (base); a download of many memories makes
	// one file per memory, not two.
	e.agree(a.Path, m.ID, m.SHA256, nil, &key)
	return nil
}

// deleteLocal removes the local file at a.Path, provided it still holds
// a.LocalSHA, with the parents it leaves empty, and forgets the path.
func (e *Engine) deleteLocal(a Action) error {
	if _, err := e.readExpect(a.Path, a.LocalSHA); err != nil {
		return err
	}
	if err := e.root.Remove(rel(a.Path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	e.wrote = true
	e.removeEmptyParents(a.Path)
	delete(e.man.Entries, a.Path)
	e.dirty = true
	return nil
}
