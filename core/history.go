package core

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"

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

// forkPage is how many source memories a fork reads at a time, and
// forkPageBytes bounds their contents (a page of 2,000 memories at the
// content limit would be 200 MiB): a page ends after the memory whose
// content passes it.
const (
	forkPage      = 2000
	forkPageBytes = 16 << 20
)

// ForkStore creates a store holding the source store's memories as of
// p.AsOf (trove.HistoryService), in one transaction: the new store and,
// for each memory, a new memory (new ID, same path and content) whose
// first version (OpCreated, by the caller) has Origin naming the source
// store and version. Memories whose version at the moment is redacted are
// skipped and listed. Later writes to either store do not affect the other.
// EFORBIDDEN for a session credential (it cannot create stores); EINVALID
// for a bad name, description, metadata or moment, a workspace at
// MaxStoresPerWorkspace, or more memories or content than a store may hold
// (MaxMemoriesPerStore, MaxVersionsPerStore, MaxStoreBytes); ENOTFOUND for an unknown source store or version.
func (s *Service) ForkStore(ctx context.Context, storeID string, p trove.ForkStoreParams) (*trove.ForkResult, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "fork memory stores"); err != nil {
		return nil, err
	}
	md, err := s.validateNewStore(p.Name, p.Description, p.Metadata)
	if err != nil {
		return nil, err
	}
	var out *trove.ForkResult
	err = s.write(ctx, "ForkStore", func(tx storage.Tx) error {
		out = &trove.ForkResult{Skipped: []string{}}
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		seq, err := resolveMoment(ctx, tx, storeID, p.AsOf)
		if err != nil {
			return err
		}
		out.Seq = seq
		if err := s.checkStoreCount(ctx, tx, pr.WorkspaceID); err != nil {
			return err
		}
		now := s.now()
		var bytes int64
		st := &trove.Store{
			ID:          trove.NewID(trove.PrefixStore, now),
			WorkspaceID: pr.WorkspaceID,
			Name:        p.Name,
			Description: p.Description,
			Metadata:    md,
			CreatedAt:   now,
			UpdatedAt:   now,
		}
		if err := tx.StoreInsert(ctx, st); err != nil {
			return err
		}
		out.Store = st
		var after *storage.AsOfPosition
		for {
			page, err := tx.VersionAsOf(ctx, storage.VersionAsOfParams{StoreID: storeID, Seq: seq, After: after, Limit: forkPage, WithContent: true, MaxBytes: forkPageBytes})
			if err != nil {
				return err
			}
			var ms []*trove.Memory
			var vs []*trove.MemoryVersion
			read := 0 // content bytes of the page: past forkPageBytes, it was cut there
			for i := range page {
				v := &page[i]
				if v.Content != nil {
					read += len(*v.Content)
				}
				if v.RedactedAt != nil || v.Path == nil || v.Content == nil {
					out.Skipped = append(out.Skipped, v.MemoryID)
					continue
				}
				if out.Copied >= s.limits.MaxMemoriesPerStore {
					return trove.Errorf(trove.EINVALID, "memory store %s held more than the limit of %d memories at version %d; it cannot be forked", storeID, s.limits.MaxMemoriesPerStore, seq)
				}
				if out.Copied >= s.limits.MaxVersionsPerStore {
					return trove.Errorf(trove.EINVALID, "memory store %s held more memories at version %d than the limit of %d versions of the fork; it cannot be forked", storeID, seq, s.limits.MaxVersionsPerStore)
				}
				content := *v.Content
				if bytes += int64(len(content)); bytes > int64(s.limits.MaxStoreBytes) {
					return trove.Errorf(trove.EINVALID, "memory store %s held more than the limit of %d bytes of memory content at version %d; it cannot be forked", storeID, s.limits.MaxStoreBytes, seq)
				}
				m := &trove.Memory{
					ID: trove.NewID(trove.PrefixMemory, now), StoreID: st.ID, Path: *v.Path, Content: &content,
					SizeBytes: len(content), SHA256: *v.SHA256, VersionID: trove.NewID(trove.PrefixVersion, now),
					CreatedAt: now, UpdatedAt: now,
				}
				ver := versionOf(m, trove.OpCreated, pr)
				ver.Origin = &trove.VersionOrigin{StoreID: storeID, VersionID: v.ID}
				ms, vs = append(ms, m), append(vs, ver)
				out.Copied++
			}
			if err := tx.MemoryInsertBatch(ctx, ms, vs); err != nil {
				return err
			}
			if len(page) == 0 || (len(page) < forkPage && read <= forkPageBytes) {
				return nil
			}
			last := page[len(page)-1]
			after = &storage.AsOfPosition{MemoryID: last.MemoryID}
			if last.Path != nil {
				after.Path = *last.Path
			}
		}
	})
	if err != nil {
		return nil, err
	}
	out.Store = out.Store.Clone()
	return out, nil
}

// errDryRun rolls back a dry run's transaction.
var errDryRun = errors.New("core: dry run")

// RollbackActor undoes what one session or API key wrote to a store after
// p.Since (trove.HistoryService). For each memory the actor wrote after
// the moment, the target is the version current just before the actor's
// first such write (none when the actor created the memory); the memory
// is deleted, restored (same memory ID) or reverted to it with a new
// version by the caller. A memory conflicts, and is left alone, when
// someone else wrote it after the actor did, when its target version is
// redacted, or when its target path is taken by another memory. Without
// p.Force any conflict refuses the whole change set: nothing is written
// and the result (Applied false) lists the conflicts. p.DryRun computes
// exactly what would be applied (in a transaction that is rolled back).
//
// The result lists at most p.Limit changes and conflicts (0: all), with
// the totals and, for a dry run or a refusal, NextPage: p.Cursor reads the
// next p.Limit of each, recomputing the same dry run, which is the same
// only while the store's newest version is the one the first page saw
// (ECONFLICT otherwise: preview again).
//
// EINVALID unless exactly one of SessionID and APIKeyID is set, for a
// missing or bad Since, a bad Limit or Cursor (a cursor without DryRun, or
// another actor's), or on an archived store; ENOTFOUND for a store the
// caller cannot read; EFORBIDDEN for a session with the store read_only.
func (s *Service) RollbackActor(ctx context.Context, storeID string, p trove.RollbackParams) (*trove.RollbackResult, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	var who trove.Actor
	switch {
	case p.SessionID != "" && p.APIKeyID == "":
		who = trove.NewActor(trove.ActorSession, p.SessionID)
	case p.APIKeyID != "" && p.SessionID == "":
		who = trove.NewActor(trove.ActorAPI, p.APIKeyID)
	default:
		return nil, trove.Errorf(trove.EINVALID, "name exactly one actor to roll back: a session ID or an API key ID")
	}
	if p.Limit < 0 || p.Limit > trove.MaxRollbackPageSize {
		return nil, trove.Errorf(trove.EINVALID, "limit must be between 1 and %d, got %d", trove.MaxRollbackPageSize, p.Limit)
	}
	whoID, _ := who.ID()
	var pin *rollbackPin
	if p.Cursor != "" {
		if !p.DryRun {
			return nil, trove.Errorf(trove.EINVALID, "page continues a dry run's listing: send it with dry_run true (a rollback is applied whole, never a page of it)")
		}
		if pin, err = decodeRollbackCursor(p.Cursor, whoID); err != nil {
			return nil, err
		}
	} else if p.Since.IsZero() {
		return nil, trove.Errorf(trove.EINVALID, "say since when to roll back (a time, a version ID or a version number)")
	}
	if err := checkWritable(pr, storeID); err != nil {
		return nil, err
	}
	var out *trove.RollbackResult
	var head int64
	// The transaction is run unmapped: errDryRun is how a dry run rolls
	// back, not an error, so it is neither logged nor turned into
	// EINTERNAL (mapErr), only the real failures are.
	err = s.writeRaw(ctx, func(tx storage.Tx) error {
		out = &trove.RollbackResult{Changes: []trove.RollbackChange{}, Conflicts: []trove.RollbackConflict{}}
		st, err := s.lockWritableStore(ctx, tx, pr, storeID)
		if err != nil {
			return err
		}
		if head, err = tx.StoreSeq(ctx, storeID); err != nil {
			return err
		}
		if pin != nil {
			if head != pin.head {
				return trove.Errorf(trove.ECONFLICT, "memory store %s changed since this dry run's first page (its newest version was %d, now %d): preview the rollback again from the start", storeID, pin.head, head)
			}
			out.SinceSeq = pin.since
		} else if out.SinceSeq, err = resolveMoment(ctx, tx, storeID, p.Since); err != nil {
			return err
		}
		if err := s.planRollback(ctx, tx, storeID, who, out); err != nil {
			return err
		}
		if len(out.Changes) == 0 {
			return nil
		}
		if st.ArchivedAt != nil {
			return errArchived(storeID, "nothing can be rolled back")
		}
		if err := s.applyRollback(ctx, tx, pr, storeID, out); err != nil {
			return err
		}
		if p.DryRun || (len(out.Conflicts) > 0 && !p.Force) {
			return errDryRun
		}
		out.Applied = true
		return nil
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return nil, s.mapErr(ctx, "RollbackActor", err)
	}
	out.ChangesTotal, out.ConflictsTotal = len(out.Changes), len(out.Conflicts)
	if p.Limit > 0 {
		off := 0
		if pin != nil {
			off = pin.offset
		}
		out.Changes = pageOf(out.Changes, off, p.Limit)
		out.Conflicts = pageOf(out.Conflicts, off, p.Limit)
		if !out.Applied && off+p.Limit < max(out.ChangesTotal, out.ConflictsTotal) {
			out.NextPage = encodeCursor(cursorJSON{K: kindRollback, S: fmt.Sprintf("%d:%d", out.SinceSeq, head), I: strconv.Itoa(off + p.Limit), F: whoID})
		}
	}
	return out, nil
}

// kindRollback is the cursor kind of a rollback dry run's listing:
// {"v":1,"k":"r","s":"<since seq>:<head seq>","i":"<offset>","f":"<actor id>"}.
// Unlike the other cursors it holds an offset: a dry run is recomputed
// whole for each page, and its order is fixed while the store's head is
// the pinned one (checked).
const kindRollback = "r"

// rollbackPin is what a rollback cursor pins.
type rollbackPin struct {
	since, head int64
	offset      int
}

func decodeRollbackCursor(s, actorID string) (*rollbackPin, error) {
	c, err := decodeCursor(s, kindRollback)
	if err != nil {
		return nil, err
	}
	var pin rollbackPin
	if _, err := fmt.Sscanf(c.S, "%d:%d", &pin.since, &pin.head); err != nil || pin.since < 0 || pin.head < 0 {
		return nil, errBadCursor()
	}
	if pin.offset, err = strconv.Atoi(c.I); err != nil || pin.offset < 0 {
		return nil, errBadCursor()
	}
	if c.F != actorID {
		return nil, trove.Errorf(trove.EINVALID, "this page cursor continues the dry run of another actor's rollback (%s), not %s's", c.F, actorID)
	}
	return &pin, nil
}

// pageOf returns the limit items of xs from off (a new slice, so the rest
// is not kept).
func pageOf[T any](xs []T, off, limit int) []T {
	if off >= len(xs) {
		return []T{}
	}
	return slices.Clone(xs[off:min(len(xs), off+limit)])
}

// rollbackScanPage is how many versions planRollback reads at a time.
const rollbackScanPage = 256

// planRollback fills out.Changes and out.Conflicts (the ones visible
// before applying anything) from the store's history after out.SinceSeq,
// read a page at a time: what it keeps is a copy of two versions per
// memory the actor wrote, not the history.
func (s *Service) planRollback(ctx context.Context, tx storage.Tx, storeID string, who trove.Actor, out *trove.RollbackResult) error {
	type track struct {
		first   int64                // seq of the actor's first write after the moment
		current *trove.MemoryVersion // newest version
		other   *trove.MemoryVersion // newest version by someone else after first
	}
	tracks := map[string]*track{}
	var order []string
	for after := out.SinceSeq; ; {
		history, err := tx.VersionScan(ctx, storage.VersionScanParams{StoreID: storeID, AfterSeq: after, Limit: rollbackScanPage})
		if err != nil {
			return err
		}
		for i := range history {
			v := &history[i]
			mine := v.CreatedBy != nil && *v.CreatedBy == who
			t := tracks[v.MemoryID]
			if t == nil {
				if !mine {
					continue
				}
				t = &track{first: v.Seq}
				tracks[v.MemoryID] = t
				order = append(order, v.MemoryID)
			}
			c := *v // a copy: the page is not kept
			t.current = &c
			if !mine {
				t.other = &c
			}
		}
		if len(history) < rollbackScanPage {
			break
		}
		after = history[len(history)-1].Seq
	}
	for _, id := range order {
		t := tracks[id]
		cur := versionView(t.current, trove.ViewBasic)
		if t.other != nil {
			out.Conflicts = append(out.Conflicts, trove.RollbackConflict{
				MemoryID: id, Path: pathOf(t.current), Version: versionView(t.other, trove.ViewBasic),
				Reason: fmt.Sprintf("changed by %s after the rolled-back writes", describeActor(t.other.CreatedBy)),
			})
			continue
		}
		prior, err := tx.VersionAsOf(ctx, storage.VersionAsOfParams{StoreID: storeID, Seq: t.first - 1, MemoryID: id})
		if err != nil {
			return err
		}
		live := t.current.Operation != trove.OpDeleted
		switch {
		case len(prior) == 0 && !live:
			continue // created and deleted again by the actor
		case len(prior) == 0:
			out.Changes = append(out.Changes, trove.RollbackChange{Action: trove.RollbackDelete, MemoryID: id, Current: cur})
			continue
		}
		target := &prior[0]
		if target.RedactedAt != nil {
			out.Conflicts = append(out.Conflicts, trove.RollbackConflict{
				MemoryID: id, Path: pathOf(t.current), Version: versionView(target, trove.ViewBasic),
				Reason: "the version to go back to is redacted; its content is gone",
			})
			continue
		}
		action := trove.RollbackRevert
		if !live {
			action = trove.RollbackRestore
		} else if ptrEqual(t.current.Path, target.Path) && ptrEqual(t.current.SHA256, target.SHA256) {
			continue // already as it was
		}
		out.Changes = append(out.Changes, trove.RollbackChange{Action: action, MemoryID: id, Current: cur, Target: versionView(target, trove.ViewBasic)})
	}
	return nil
}

// applyRollback writes out.Changes (deletes first, so that paths they free
// can be reused), moving a change whose target path is taken to
// out.Conflicts.
func (s *Service) applyRollback(ctx context.Context, tx storage.Tx, pr *trove.Principal, storeID string, out *trove.RollbackResult) error {
	now := s.now()
	slices.SortStableFunc(out.Changes, func(a, b trove.RollbackChange) int {
		return boolInt(a.Action != trove.RollbackDelete) - boolInt(b.Action != trove.RollbackDelete)
	})
	kept := out.Changes[:0:0]
	for _, c := range out.Changes {
		switch c.Action {
		case trove.RollbackDelete:
			if err := tx.MemoryDelete(ctx, storeID, c.MemoryID); err != nil {
				return err
			}
			path := *c.Current.Path
			if err := tx.VersionInsert(ctx, &trove.MemoryVersion{
				ID: trove.NewID(trove.PrefixVersion, now), StoreID: storeID, MemoryID: c.MemoryID,
				Operation: trove.OpDeleted, Path: &path, CreatedBy: actor(pr), CreatedAt: now,
			}); err != nil {
				return err
			}
		default:
			full, err := tx.VersionGet(ctx, storeID, c.Target.ID, true)
			if err != nil {
				return err
			}
			if err := checkOverlap(ctx, tx, storeID, *full.Path, c.MemoryID); err != nil {
				if trove.ErrorCode(err) != trove.EPATHCONFLICT {
					return err
				}
				out.Conflicts = append(out.Conflicts, trove.RollbackConflict{
					MemoryID: c.MemoryID, Path: *full.Path, Version: c.Current,
					Reason: err.Error(),
				})
				continue
			}
			content := *full.Content
			m := &trove.Memory{
				ID: c.MemoryID, StoreID: storeID, Path: *full.Path, Content: &content, SizeBytes: len(content),
				SHA256: *full.SHA256, VersionID: trove.NewID(trove.PrefixVersion, now), CreatedAt: now, UpdatedAt: now,
			}
			op := trove.OpModified
			if c.Action == trove.RollbackRestore {
				op = trove.OpCreated
				if err := s.checkGrowth(ctx, tx, storeID, growth{memories: 1, bytes: int64(len(content)), versions: 1}); err != nil {
					return trove.Errorf(trove.EINVALID, "restoring %s: %s", c.MemoryID, trove.ErrorMessage(err))
				}
				if err := tx.MemoryInsert(ctx, m); err != nil {
					return err
				}
			} else {
				old, err := tx.MemoryGet(ctx, storeID, c.MemoryID, false)
				if err != nil {
					return err
				}
				if err := s.checkGrowth(ctx, tx, storeID, growth{bytes: int64(len(content) - old.SizeBytes), versions: 1}); err != nil {
					return trove.Errorf(trove.EINVALID, "reverting %s: %s", c.MemoryID, trove.ErrorMessage(err))
				}
				m.CreatedAt = old.CreatedAt
				if err := tx.MemoryUpdate(ctx, m); err != nil {
					return err
				}
			}
			if err := tx.VersionInsert(ctx, versionOf(m, op, pr)); err != nil {
				return err
			}
		}
		kept = append(kept, c)
	}
	out.Changes = kept
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func pathOf(v *trove.MemoryVersion) string {
	if v.Path == nil {
		return ""
	}
	return *v.Path
}

func describeActor(a *trove.Actor) string {
	if a == nil {
		return "an unrecorded actor"
	}
	id, _ := a.ID()
	return id
}

// verifyPage is how many versions VerifyStore reads at a time, with their
// content: at most 64 × Limits.MaxContentBytes (6.4 MiB) held at once,
// whatever the store's history.
const verifyPage = 64

// VerifyStore recomputes a store's hash chain (trove.HistoryService) and
// reports the first break: for every version in Seq order it checks that
// its content matches its SHA-256, that its leaf hash matches its fields
// (trove.VersionLeafHash; a redacted version's stored leaf is used as
// is), that its chain hash links it to the previous version
// (trove.VersionChainHash), and finally that the store's head is the
// newest version's chain hash. Across a gap in the Seq numbers (retention
// deleted versions) a link cannot be checked: the gap is listed and the
// check restarts from the next version's stored chain hash; but a gap
// right after a version younger than Limits.VersionRetention cannot come
// from retention and is a break. Versions written before the chain existed
// (no hashes) are counted as Unchained. The chain detects a change to
// rows; a rewrite of a whole suffix of the history together with the head
// is detected only against a head recorded elsewhere (AuditReport.Head).
// ENOTFOUND for a store the caller cannot read.
func (s *Service) VerifyStore(ctx context.Context, storeID string) (*trove.AuditReport, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	var out *trove.AuditReport
	err = s.read(ctx, "VerifyStore", func(tx storage.Tx) error {
		out = &trove.AuditReport{StoreID: storeID, Gaps: [][2]int64{}, VerifiedAt: s.now()}
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		headSeq, head, err := tx.StoreHead(ctx, storeID)
		if err != nil {
			return err
		}
		out.HeadSeq = headSeq
		if head != nil {
			out.Head = hex.EncodeToString(head)
		}
		var (
			lastSeq int64
			prev    []byte // chain hash of the version at lastSeq; nil before the first chained one
			last    *trove.MemoryVersion
		)
		fail := func(v *trove.MemoryVersion, format string, args ...any) {
			out.Break = &trove.AuditBreak{VersionID: v.ID, Seq: v.Seq, Problem: fmt.Sprintf(format, args...)}
		}
		for out.Break == nil {
			page, err := tx.VersionScan(ctx, storage.VersionScanParams{StoreID: storeID, AfterSeq: lastSeq, Limit: verifyPage, WithContent: true})
			if err != nil {
				return err
			}
			for i := range page {
				v := &page[i]
				if v.Seq != lastSeq+1 {
					addGap(out, lastSeq+1, v.Seq-1)
					if s.deletedOutsideRetention(last) {
						fail(v, "versions %d to %d before this one are missing, but they were written after version %d (%s), within the retention period: they were deleted outside retention", lastSeq+1, v.Seq-1, lastSeq, last.CreatedAt.Format(time.RFC3339))
						break
					}
				}
				linked := v.Seq == lastSeq+1
				if !s.verifyOne(v, prev, linked, out, fail) {
					break
				}
				lastSeq, prev, last = v.Seq, v.ChainHash, v
			}
			if len(page) < verifyPage {
				break
			}
		}
		if out.Break != nil {
			return nil
		}
		if lastSeq < headSeq {
			addGap(out, lastSeq+1, headSeq)
			if s.deletedOutsideRetention(last) {
				fail(last, "the newest versions %d to %d are missing, but they were written after this version (%s), within the retention period: they were deleted outside retention", lastSeq+1, headSeq, last.CreatedAt.Format(time.RFC3339))
			}
		} else if last != nil && prev != nil && !bytes.Equal(prev, head) {
			fail(last, "the store's recorded head %x is not this newest version's chain hash %x: the newest versions or the head were altered", head, prev)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.OK = out.Break == nil
	return out, nil
}

// addGap counts a gap and lists it among the first trove.MaxAuditGaps.
func addGap(out *trove.AuditReport, from, to int64) {
	out.GapsTotal++
	if len(out.Gaps) < trove.MaxAuditGaps {
		out.Gaps = append(out.Gaps, [2]int64{from, to})
	}
}

// deletedOutsideRetention reports whether versions missing right after
// last cannot have been deleted by retention: they were written after last
// (seq order is commit order), and last itself is younger than the
// retention period, so retention has not reached them.
func (s *Service) deletedOutsideRetention(last *trove.MemoryVersion) bool {
	return last != nil && last.CreatedAt.After(s.now().Add(-s.limits.VersionRetention))
}

// verifyOne checks one version; it reports a break through fail and
// returns false then. linked says whether the previous Seq exists, so that
// prev (nil: the chain starts here from trove.GenesisHash) is its chain
// hash.
func (s *Service) verifyOne(v *trove.MemoryVersion, prev []byte, linked bool, out *trove.AuditReport, fail func(*trove.MemoryVersion, string, ...any)) bool {
	if v.LeafHash == nil && v.ChainHash == nil {
		if prev != nil {
			fail(v, "version has no hash but follows chained versions: its hashes were removed")
			return false
		}
		out.Unchained++
		return true
	}
	if len(v.LeafHash) != trove.HashSize || len(v.ChainHash) != trove.HashSize {
		fail(v, "version's leaf or chain hash is missing or malformed")
		return false
	}
	if v.RedactedAt != nil {
		if v.Path != nil || v.SHA256 != nil || v.Content != nil || v.SizeBytes != nil {
			fail(v, "version is marked redacted but still has a path, content, size or hash")
			return false
		}
		out.Redacted++
	} else {
		if v.Operation != trove.OpDeleted {
			if v.Content == nil || v.SHA256 == nil || v.SizeBytes == nil {
				fail(v, "version lacks content, size or hash but is not redacted")
				return false
			}
			if got := sha256Hex(*v.Content); got != *v.SHA256 {
				fail(v, "content does not match its sha256 (content hashes to %s, recorded %s): the content was altered", got, *v.SHA256)
				return false
			}
			if len(*v.Content) != *v.SizeBytes {
				fail(v, "content is %d bytes but its recorded size is %d", len(*v.Content), *v.SizeBytes)
				return false
			}
		}
		if leaf := trove.VersionLeafHash(v); !bytes.Equal(leaf, v.LeafHash) {
			fail(v, "leaf hash differs from the version's fields (ids, operation, path, sha256, actor, time, origin): recomputed %x, recorded %x; a field was altered", leaf, v.LeafHash)
			return false
		}
	}
	if linked { // else a gap: restart from this version's stored chain hash
		if want := trove.VersionChainHash(prev, v.Seq, v.LeafHash); !bytes.Equal(want, v.ChainHash) {
			fail(v, "chain hash does not link to the previous version of the store (seq %d): recomputed %x, recorded %x; this version, its seq or the previous version was altered", v.Seq-1, want, v.ChainHash)
			return false
		}
	}
	out.Verified++
	return true
}
