package syncer

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storetree"
)

// merge handles a change on both sides.
func (e *Engine) merge(ctx context.Context, a Action) error {
	local, err := e.readExpect(a.Path, a.LocalSHA)
	if err != nil {
		return err
	}
	m, err := e.fetch(ctx, a.MemoryID)
	if err != nil {
		return err
	}
	remote := []byte(*m.Content)
	if base, ok := e.base(ctx, m.ID, a.BaseSHA); ok {
		if merged, clean := Merge3(base, local, remote); clean && contentProblem(merged, e.o.Limits) == "" {
			s := string(merged)
			nm, err := e.tree.Update(ctx, m.ID, trove.UpdateMemoryParams{Content: &s, PreconditionSHA256: m.SHA256})
			if isRace(err) {
				return errRace
			}
			if err != nil {
				return err
			}
			key, err := e.writeLocal(a.Path, merged, a.LocalSHA)
			if err != nil {
				// The store has the merge; the local file moved on. The next
				// round merges again against the new remote.
				return err
			}
			e.agree(a.Path, nm.ID, nm.SHA256, merged, &key)
			e.rep.Merged = append(e.rep.Merged, a.Path)
			e.log.Info("merged concurrent changes", "path", a.Path)
			return nil
		}
	}
	return e.conflict(ctx, a, local, m)
}

// baseVersionPages bounds how many pages of a memory's history (newest
// first) base reads looking for the base.
const baseVersionPages = 5

// base returns the bytes both sides last agreed on for memory id (sha):
// the base object when one was kept (what this engine uploaded), else the
// memory's version holding them in the store's history (what it
// downloaded). false when neither has them (redacted, pruned, older than
// baseVersionPages pages): the merge becomes a conflict copy.
func (e *Engine) base(ctx context.Context, id, sha string) ([]byte, bool) {
	if b, ok := e.objs.get(sha); ok {
		return b, true
	}
	if sha == "" {
		return nil, false
	}
	cursor := ""
	for range baseVersionPages {
		pg, err := e.o.Services.ListVersions(ctx, e.o.StoreID, trove.ListVersionsParams{MemoryID: id, View: trove.ViewFull, Limit: e.o.Limits.MaxFullPageSize, Cursor: cursor})
		if err != nil {
			return nil, false
		}
		for _, v := range pg.Data {
			if v.SHA256 != nil && *v.SHA256 == sha && v.Content != nil {
				if b := []byte(*v.Content); hashBytes(b) == sha {
					return b, true
				}
			}
		}
		if pg.NextPage == "" {
			return nil, false
		}
		cursor = pg.NextPage
	}
	return nil, false
}

// conflict keeps the store's version m at a.Path and saves the local bytes
// as a conflict copy, locally first (so they survive a crash) and then in
// the store.
func (e *Engine) conflict(ctx context.Context, a Action, local []byte, m *trove.Memory) error {
	copyPath, localHas, remoteHas := e.existingCopy(a.Path, a.LocalSHA)
	if copyPath == "" {
		copyPath = storetree.ConflictName(a.Path, e.tag(), e.o.Now(), func(p string) bool { return e.taken[p] })
	}
	e.taken[copyPath] = true
	c := Conflict{Path: a.Path, CopyPath: copyPath}
	var key StatKey
	if !localHas {
		k, err := e.writeLocal(copyPath, local, "")
		if err != nil {
			return fmt.Errorf("cannot save the conflict copy %s: %w", copyPath, err)
		}
		key = k
	}
	ce := e.entry(copyPath)
	if !localHas {
		ce.Stat, ce.LocalSHA, ce.HashedAt = key, a.LocalSHA, time.Now().UnixNano()
	}
	e.dirty = true
	if remoteHas {
		c.InStore = true
		r := e.remote[copyPath]
		e.agree(copyPath, r.ID, r.SHA, local, nil)
	} else if prob := contentProblem(local, e.o.Limits); prob != "" {
		ce.RefusedSHA, ce.RefusedReason = a.LocalSHA, prob
	} else {
		cm, err := e.tree.Create(ctx, copyPath, string(local))
		if err == nil {
			c.InStore = true
			e.agree(copyPath, cm.ID, cm.SHA256, local, nil)
		} else {
			// Kept locally; the next pass retries it as a new local file.
			e.rep.Errors = append(e.rep.Errors, Problem{Path: copyPath, Reason: "conflict copy kept locally only: " + errText(err)})
		}
	}
	remote := []byte(*m.Content)
	k, err := e.writeLocal(a.Path, remote, a.LocalSHA)
	if err != nil {
		return err
	}
	e.agree(a.Path, m.ID, m.SHA256, remote, &k)
	e.rep.Conflicts = append(e.rep.Conflicts, c)
	e.log.Warn("sync conflict: the store's version was kept; the local version was saved as a conflict copy", "path", a.Path, "copy", copyPath, "copy_in_store", c.InStore)
	return nil
}

// existingCopy finds a conflict copy of p already holding sha (from an
// interrupted earlier pass), locally or in the store.
func (e *Engine) existingCopy(p, sha string) (string, bool, bool) {
	var cands []string
	for q, f := range e.scan.Files {
		if f.SHA == sha && storetree.IsConflictCopyOf(p, q) {
			cands = append(cands, q)
		}
	}
	for q, r := range e.remote {
		if r.SHA == sha && storetree.IsConflictCopyOf(p, q) {
			cands = append(cands, q)
		}
	}
	if len(cands) == 0 {
		return "", false, false
	}
	sort.Strings(cands)
	q := cands[0]
	lf, lok := e.scan.Files[q]
	rf, rok := e.remote[q]
	return q, lok && lf.SHA == sha, rok && rf.SHA == sha
}

func (e *Engine) tag() string {
	id := strings.TrimPrefix(e.o.SessionID, trove.PrefixSession)
	if id == "" {
		return "local"
	}
	if len(id) > 8 {
		id = id[:8]
	}
	return id
}
