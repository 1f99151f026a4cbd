package core

import (
	"context"
	"strconv"
	"strings"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

var _ trove.HistoryService = (*Service)(nil)

// asOfMaxPage is the largest page of an as-of listing (basic view; a
// full view is capped at MaxFullPageSize as elsewhere). Every page is one
// pass over the store's history up to the moment (the newest version of
// each memory, then sorted by path), so whole-store listings take large
// pages.
const asOfMaxPage = 1000

// kindAsOf is the cursor kind of an as-of listing:
// {"v":1,"k":"a","t":"<seq>","f":"<path>","i":"<memory id>"}.
const kindAsOf = "a"

// resolveMoment returns the Seq that m names in the store's history.
// EINVALID for a Seq beyond the store's newest; ENOTFOUND for a version
// that is not the store's.
func resolveMoment(ctx context.Context, tx storage.Tx, storeID string, m trove.Moment) (int64, error) {
	n := 0
	for _, set := range []bool{m.Seq != 0, m.VersionID != "", m.Time != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return 0, trove.Errorf(trove.EINVALID, "a moment is one of a version number, a version ID or a time, not several")
	}
	switch {
	case m.VersionID != "":
		v, err := tx.VersionGet(ctx, storeID, m.VersionID, false)
		if err != nil {
			return 0, err
		}
		return v.Seq, nil
	case m.Time != nil:
		return tx.VersionSeqAt(ctx, storeID, *m.Time)
	}
	head, err := tx.StoreSeq(ctx, storeID)
	if err != nil {
		return 0, err
	}
	if m.Seq < 0 || m.Seq > head {
		return 0, trove.Errorf(trove.EINVALID, "memory store %s has versions 1 to %d; there is no version %d", storeID, head, m.Seq)
	}
	if m.Seq == 0 {
		return head, nil
	}
	return m.Seq, nil
}

// ListMemoriesAsOf lists the store as of a moment (trove.HistoryService):
// for each memory then present, the version current at that moment, in
// ascending path order, redacted versions (path gone) first and only when
// PathPrefix is the whole store. Paging as in ListMemories, but a basic page
// may hold up to 1,000 (each page is one pass over the history); a cursor
// keeps the moment it was issued for. EINVALID for a Depth other than 0, a
// bad prefix, limit, view, cursor or moment; ENOTFOUND for a store the caller
// cannot read or a version not in it.
func (s *Service) ListMemoriesAsOf(ctx context.Context, storeID string, at trove.Moment, p trove.ListMemoriesParams) (*trove.AsOfPage, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := trove.ValidatePathPrefix(p.PathPrefix, s.limits.MaxPathBytes, s.limits.MaxPathSegments); err != nil {
		return nil, err
	}
	if p.Depth != 0 {
		return nil, trove.Errorf(trove.EINVALID, "depth must be 0 for a listing as of a moment, got %d", p.Depth)
	}
	view, err := checkView(p.View, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	limit := p.Limit
	switch {
	case limit == 0:
		limit = s.limits.DefaultPageSize
	case limit < 1 || limit > asOfMaxPage:
		return nil, trove.Errorf(trove.EINVALID, "limit must be between 1 and %d, got %d", asOfMaxPage, limit)
	}
	if view == trove.ViewFull {
		limit = min(limit, s.limits.MaxFullPageSize)
	}
	var after *storage.AsOfPosition
	var cursorSeq int64
	if p.Cursor != "" {
		c, err := decodeCursor(p.Cursor, kindAsOf)
		if err != nil {
			return nil, err
		}
		cursorSeq, err = strconv.ParseInt(c.T, 10, 64)
		if err != nil || cursorSeq < 0 || c.I == "" {
			return nil, errBadCursor()
		}
		after = &storage.AsOfPosition{Path: c.F, MemoryID: c.I}
	}
	prefix := p.PathPrefix
	if prefix == "/" {
		prefix = ""
	}
	out := &trove.AsOfPage{}
	var rows []trove.MemoryVersion
	err = s.read(ctx, "ListMemoriesAsOf", func(tx storage.Tx) error {
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		seq := cursorSeq
		if after == nil {
			if seq, err = resolveMoment(ctx, tx, storeID, at); err != nil {
				return err
			}
		}
		out.Seq = seq
		rows, err = tx.VersionAsOf(ctx, storage.VersionAsOfParams{
			StoreID: storeID, Seq: seq, Prefix: prefix, After: after, Limit: limit + 1, WithContent: view == trove.ViewFull,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[limit-1]
		path := ""
		if last.Path != nil {
			path = *last.Path
		}
		out.NextPage = encodeCursor(cursorJSON{K: kindAsOf, T: strconv.FormatInt(out.Seq, 10), F: path, I: last.MemoryID})
	}
	out.Data = make([]trove.MemoryVersion, len(rows))
	for i := range rows {
		out.Data[i] = *versionView(&rows[i], view)
	}
	return out, nil
}

// GetMemoryAsOf returns the version of one memory current at a moment;
// ref is a memory ID or a path ("/…"). view "" means ViewFull. A redacted
// version is returned redacted (no path, no content). ENOTFOUND when the
// memory did not exist then (or was deleted), for a store the caller
// cannot read, or a version not in the store; EINVALID for a bad ref, view
// or moment.
func (s *Service) GetMemoryAsOf(ctx context.Context, storeID string, at trove.Moment, ref string, view trove.View) (*trove.MemoryVersion, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	view, err = checkView(view, trove.ViewFull)
	if err != nil {
		return nil, err
	}
	q := storage.VersionAsOfParams{StoreID: storeID, Limit: 1, WithContent: view == trove.ViewFull}
	switch {
	case strings.HasPrefix(ref, "/"):
		if err := s.validatePath(ref); err != nil {
			return nil, err
		}
		q.Path = ref
	case strings.HasPrefix(ref, trove.PrefixMemory):
		q.MemoryID = ref
	default:
		return nil, trove.Errorf(trove.EINVALID, "name a memory by its ID (mem_…) or its path (/…), got %q", ref)
	}
	var out *trove.MemoryVersion
	err = s.read(ctx, "GetMemoryAsOf", func(tx storage.Tx) error {
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		if q.Seq, err = resolveMoment(ctx, tx, storeID, at); err != nil {
			return err
		}
		rows, err := tx.VersionAsOf(ctx, q)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return trove.Errorf(trove.ENOTFOUND, "memory %s did not exist in memory store %s as of version %d", ref, storeID, q.Seq)
		}
		out = &rows[0]
		return nil
	})
	if err != nil {
		return nil, err
	}
	return versionView(out, view), nil
}
