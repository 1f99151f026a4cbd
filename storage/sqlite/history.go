package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// StoreHead returns the store's newest Seq and chain head, or ENOTFOUND.
func (t *tx) StoreHead(ctx context.Context, storeID string) (int64, []byte, error) {
	var seq int64
	var head []byte
	err := t.queryRow(ctx, "memory store", storeID, func(r rowScanner) error { return r.Scan(&seq, &head) },
		`SELECT coalesce(q.last, 0), q.head FROM stores AS s LEFT JOIN version_seqs AS q ON q.store_id = s.id WHERE s.id = ?`, storeID)
	return seq, head, err
}

// VersionSeqAt returns the largest Seq among the store's versions created
// at or before at (0 when none).
func (t *tx) VersionSeqAt(ctx context.Context, storeID string, at time.Time) (int64, error) {
	var seq int64
	err := t.queryRow(ctx, "memory store", storeID, func(r rowScanner) error { return r.Scan(&seq) },
		`SELECT coalesce(max(seq), 0) FROM versions WHERE store_id = ? AND created_at <= ?`, storeID, micros(at))
	return seq, err
}

// VersionAsOf returns each memory's newest version with seq <= p.Seq that
// is not a deletion, ordered by path, a redacted one's NULL path first,
// then memory ID. Its cost grows with the page, not with the store's
// history (docs/perf/scale.md), by one of four plans:
//
//   - one memory (p.MemoryID): one probe of versions_by_memory_seq for the
//     memory's newest seq <= p.Seq;
//   - a page (a limit) whose other plan would read too much for it
//     (storage.VersionAsOfParams.Walk): asOfWalk, a skip scan of the
//     versions' (path, memory) pairs;
//   - else a moment in the newer half of the history (head − p.Seq <=
//     p.Seq): asOfRecent, a page of the live memories untouched since the
//     moment plus the memories the versions after it touched;
//   - else (an older moment) the newest seq per memory from the
//     versions_by_seq range up to the moment, then the version by
//     versions_by_seq.
//
// Without a limit the last two read what they read for a page.
func (t *tx) VersionAsOf(ctx context.Context, p storage.VersionAsOfParams) ([]trove.MemoryVersion, error) {
	content := "NULL"
	if p.WithContent {
		content = "content"
	}
	var w whereBuilder
	w.add("operation <> 'deleted'")
	if p.Path != "" {
		w.add("path = ?", p.Path)
	}
	if p.Prefix != "" {
		w.add("path >= ?", p.Prefix)
		if end, ok := prefixEnd(p.Prefix); ok {
			w.add("path < ?", end)
		}
	}
	if p.After != nil {
		w.add("(coalesce(path, ''), memory_id) > (?, ?)", p.After.Path, p.After.MemoryID)
	}
	if p.MemoryID != "" {
		q := `SELECT ` + versionCols + `, ` + content + ` FROM versions` + w.String() + ` AND store_id = ? AND memory_id = ? AND seq =
			(SELECT seq FROM versions WHERE memory_id = ? AND seq <= ? AND store_id = ? ORDER BY seq DESC LIMIT 1) LIMIT ?`
		args := append(w.args, p.StoreID, p.MemoryID, p.MemoryID, p.Seq, p.StoreID, limitArg(p.Limit))
		return t.queryVersionsMax(ctx, p.MaxBytes, q, args...)
	}
	var head int64
	if err := t.queryRow(ctx, "memory store", p.StoreID, func(r rowScanner) error { return r.Scan(&head) },
		`SELECT coalesce((SELECT last FROM version_seqs WHERE store_id = ?), 0)`, p.StoreID); err != nil {
		return nil, err
	}
	if p.Walk(head) {
		return t.asOfWalk(ctx, p, content)
	}
	if head-p.Seq <= p.Seq {
		return t.asOfRecent(ctx, p, content, &w)
	}
	// A short history up to the moment (or no limit): one pass over it.
	inner := `SELECT memory_id AS mid, max(seq) AS s FROM versions WHERE store_id = ? AND seq <= ? GROUP BY memory_id`
	q := `SELECT ` + versionCols + `, ` + content + ` FROM (` + inner + `) AS c
		JOIN versions ON versions.store_id = ? AND versions.seq = c.s` + w.String() +
		` ORDER BY coalesce(path, ''), memory_id LIMIT ?`
	args := []any{p.StoreID, p.Seq, p.StoreID}
	args = append(args, w.args...)
	args = append(args, limitArg(p.Limit))
	return t.queryVersionsMax(ctx, p.MaxBytes, q, args...)
}

// asOfRecent is VersionAsOf of a recent moment S, whose cost is the page
// plus the versions after S, not the history before it. The state as of S
// is the union of
//
//   - the live memories that no version after S touched: as of S they were
//     what they are now (their current version, whose path is the memory's:
//     a current version cannot be redacted), read in path order through
//     memories_by_path, each with one probe of versions_by_memory_seq for
//     "no version after S", up to the page's limit;
//   - the memories the versions after S touched (versions_by_seq from S),
//     each as of S through versions_by_memory_seq (gone if it was deleted or
//     not yet created then).
//
// w holds the conditions on the version's path and operation.
func (t *tx) asOfRecent(ctx context.Context, p storage.VersionAsOfParams, content string, w *whereBuilder) ([]trove.MemoryVersion, error) {
	var live whereBuilder
	live.add("m.store_id = ?", p.StoreID)
	if p.Path != "" {
		live.add("m.path = ?", p.Path)
	}
	if p.Prefix != "" {
		live.add("m.path >= ?", p.Prefix)
		if end, ok := prefixEnd(p.Prefix); ok {
			live.add("m.path < ?", end)
		}
	}
	if p.After != nil {
		// A live memory's path is unique in its store: (path, id) > (P, I)
		// is path > P, or the memory at P when its ID is after I.
		live.add("m.path >= ? AND (m.path > ? OR m.id > ?)", p.After.Path, p.After.Path, p.After.MemoryID)
	}
	live.add("NOT EXISTS (SELECT 1 FROM versions AS x WHERE x.memory_id = m.id AND x.seq > ? AND x.store_id = m.store_id)", p.Seq)
	q := `SELECT ` + versionCols + `, ` + content + ` FROM (
		SELECT * FROM (SELECT v.* FROM memories AS m JOIN versions AS v ON v.id = m.version_id` + live.String() + `
			ORDER BY m.path LIMIT ?)
		UNION ALL
		SELECT v.* FROM (SELECT DISTINCT memory_id AS mid FROM versions WHERE store_id = ? AND seq > ?) AS c
			JOIN versions AS v ON v.memory_id = c.mid AND v.seq =
				(SELECT y.seq FROM versions AS y WHERE y.memory_id = c.mid AND y.seq <= ? AND y.store_id = ? ORDER BY y.seq DESC LIMIT 1)
			AND v.store_id = ?
	)` + w.String() + ` ORDER BY coalesce(path, ''), memory_id LIMIT ?`
	args := append(live.args, limitArg(p.Limit), p.StoreID, p.Seq, p.Seq, p.StoreID, p.StoreID)
	args = append(args, w.args...)
	args = append(args, limitArg(p.Limit))
	return t.queryVersionsMax(ctx, p.MaxBytes, q, args...)
}

// asOfWalk is VersionAsOf of a moment S, one page, in a cost that
// grows with the page (and the (path, memory) pairs skipped on the way),
// not with the history. It walks the distinct (path, memory ID) pairs of
// the store's versions in the page's order through versions_by_path, one
// index seek per pair (a skip scan: a pair's many versions are stepped
// over, not read), a redacted version's NULL path first; for each pair it
// reads the memory's newest version with seq <= S through
// versions_by_memory_seq, and keeps it when that version is at the pair's
// path and not a deletion. Every memory alive at S appears at exactly one
// pair, the path of its version as of S.
func (t *tx) asOfWalk(ctx context.Context, p storage.VersionAsOfParams, content string) ([]trove.MemoryVersion, error) {
	nullRegion := p.Path == "" && p.Prefix == ""
	var cur struct {
		path, mid string
		inclusive bool // the first seek may land on cur itself
	}
	switch {
	case p.After != nil && p.After.Path == "":
		cur.mid = p.After.MemoryID
	case p.After != nil:
		nullRegion = false
		cur.path, cur.mid = p.After.Path, p.After.MemoryID
	case p.Path != "":
		cur.path, cur.inclusive = p.Path, true
	case p.Prefix != "":
		cur.path, cur.inclusive = p.Prefix, true
	}
	if p.After != nil && (p.Path != "" && p.After.Path < p.Path || p.Prefix != "" && p.After.Path < p.Prefix) {
		cur.path, cur.mid, cur.inclusive = max(p.Path, p.Prefix), "", true
	}
	var end string
	hasEnd := false
	switch {
	case p.Path != "":
		end, hasEnd = p.Path+"\x00", true
	case p.Prefix != "":
		end, hasEnd = prefixEnd(p.Prefix)
	}
	pick := asOfPickQuery(content)
	out := []trove.MemoryVersion{}
	budget := p.MaxBytes
	for len(out) < p.Limit {
		var path sql.NullString
		var mid string
		var q string
		var args []any
		switch {
		case nullRegion:
			q, args = `SELECT NULL, memory_id FROM versions WHERE store_id = ? AND path IS NULL AND memory_id > ?
				ORDER BY memory_id LIMIT 1`, []any{p.StoreID, cur.mid}
		case cur.inclusive:
			q, args = `SELECT path, memory_id FROM versions WHERE store_id = ? AND path >= ?
				ORDER BY path, memory_id LIMIT 1`, []any{p.StoreID, cur.path}
		default:
			q, args = asOfWalkNext, []any{p.StoreID, cur.path, cur.mid}
		}
		err := t.queryRow(ctx, "", "", func(r rowScanner) error { return r.Scan(&path, &mid) }, q, args...)
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			if nullRegion {
				nullRegion, cur.path, cur.mid, cur.inclusive = false, "", "", true
				continue
			}
			break
		}
		if err != nil {
			return nil, err
		}
		if !nullRegion && hasEnd && path.String >= end {
			break
		}
		cur.path, cur.mid, cur.inclusive = path.String, mid, false
		var v trove.MemoryVersion
		err = t.queryRow(ctx, "", "", func(r rowScanner) error { return scanVersion(r, &v) }, pick, mid, p.Seq, p.StoreID, path)
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			continue // created after S, gone at S, or at another path then
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if v.Content != nil {
			budget -= len(*v.Content)
		}
		if p.MaxBytes > 0 && budget < 0 {
			break
		}
	}
	return out, nil
}

// asOfWalkNext is asOfWalk's step: the store's first (path, memory ID)
// pair after the pair (?, ?), through versions_by_path. The comparison
// names seq too, with the largest seq there is, so that SQLite's seek
// (SeekGE on all four columns of the index) lands past every version of
// the pair at once. Written as (path, memory_id) > (?, ?), the seek used
// three columns, landed on the pair's first version and stepped over the
// rest one by one: a memory's whole history per step (2,523 virtual
// machine steps at 250 versions a memory, against 25 now), most of the
// cost of an old moment's as-of page at the hosted limits
// (docs/perf/scale.md; TestAsOfWalkSeeksPastThePair).
const asOfWalkNext = `SELECT path, memory_id FROM versions WHERE store_id = ? AND (path, memory_id, seq) > (?, ?, 9223372036854775807)
	ORDER BY path, memory_id LIMIT 1`

// asOfPickQuery reads, for asOfWalk, the memory's version as of S when it
// is at the pair's path and not a deletion (checked in the statement, so
// the content of a version not kept is never read); its arguments are the
// memory ID, S, the store ID and the pair's path. The probe returns the
// version's rowid, not its seq: the row its store_id check just read is
// then read again from the page cache, where a seq would take another seek,
// through versions_by_seq, to a page that at the hosted limits is seldom
// cached (docs/perf/scale.md).
func asOfPickQuery(content string) string {
	return `SELECT ` + versionCols + `, ` + content + ` FROM versions WHERE rowid =
		(SELECT rowid FROM versions WHERE memory_id = ? AND seq <= ? AND store_id = ? ORDER BY seq DESC LIMIT 1)
		AND path IS ? AND operation <> 'deleted'`
}

// MemoryInsertBatch inserts each memory and its version in turn: SQLite
// statements run in-process, so a loop costs what one statement would.
func (t *tx) MemoryInsertBatch(ctx context.Context, ms []*trove.Memory, vs []*trove.MemoryVersion) error {
	if len(ms) != len(vs) {
		return fmt.Errorf("sqlite: MemoryInsertBatch of %d memories with %d versions", len(ms), len(vs))
	}
	for i := range ms {
		if err := t.MemoryInsert(ctx, ms[i]); err != nil {
			return err
		}
		if err := t.VersionInsert(ctx, vs[i]); err != nil {
			return err
		}
	}
	return nil
}
