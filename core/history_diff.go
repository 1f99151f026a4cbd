package core

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
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
// "from:to", then ":f", ":t" or ":ft" when the From or To state, or both,
// holds nothing after the cursor: diffKeyset reads no more of it) and the
// last memory's diffKey (F).
const kindDiff = "d"

// DiffStorePage is one page of the comparison of a store at two moments
// (trove.HistoryService): every memory added, removed, moved or changed
// between them, in diffKey order, with a unified diff of its content
// unless a side is redacted. What a page holds is bounded (p.Limit
// memories, patches up to trove.MaxDiffPageBytes, see trove.StoreDiff):
// the memories' metadata at both moments is read whole, contents only
// for the page's memories. Between moments close in the history the
// metadata read is that of the memories the versions between them touched
// (diffSides); otherwise each page reads the two as-of states from its
// cursor onward (diffKeyset), not both whole on every page. ENOTFOUND and EINVALID as in ListMemoriesAsOf;
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
	var ended sidesEnded
	out := &trove.StoreDiff{Changes: []trove.MemoryDiff{}}
	if p.Cursor != "" {
		c, err := decodeCursor(p.Cursor, kindDiff)
		if err != nil {
			return nil, err
		}
		if out.FromSeq, out.ToSeq, ended, err = parseDiffMoments(c.S); err != nil || c.F == "" {
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
		a, b, small, err := diffSides(ctx, tx, storeID, out.FromSeq, out.ToSeq)
		if err != nil {
			return err
		}
		var more bool
		if small {
			out.Changes, more, err = diffVersions(ctx, tx, storeID, a, b, out.FromSeq, out.ToSeq, after, limit)
		} else {
			out.Changes, more, ended, err = diffKeyset(ctx, tx, storeID, out.FromSeq, out.ToSeq, after, limit, ended)
		}
		if more {
			out.NextPage = encodeCursor(cursorJSON{K: kindDiff, S: fmt.Sprintf("%d:%d", out.FromSeq, out.ToSeq) + ended.suffix(), F: diffKey(out.Changes[len(out.Changes)-1])})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sidesEnded says which as-of states of a diff hold nothing after a page's
// cursor.
type sidesEnded struct{ from, to bool }

func (e sidesEnded) suffix() string {
	switch {
	case e.from && e.to:
		return ":ft"
	case e.from:
		return ":f"
	case e.to:
		return ":t"
	}
	return ""
}

// parseDiffMoments parses a diff cursor's S: "from:to" and sidesEnded's
// suffix.
func parseDiffMoments(s string) (from, to int64, ended sidesEnded, err error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, ended, errBadCursor()
	}
	if from, err = strconv.ParseInt(parts[0], 10, 64); err != nil || from < 0 {
		return 0, 0, ended, errBadCursor()
	}
	if to, err = strconv.ParseInt(parts[1], 10, 64); err != nil || to < 0 {
		return 0, 0, ended, errBadCursor()
	}
	if len(parts) == 3 {
		switch parts[2] {
		case "f":
			ended.from = true
		case "t":
			ended.to = true
		case "ft":
			ended.from, ended.to = true, true
		default:
			return 0, 0, ended, errBadCursor()
		}
	}
	return from, to, ended, nil
}

// diffScanLimit bounds the versions between two moments that diffSides
// reads to find the memories they touched; past it, diffKeyset's keyset
// reads of the two as-of states are cheaper than a point read per touched
// memory. Every page pays that scan (up to diffScanLimit + 1 versions)
// before it knows which way to go: at 2,000 it was most of a far diff's
// page (BenchmarkDiffPaging, 20,000 memories: 10–12 ms a page at 2,000,
// 2.9–4.3 at 500; docs/perf/timemachine.md).
const diffScanLimit = 500

// diffSides returns the two sides of a diff between fromSeq and toSeq: the
// versions current at each moment of the memories that a version between
// them touched (a memory no version touched is the same on both sides, so
// diffVersions would skip it). The cost grows with the changes between the
// moments, not with the store: one VersionScan of that range and two
// point reads (VersionAsOf of one memory) per touched memory. Over
// diffScanLimit versions apart it reads nothing more and reports !small:
// the caller pages with diffKeyset instead.
func diffSides(ctx context.Context, tx storage.Tx, storeID string, fromSeq, toSeq int64) (a, b []trove.MemoryVersion, small bool, err error) {
	lo, hi := min(fromSeq, toSeq), max(fromSeq, toSeq)
	between, err := tx.VersionScan(ctx, storage.VersionScanParams{StoreID: storeID, AfterSeq: lo, UpToSeq: hi, Limit: diffScanLimit + 1})
	if err != nil || len(between) > diffScanLimit {
		return nil, nil, false, err
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
				return nil, nil, false, err
			}
			*side.out = append(*side.out, vs...)
		}
	}
	return a, b, true, nil
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
	ids := slices.Sorted(maps.Keys(before))
	for id := range afterAt {
		if _, ok := before[id]; !ok {
			ids = append(ids, id)
		}
	}
	// First the metadata of every difference (no content), in order.
	all := []trove.MemoryDiff{}
	for _, id := range ids {
		d, ok := diffOf(id, before[id], afterAt[id])
		if !ok || (after != "" && diffKey(d) <= after) {
			continue
		}
		all = append(all, d)
	}
	slices.SortFunc(all, func(p, q trove.MemoryDiff) int {
		return strings.Compare(diffKey(p), diffKey(q))
	})
	// Then the page: contents read and patched for its memories only.
	var pg diffPage
	for i := range all {
		if pg.full(limit) {
			return pg.out, true, nil
		}
		d := all[i]
		all[i] = trove.MemoryDiff{} // what the page took is not kept twice
		if err := pg.add(ctx, tx, storeID, d, before[d.MemoryID], afterAt[d.MemoryID], fromSeq, toSeq); err != nil {
			return nil, false, err
		}
	}
	return pg.nonNil(), false, nil
}

// diffKeyset is the page of the diff between fromSeq and toSeq after the
// diffKey `after` (as diffVersions), read without either whole state: the
// two as-of states are read from `after` onward in their (path, memory ID)
// order (asOfStream) and merged. Each memory is met in the stream of the
// side that gives its diffKey (To, unless it is absent there or redacted
// there with a path at From), at its diffKey, so the merge yields diffKey
// order and every memory once, moved ones included. A memory met at the
// same position in both streams is compared as it stands (unchanged when
// it is the same version, as most are); one met in a single stream needs
// a point read of the other side (VersionAsOf of one memory), and is
// skipped when that side gives its key. A page then costs its memories,
// the unchanged ones it steps over, and one VersionAsOf call per side per
// chunk, whose own cost is the driver's (for SQLite and PostgreSQL, its
// chunk and the pairs it steps over, or for a moment near either end of
// the history the versions on the short side): see
// docs/perf/timemachine.md.
//
// A side whose state holds nothing after the page (its stream ended, and
// nothing it gave is after the page's last memory) is reported in ended
// and not read again on later pages (ended in): without that, once one
// side was done — all of a moved directory's old paths, say — every later
// page read that side's state from the cursor to its end again, to find
// nothing.
func diffKeyset(ctx context.Context, tx storage.Tx, storeID string, fromSeq, toSeq int64, after string, limit int, ended sidesEnded) (_ []trove.MemoryDiff, more bool, _ sidesEnded, _ error) {
	var start *storage.AsOfPosition
	if after != "" {
		path, id, _ := strings.Cut(after, "\x00")
		start = &storage.AsOfPosition{Path: path, MemoryID: id}
	}
	chunk := max(limit+1, asOfStreamMinChunk)
	from := &asOfStream{tx: tx, storeID: storeID, seq: fromSeq, after: start, chunk: chunk, done: ended.from}
	to := &asOfStream{tx: tx, storeID: storeID, seq: toSeq, after: start, chunk: chunk, done: ended.to}
	pointRead := func(seq int64, memoryID string) (*trove.MemoryVersion, error) {
		if seq == 0 {
			return nil, nil
		}
		vs, err := tx.VersionAsOf(ctx, storage.VersionAsOfParams{StoreID: storeID, Seq: seq, MemoryID: memoryID})
		if err != nil || len(vs) == 0 {
			return nil, err
		}
		return &vs[0], nil
	}
	var pg diffPage
	for {
		f, err := from.peek(ctx)
		if err != nil {
			return nil, false, ended, err
		}
		t, err := to.peek(ctx)
		if err != nil {
			return nil, false, ended, err
		}
		var x, y *trove.MemoryVersion
		switch c := comparePositions(t, f); {
		case t == nil && f == nil:
			return pg.nonNil(), false, sidesEnded{true, true}, nil
		case c == 0: // the same memory at the same position: To's to give
			x, y = f, t
			from.next()
			to.next()
		case c < 0: // met at To: skipped if From gives its key
			y = t
			to.next()
			if x, err = pointRead(fromSeq, y.MemoryID); err != nil {
				return nil, false, ended, err
			}
			if y.Path == nil && x != nil && x.Path != nil {
				continue
			}
		default: // met at From: skipped if To gives its key
			x = f
			from.next()
			if y, err = pointRead(toSeq, x.MemoryID); err != nil {
				return nil, false, ended, err
			}
			if y != nil && (y.Path != nil || x.Path == nil) {
				continue
			}
		}
		var id string
		if x != nil {
			id = x.MemoryID
		} else {
			id = y.MemoryID
		}
		d, ok := diffOf(id, x, y)
		if !ok {
			continue
		}
		if pg.full(limit) {
			last := diffKey(pg.out[len(pg.out)-1])
			return pg.out, true, sidesEnded{from.endedBy(last), to.endedBy(last)}, nil
		}
		if err := pg.add(ctx, tx, storeID, d, x, y, fromSeq, toSeq); err != nil {
			return nil, false, ended, err
		}
	}
}

// diffOf is the difference of memory id between its version x at From and
// y at To (nil where absent), without its patch; false when they are the
// same version.
func diffOf(id string, x, y *trove.MemoryVersion) (trove.MemoryDiff, bool) {
	if (x == nil && y == nil) || (x != nil && y != nil && x.ID == y.ID) {
		return trove.MemoryDiff{}, false
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
	return d, true
}

// diffPage gathers a page of a diff: its changes and the bytes of their
// patches.
type diffPage struct {
	out   []trove.MemoryDiff
	bytes int
}

// full reports whether the page may take no more changes: limit of them,
// or patches past trove.MaxDiffPageBytes.
func (pg *diffPage) full(limit int) bool {
	return len(pg.out) == limit || (len(pg.out) > 0 && pg.bytes > trove.MaxDiffPageBytes)
}

// add appends d, with the unified diff of the contents of x and y unless
// they are the same or a side is redacted.
func (pg *diffPage) add(ctx context.Context, tx storage.Tx, storeID string, d trove.MemoryDiff, x, y *trove.MemoryVersion, fromSeq, toSeq int64) error {
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
	if d.ContentChanged && !d.Redacted {
		old, err := content(x)
		if err != nil {
			return err
		}
		new, err := content(y)
		if err != nil {
			return err
		}
		d.Patch = udiff.Unified(label(x, fromSeq), label(y, toSeq), old, new)
		pg.bytes += len(d.Patch)
	}
	pg.out = append(pg.out, d)
	return nil
}

// nonNil is the page's changes, an empty list rather than nil.
func (pg *diffPage) nonNil() []trove.MemoryDiff {
	if pg.out == nil {
		return []trove.MemoryDiff{}
	}
	return pg.out
}

// asOfStream reads a store as of seq in VersionAsOf's order from the
// position after onward, in chunks that start at chunk versions and
// double up to asOfStreamMaxChunk (a page that steps over many unchanged
// memories makes few reads; one that ends early reads little past it).
// A stream of seq 0 (before the first write) is empty without a read.
type asOfStream struct {
	tx      storage.Tx
	storeID string
	seq     int64
	after   *storage.AsOfPosition
	chunk   int
	buf     []trove.MemoryVersion
	done    bool   // no read is left: the last one returned all there was
	last    string // the key (diffKey form) of the version next dropped last
}

// An asOfStream's first read asks for asOfStreamMinChunk versions (or the
// page's limit + 1 when more) — a driver's as-of read has a cost of its own
// besides its rows (for a moment near an end of the history, the versions
// on the short side), so few reads a page is the aim — and
// asOfStreamMaxChunk bounds the versions (metadata, no content) it holds
// at once.
const (
	asOfStreamMinChunk = 64
	asOfStreamMaxChunk = 1000
)

// peek returns the stream's next version, nil at its end.
func (s *asOfStream) peek(ctx context.Context) (*trove.MemoryVersion, error) {
	if len(s.buf) == 0 && !s.done {
		if s.seq == 0 {
			s.done = true
			return nil, nil
		}
		vs, err := s.tx.VersionAsOf(ctx, storage.VersionAsOfParams{StoreID: s.storeID, Seq: s.seq, After: s.after, Limit: s.chunk})
		if err != nil {
			return nil, err
		}
		s.buf, s.done = vs, len(vs) < s.chunk
		if len(vs) > 0 {
			s.after = asOfPosition(&vs[len(vs)-1])
		}
		s.chunk = min(2*s.chunk, asOfStreamMaxChunk)
	}
	if len(s.buf) == 0 {
		return nil, nil
	}
	return &s.buf[0], nil
}

// next drops the version peek returned.
func (s *asOfStream) next() {
	s.last = positionKey(&s.buf[0])
	s.buf = s.buf[1:]
}

// endedBy reports whether the stream's state holds nothing after the
// diffKey key: it has read its last and dropped all it read, none after key.
func (s *asOfStream) endedBy(key string) bool {
	return s.done && len(s.buf) == 0 && s.last <= key
}

// positionKey is a version's position in VersionAsOf's order in diffKey's
// form ("path\x00memory ID", a redacted version's path empty), which
// orders the same.
func positionKey(v *trove.MemoryVersion) string {
	p := asOfPosition(v)
	return p.Path + "\x00" + p.MemoryID
}

// asOfPosition is v's position in VersionAsOf's order.
func asOfPosition(v *trove.MemoryVersion) *storage.AsOfPosition {
	p := &storage.AsOfPosition{MemoryID: v.MemoryID}
	if v.Path != nil {
		p.Path = *v.Path
	}
	return p
}

// comparePositions compares two versions' positions in VersionAsOf's
// order, nil (a stream's end) after every version.
func comparePositions(a, b *trove.MemoryVersion) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	p, q := asOfPosition(a), asOfPosition(b)
	return cmp.Or(strings.Compare(p.Path, q.Path), strings.Compare(p.MemoryID, q.MemoryID))
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
