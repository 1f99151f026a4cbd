package sqlite

import (
	"context"
	"database/sql"
)

// The statements that apply memories_search_queue to memories_search
// (migration 0010): delete the entries of the queued rowids the index
// holds, index the queued rowids' current memories rows in rowid order (so
// that FTS5 appends them to one segment), empty the queue.
const (
	searchQueued     = `SELECT EXISTS (SELECT 1 FROM memories_search_queue)`
	searchSyncDelete = `DELETE FROM memories_search WHERE rowid IN (SELECT rowid FROM memories_search_queue WHERE indexed)`
	searchSyncInsert = `INSERT INTO memories_search (rowid, path, content, store_id, memory_id, path_key)
		SELECT m.rowid, m.path, m.content, m.store_id, m.id, m.path
		FROM memories_search_queue q JOIN memories m ON m.rowid = q.rowid ORDER BY q.rowid`
	searchSyncDequeue = `DELETE FROM memories_search_queue`
	searchMerge       = `INSERT INTO memories_search (memories_search, rank) VALUES ('merge', ?)`
)

// searchMergePages is how many pages of FTS5 merge work syncSearch asks
// for per memory it indexed. FTS5's automerge does merge work in
// proportion to the leaf pages it writes; when every write was a segment
// of its own (0007) that was at least a page per write, and the index
// stayed at a handful of segments. Written once per group, a group's
// memories share pages, automerge does less, and after 10,000 writes at 16
// writers the index held 10–20 segments instead of 7, which made a query
// for a frequent word 2–3 times slower. This extra work (a few pages per
// memory) keeps the segment count, and query latency, where it was.
const searchMergePages = 8

// syncSearch brings memories_search in step with memories on the writer
// connection, inside the current transaction: the committer calls it right
// before each group's COMMIT, and MemorySearch in a Write before it
// searches. Writes only queue their changes (0010's triggers) because FTS5
// writes a new index segment at every statement savepoint, and every write
// to memories opens one: applied here, once per group, a group's changes
// become one segment. It costs one lookup in an empty table when the group
// changed no memory.
func syncSearch(q querier, stmts *stmtCache) error {
	ctx := context.Background()
	var queued bool
	st, err := stmts.get(searchQueued)
	switch {
	case err != nil:
	case st != nil:
		err = st.QueryRowContext(ctx).Scan(&queued)
	default:
		err = q.QueryRowContext(ctx, searchQueued).Scan(&queued)
	}
	if err != nil || !queued {
		return translate(err)
	}
	var indexed int64
	for _, query := range []string{searchSyncDelete, searchSyncInsert, searchSyncDequeue, searchMerge} {
		var args []any
		if query == searchMerge {
			if indexed == 0 {
				continue
			}
			args = []any{searchMergePages * indexed}
		}
		var res sql.Result
		st, err := stmts.get(query)
		switch {
		case err != nil:
		case st != nil:
			res, err = st.ExecContext(ctx, args...)
		default:
			res, err = q.ExecContext(ctx, query, args...)
		}
		if err == nil && query == searchSyncInsert {
			indexed, err = res.RowsAffected()
		}
		if err != nil {
			return translate(err)
		}
	}
	return nil
}
