package postgres

import (
	"context"
	"strings"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// searchScore is the relevance of a memory for the tsquery q: ts_rank over
// its search vector cvec (path words weigh A, content words D), as float8
// so that the value a cursor carries compares exactly with the one
// recomputed.
const searchScore = `ts_rank(cvec, q)::float8`

// searchCandidates is a FROM item of every memory's ID (cid) and search
// vector (cvec) that may match the tsquery $1: from memories_fts (GIN) for
// the memories not in memories_search_queue, whose stored vectors are
// current, and computed from the row for the queued ones, whose stored
// vectors are stale or missing (migration 0018; search_index.go). So the
// vectors are those of the snapshot's memory rows, whatever the indexer
// has done: every write the snapshot holds is found, no deleted or
// replaced text is. OFFSET 0 keeps each vector computed once.
const searchCandidates = `(
	SELECT f.memory_id AS cid, f.search AS cvec FROM memories_fts f
	WHERE f.search @@ to_tsquery('simple', $1)
		AND NOT EXISTS (SELECT 1 FROM memories_search_queue u WHERE u.memory_id = f.memory_id)
	UNION ALL
	SELECT cid, cvec FROM (
		SELECT m.id AS cid, trove_search_vector(m.path, m.content) AS cvec FROM memories m
		WHERE m.id IN (SELECT memory_id FROM memories_search_queue) OFFSET 0
	) queued WHERE cvec @@ to_tsquery('simple', $1)
) c`

// tsQuery returns the to_tsquery text of q: every word a quoted lexeme
// (' and \ escaped, though words hold only letters, digits and marks, see
// trove.SearchWords, so no byte of user input reaches tsquery syntax), the
// words of a phrase joined by <-> (followed by), ":*" after a prefix word,
// terms AND-ed with &.
func tsQuery(q trove.SearchQuery) string {
	var b strings.Builder
	for i, t := range q.Terms {
		if i > 0 {
			b.WriteString(" & ")
		}
		b.WriteByte('(')
		for k, w := range t.Words {
			if k > 0 {
				b.WriteString(" <-> ")
			}
			b.WriteByte('\'')
			b.WriteString(strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(w))
			b.WriteByte('\'')
			if t.Prefix && k == len(t.Words)-1 {
				b.WriteString(":*")
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}

// MemorySearch matches the memories' search vectors (searchCandidates:
// memories_fts through its GIN index, and the queued memories' computed)
// against the tsquery of p.Query, filtered by store and prefix, ordered by
// rank. Any snapshot will do: it needs no ReadSearch.
func (t *tx) MemorySearch(ctx context.Context, p storage.MemorySearchParams) ([]storage.MemorySearchHit, error) {
	if len(p.Query.Terms) == 0 {
		return []storage.MemorySearchHit{}, nil
	}
	var w where
	w.args = append(w.args, tsQuery(p.Query)) // $1, the FROM item q below
	w.add("cid = id")
	if len(p.StoreIDs) > 0 {
		w.add("store_id IN (SELECT id FROM stores WHERE workspace_id = ? AND id = ANY(?))", p.WorkspaceID, p.StoreIDs)
	} else {
		w.add("store_id IN (SELECT id FROM stores WHERE workspace_id = ? AND archived_at IS NULL)", p.WorkspaceID)
	}
	if p.Prefix != "" {
		w.add("path >= ?", p.Prefix)
		if up, ok := prefixUpper(p.Prefix); ok {
			w.add("path < ?", up)
		}
		w.add("starts_with(path, ?)", p.Prefix)
	}
	if p.After != nil {
		w.add("("+searchScore+" < ? OR ("+searchScore+" = ? AND id > ?))", p.After.Score, p.After.Score, p.After.ID)
	}
	sql := "SELECT " + memColsFull + ", " + searchScore + " FROM " + searchCandidates + ", memories, to_tsquery('simple', $1) q WHERE " +
		w.sql() + " ORDER BY 10 DESC, id" + w.limit(p.Limit)
	rows, err := t.query(ctx, sql, w.args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []storage.MemorySearchHit{}
	budget := p.MaxBytes
	for rows.Next() {
		if p.MaxBytes > 0 && budget < 0 {
			break // the hit before took the contents past MaxBytes
		}
		var h storage.MemorySearchHit
		var content []byte
		m := &h.Memory
		if err := rows.Scan(&m.ID, &m.StoreID, &m.Path, &content, &m.SizeBytes, &m.SHA256, &m.VersionID, &m.CreatedAt, &m.UpdatedAt, &h.Score); err != nil {
			return nil, translate(err)
		}
		c := string(content)
		m.Content = &c
		m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
		out = append(out, h)
		budget -= len(c)
	}
	return out, translate(rows.Err())
}
