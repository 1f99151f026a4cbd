package sqlite

import "context"

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
)

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
	for _, query := range []string{searchSyncDelete, searchSyncInsert, searchSyncDequeue} {
		st, err := stmts.get(query)
		switch {
		case err != nil:
		case st != nil:
			_, err = st.ExecContext(ctx)
		default:
			_, err = q.ExecContext(ctx, query)
		}
		if err != nil {
			return translate(err)
		}
	}
	return nil
}
