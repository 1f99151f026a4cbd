package core

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// DiffStore compares a store at two moments (trove.HistoryService): the
// first page of DiffStorePage.
func (s *Service) DiffStore(ctx context.Context, storeID string, from, to trove.Moment) (*trove.StoreDiff, error) {
	return s.DiffStorePage(ctx, storeID, trove.DiffParams{From: from, To: to})
}

// kindDiff is the cursor kind of a store diff: the pinned moments (S,
// "from:to") and the last memory's diffKey (F).
const kindDiff = "d"

// DiffStorePage is one page of the comparison of a store at two moments
// (trove.HistoryService): every memory added, removed, moved or changed
// between them, in diffKey order, with a unified diff of its content
// unless a side is redacted. What a page holds is bounded (p.Limit
// memories, patches up to trove.MaxDiffPageBytes, see trove.StoreDiff):
// the memories' metadata at both moments is read whole, contents only
// for the page's memories. ENOTFOUND and EINVALID as in ListMemoriesAsOf;
// EINVALID for a bad limit or cursor.
func (s *Service) DiffStorePage(ctx context.Context, storeID string, p trove.DiffParams) (*trove.StoreDiff, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	limit := p.Limit
	switch {
	case limit == 0:
		limit = trove.DefaultDiffPageSize
	case limit < 1 || limit > trove.MaxDiffPageSize:
		return nil, trove.Errorf(trove.EINVALID, "limit must be between 1 and %d, got %d", trove.MaxDiffPageSize, limit)
	}
	after, pinned := "", false
	out := &trove.StoreDiff{Changes: []trove.MemoryDiff{}}
	if p.Cursor != "" {
		c, err := decodeCursor(p.Cursor, kindDiff)
		if err != nil {
			return nil, err
		}
		if _, err := fmt.Sscanf(c.S, "%d:%d", &out.FromSeq, &out.ToSeq); err != nil || out.FromSeq < 0 || out.ToSeq < 0 || c.F == "" {
			return nil, errBadCursor()
		}
		after, pinned = c.F, true
	}
	err = s.read(ctx, "DiffStore", func(tx storage.Tx) error {
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		if !pinned {
			if out.FromSeq, err = resolveMoment(ctx, tx, storeID, p.From); err != nil {
				return err
			}
			if out.ToSeq, err = resolveMoment(ctx, tx, storeID, p.To); err != nil {
				return err
			}
		}
		a, b, err := diffSides(ctx, tx, storeID, out.FromSeq, out.ToSeq)
		if err != nil {
			return err
		}
		var more bool
		out.Changes, more, err = diffVersions(ctx, tx, storeID, a, b, out.FromSeq, out.ToSeq, after, limit)
		if more {
			out.NextPage = encodeCursor(cursorJSON{K: kindDiff, S: fmt.Sprintf("%d:%d", out.FromSeq, out.ToSeq), F: diffKey(out.Changes[len(out.Changes)-1])})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// diffScanLimit bounds the versions between two moments that diffSides
// reads to find the memories they touched; past it, the two whole as-of
// states are cheaper than a point read per touched memory.
const diffScanLimit = 2000

// diffSides returns the two sides of a diff between fromSeq and toSeq: the
// versions current at each moment of the memories that a version between
// them touched (a memory no version touched is the same on both sides, so
// diffVersions would skip it). The cost grows with the changes between the
// moments, not with the store: one VersionScan of that range and two
// point reads (VersionAsOf of one memory) per touched memory. Over
// diffScanLimit versions apart, it reads both whole states instead.
func diffSides(ctx context.Context, tx storage.Tx, storeID string, fromSeq, toSeq int64) (a, b []trove.MemoryVersion, err error) {
	lo, hi := min(fromSeq, toSeq), max(fromSeq, toSeq)
	between, err := tx.VersionScan(ctx, storage.VersionScanParams{StoreID: storeID, AfterSeq: lo, UpToSeq: hi, Limit: diffScanLimit + 1})
	if err != nil {
		return nil, nil, err
	}
	if len(between) > diffScanLimit {
		if a, err = tx.VersionAsOf(ctx, storage.VersionAsOfParams{StoreID: storeID, Seq: fromSeq}); err != nil {
			return nil, nil, err
		}
		b, err = tx.VersionAsOf(ctx, storage.VersionAsOfParams{StoreID: storeID, Seq: toSeq})
		return a, b, err
	}
	seen := make(map[string]bool, len(between))
	a, b = []trove.MemoryVersion{}, []trove.MemoryVersion{}
	for _, v := range between {
		if seen[v.MemoryID] {
			continue
		}
		seen[v.MemoryID] = true
		for _, side := range []struct {
			seq int64
			out *[]trove.MemoryVersion
		}{{fromSeq, &a}, {toSeq, &b}} {
			if side.seq == 0 {
				continue
			}
			vs, err := tx.VersionAsOf(ctx, storage.VersionAsOfParams{StoreID: storeID, Seq: side.seq, MemoryID: v.MemoryID})
			if err != nil {
				return nil, nil, err
			}
			*side.out = append(*side.out, vs...)
		}
	}
	return a, b, nil
}

// diffVersions compares two as-of states of a store: the memories whose
// diffKey is after `after`, in that order, at most limit of them and
// patches up to trove.MaxDiffPageBytes; more reports whether some are left.
func diffVersions(ctx context.Context, tx storage.Tx, storeID string, a, b []trove.MemoryVersion, fromSeq, toSeq int64, after string, limit int) (_ []trove.MemoryDiff, more bool, _ error) {
	before := make(map[string]*trove.MemoryVersion, len(a))
	for i := range a {
		before[a[i].MemoryID] = &a[i]
	}
	afterAt := make(map[string]*trove.MemoryVersion, len(b))
	for i := range b {
		afterAt[b[i].MemoryID] = &b[i]
	}
	content := func(v *trove.MemoryVersion) (string, error) {
		if v == nil {
			return "", nil
		}
		full, err := tx.VersionGet(ctx, storeID, v.ID, true)
		if err != nil || full.Content == nil {
			return "", err
		}
		return *full.Content, nil
	}
	label := func(v *trove.MemoryVersion, seq int64) string {
		if v == nil || v.Path == nil {
			return "/dev/null"
		}
		return fmt.Sprintf("%s@%d", *v.Path, seq)
	}
	ids := slices.Sorted(maps.Keys(before))
	for id := range afterAt {
		if _, ok := before[id]; !ok {
			ids = append(ids, id)
		}
	}
	// First the metadata of every difference (no content), in order.
	all := []trove.MemoryDiff{}
	for _, id := range ids {
		x, y := before[id], afterAt[id]
		if x != nil && y != nil && x.ID == y.ID {
			continue
		}
		d := trove.MemoryDiff{MemoryID: id}
		switch {
		case x == nil:
			d.Kind = trove.DiffAdded
		case y == nil:
			d.Kind = trove.DiffRemoved
		case !ptrEqual(x.Path, y.Path):
			d.Kind = trove.DiffMoved
		default:
			d.Kind = trove.DiffChanged
		}
		if x != nil {
			d.From = versionView(x, trove.ViewBasic)
		}
		if y != nil {
			d.To = versionView(y, trove.ViewBasic)
		}
		d.Redacted = (x != nil && x.RedactedAt != nil) || (y != nil && y.RedactedAt != nil)
		if d.Redacted {
			d.ContentChanged = true
		} else {
			d.ContentChanged = x == nil || y == nil || !ptrEqual(x.SHA256, y.SHA256)
		}
		if after != "" && diffKey(d) <= after {
			continue
		}
		all = append(all, d)
	}
	slices.SortFunc(all, func(p, q trove.MemoryDiff) int {
		return strings.Compare(diffKey(p), diffKey(q))
	})
	// Then the page: contents read and patched for its memories only.
	out := []trove.MemoryDiff{}
	bytes := 0
	for i := range all {
		if len(out) == limit || (len(out) > 0 && bytes > trove.MaxDiffPageBytes) {
			return out, true, nil
		}
		d := all[i]
		all[i] = trove.MemoryDiff{} // what the page took is not kept twice
		if d.ContentChanged && !d.Redacted {
			x, y := before[d.MemoryID], afterAt[d.MemoryID]
			old, err := content(x)
			if err != nil {
				return nil, false, err
			}
			new, err := content(y)
			if err != nil {
				return nil, false, err
			}
			d.Patch = udiff.Unified(label(x, fromSeq), label(y, toSeq), old, new)
			bytes += len(d.Patch)
		}
		out = append(out, d)
	}
	return out, false, nil
}

// diffKey orders a diff by the memory's path at To, else at From.
func diffKey(d trove.MemoryDiff) string {
	for _, v := range []*trove.MemoryVersion{d.To, d.From} {
		if v != nil && v.Path != nil {
			return *v.Path + "\x00" + d.MemoryID
		}
	}
	return "\x00" + d.MemoryID
}

func ptrEqual[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
