package sqlite

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// searchScore is the relevance of a memories_search row: BM25 with a match
// in the path weighing four times one in the content, negated so that
// higher is better (SQLite's bm25 is lower for a better match).
const searchScore = `-bm25(memories_search, 4.0, 1.0)`

// ftsQuery returns the FTS5 query of q: every term a double-quoted string
// (a phrase when it has several words), "*" after it for a prefix term,
// all AND-ed. Words hold only letters, digits and marks
// (trove.SearchWords), so no byte of user input reaches FTS5 syntax; a '"'
// is doubled anyway, as FTS5 quoting asks, should that rule ever change.
func ftsQuery(q trove.SearchQuery) string {
	var b strings.Builder
	for i, t := range q.Terms {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(strings.Join(t.Words, " "), `"`, `""`))
		b.WriteByte('"')
		if t.Prefix {
			b.WriteByte('*')
		}
	}
	return b.String()
}

// MemorySearch ranks the matches in memories_search alone (filtered by
// its UNINDEXED store_id and path_key, ordered by score and memory_id, the
// LIMIT applied), then reads only those memories' rows: a query that
// matches thousands of memories reads none of their 1 KiB rows. Store IDs
// are passed as one JSON array (json_each), so the statement text, and its
// cached preparation, does not depend on how many there are.
func (t *tx) MemorySearch(ctx context.Context, p storage.MemorySearchParams) ([]storage.MemorySearchHit, error) {
	if len(p.Query.Terms) == 0 {
		return []storage.MemorySearchHit{}, nil
	}
	var w whereBuilder
	w.add("memories_search MATCH ?", ftsQuery(p.Query))
	if len(p.StoreIDs) > 0 {
		ids, err := json.Marshal(p.StoreIDs)
		if err != nil {
			return nil, err
		}
		w.add("store_id IN (SELECT s.id FROM stores s WHERE s.workspace_id = ? AND s.id IN (SELECT value FROM json_each(?)))", p.WorkspaceID, string(ids))
	} else {
		w.add("store_id IN (SELECT s.id FROM stores s WHERE s.workspace_id = ? AND s.archived_at IS NULL)", p.WorkspaceID)
	}
	if p.Prefix != "" {
		w.add("path_key >= ?", p.Prefix)
		if end, ok := prefixEnd(p.Prefix); ok {
			w.add("path_key < ?", end)
		}
	}
	if p.After != nil {
		w.add("("+searchScore+" < ? OR ("+searchScore+" = ? AND memory_id > ?))", p.After.Score, p.After.Score, p.After.ID)
	}
	q := `WITH top AS MATERIALIZED (SELECT memory_id, ` + searchScore + ` AS score FROM memories_search` + w.String() +
		` ORDER BY score DESC, memory_id LIMIT ?)
		SELECT m.id, m.store_id, m.path, m.size_bytes, m.sha256, m.version_id, m.created_at, m.updated_at, m.content, top.score
		FROM top JOIN memories m ON m.id = top.memory_id ORDER BY top.score DESC, top.memory_id`
	rows, err := t.query(ctx, q, append(w.args, limitArg(p.Limit))...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []storage.MemorySearchHit{}
	for rows.Next() {
		var h storage.MemorySearchHit
		if err := scanSearchHit(rows, &h); err != nil {
			return nil, translate(err)
		}
		out = append(out, h)
	}
	return out, translate(rows.Err())
}

func scanSearchHit(r rowScanner, h *storage.MemorySearchHit) error {
	var created, updated int64
	var content string
	m := &h.Memory
	if err := r.Scan(&m.ID, &m.StoreID, &m.Path, &m.SizeBytes, &m.SHA256, &m.VersionID, &created, &updated, &content, &h.Score); err != nil {
		return err
	}
	m.CreatedAt, m.UpdatedAt = fromMicros(created), fromMicros(updated)
	m.Content = &content
	return nil
}
