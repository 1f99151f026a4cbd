package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// The two halves of a search (migrations 0018 and 0020; search_index.go),
// each ranking its own matches and keeping the page's limit, formatted with
// the half's own filters (%[1]s: " AND …", the store condition, and for
// searchIndexed searchNotQueued; MemorySearch leaves out what filters
// nothing), the further conditions (%[2]s, on the half's memory ID and
// score) and the LIMIT (%[3]s); $1 is the tsquery. searchIndexed reads
// memories_fts through its GIN index for the memories not in
// memories_search_queue, whose stored vectors are
// current, without reading a memories row; searchQueued computes the
// vectors of the queued ones, which are stale or missing, from their rows
// (OFFSET 0 keeps each computed once). So the vectors are those of the
// snapshot's memory rows, whatever the indexer has done: every write the
// snapshot holds is found, no deleted or replaced text is. The score is
// ts_rank as float8, so that the value a cursor carries compares exactly
// with the one recomputed. Apart, the indexed half can run in parallel
// workers (the functions are PARALLEL SAFE since 0020) and limit itself;
// under one UNION ALL's sort neither happened (twice the bare statement's
// time for a word in 1 M memories).
const (
	searchIndexed = `(SELECT f.memory_id AS cid, ts_rank(f.search, q)::float8 AS score
	FROM memories_fts f, to_tsquery('simple', $1) q
	WHERE f.search @@ q%[1]s%[2]s
	ORDER BY score DESC, cid%[3]s)`
	// searchNotQueued is searchIndexed's condition that the memory is not
	// queued (its stored vector is current).
	searchNotQueued = `
		AND NOT EXISTS (SELECT 1 FROM memories_search_queue u WHERE u.memory_id = f.memory_id)`
	searchQueued = `(SELECT cid, ts_rank(cvec, q)::float8 AS score FROM (
		SELECT m.id AS cid, trove_search_vector(m.path, m.content) AS cvec FROM memories m
		WHERE m.id IN (SELECT memory_id FROM memories_search_queue)%[1]s OFFSET 0
	) queued, to_tsquery('simple', $1) q
	WHERE cvec @@ q%[2]s
	ORDER BY score DESC, cid%[3]s)`
)

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

// searchFilters reports, for a search of the stores the condition stores
// names ({col} their ID column; $2 the workspace, $3 the named stores, if
// any: args), whether the search must exclude queued memories (some memory is queued: the
// anti-join with memories_search_queue and the queued half) and filter the
// index's matches by store (some store outside the searched ones holds a
// live memory; memory_count is exact, kept in the memories' own
// transactions). Each filter costs every match a probe: 0.14 s and 0.07 s
// of a frequent word's 0.5 s search across 1 M memories
// (docs/perf/search.md). Only in a Read are both known to hold for the
// search's statement: its snapshot (REPEATABLE READ) is the one this reads,
// and the indexer empties the queue in the transactions that bring
// memories_fts up to date. Elsewhere (a Write, READ COMMITTED, where the
// next statement may see later commits) both are kept.
func (t *tx) searchFilters(ctx context.Context, stores string, args []any) (queued, foreign bool, err error) {
	if t.beginSQL != beginRead {
		return true, true, nil
	}
	// The search's $2 and $3 are this statement's $1 and $2.
	searched := strings.NewReplacer("{col}", "s.id", "$2", "$1", "$3", "$2").Replace(stores)
	err = t.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM memories_search_queue),
		EXISTS (SELECT 1 FROM stores s WHERE s.memory_count > 0 AND NOT (`+searched+`))`, args...).Scan(&queued, &foreign)
	return queued, foreign, translate(err)
}

// MemorySearch ranks the matches of p.Query's tsquery in the stores p
// names (searchIndexed and searchQueued, each cut to the page), filtered by
// prefix and cursor, and reads the page's memories. Only a prefix makes it
// read memories rows (their paths) before the limit. Any snapshot will do:
// it needs no ReadSearch.
func (t *tx) MemorySearch(ctx context.Context, p storage.MemorySearchParams) ([]storage.MemorySearchHit, error) {
	if len(p.Query.Terms) == 0 {
		return []storage.MemorySearchHit{}, nil
	}
	// $1 the tsquery, $2 the workspace, $3 the stores named; stores is the
	// condition on a store ID column {col}, written once and used by
	// reference. Named stores are also compared as an array on the column
	// itself, so that its statistics tell the planner the stores' share of
	// the rows: through the semi-join alone it guessed a few hundred of a
	// store's 10,000 and read them all through memories_fts_store for a
	// word the GIN index would have found faster.
	stores := "{col} IN (SELECT id FROM stores WHERE workspace_id = $2 AND archived_at IS NULL)"
	storeArgs := []any{p.WorkspaceID}
	if len(p.StoreIDs) > 0 {
		stores = "{col} = ANY($3) AND {col} IN (SELECT id FROM stores WHERE workspace_id = $2)"
		storeArgs = append(storeArgs, p.StoreIDs)
	}
	on := func(col string) string { return strings.ReplaceAll(stores, "{col}", col) }
	queued, foreign, err := t.searchFilters(ctx, stores, storeArgs)
	if err != nil {
		return nil, err
	}
	w := where{args: []any{tsQuery(p.Query)}}
	if queued || foreign || p.Prefix != "" { // the statement names the stores
		w.args = append(w.args, storeArgs...)
	}
	// The further conditions, on {id} and {score}, each half's own.
	if p.Prefix != "" {
		paths, args := "path >= ?", []any{p.Prefix}
		if up, ok := prefixUpper(p.Prefix); ok {
			paths, args = paths+" AND path < ?", append(args, up)
		}
		paths, args = paths+" AND starts_with(path, ?)", append(args, p.Prefix)
		w.add("{id} IN (SELECT id FROM memories WHERE "+on("store_id")+" AND "+paths+")", args...)
	}
	if p.After != nil {
		w.add("({score} < ? OR ({score} = ? AND {id} > ?))", p.After.Score, p.After.Score, p.After.ID)
	}
	cond := ""
	if len(w.conds) > 0 {
		cond = " AND " + w.sql()
	}
	limit := w.limit(p.Limit)
	// half fills a half's template: its own filters (" AND …"), then the
	// further conditions on its ID and score, then the limit.
	half := func(q, filters, id, score string) string {
		return fmt.Sprintf(q, filters, strings.NewReplacer("{id}", id, "{score}", score).Replace(cond), limit)
	}
	var indexedFilters string
	if foreign {
		indexedFilters += " AND " + on("f.store_id")
	}
	if queued {
		indexedFilters += searchNotQueued
	}
	ranked := half(searchIndexed, indexedFilters, "f.memory_id", "ts_rank(f.search, q)::float8")
	if queued {
		ranked += " UNION ALL " + half(searchQueued, " AND "+on("m.store_id"), "cid", "ts_rank(cvec, q)::float8")
	}
	sql := "SELECT " + memColsFull + ", score FROM (SELECT cid, score FROM (" + ranked +
		") s ORDER BY score DESC, cid" + limit + ") top JOIN memories ON id = cid ORDER BY score DESC, id"
	rows, err := t.queryPlannedEach(ctx, sql, w.args...)
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
