package sqlite

import (
	"context"
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
// then memory ID. Its cost does not grow with the store's history (docs/perf/scale.md):
//
//   - one memory (p.MemoryID): one probe of versions_by_memory_seq for the
//     memory's newest seq <= p.Seq;
//   - a moment in the newer half of the history (head − p.Seq <= p.Seq):
//     asOfRecent, a page of the live memories untouched since the moment
//     plus the memories the versions after it touched;
//   - an older moment: the newest seq per memory from the versions_by_seq
//     range up to the moment, then the version by versions_by_seq.
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
	if head-p.Seq <= p.Seq {
		return t.asOfRecent(ctx, p, content, &w)
	}
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
