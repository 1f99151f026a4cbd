package sqlite

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// searchScore is the relevance of a memories_search row: BM25 with a match
// in the path weighing four times one in the content, negated so that
// higher is better (SQLite's bm25 is lower for a better match). The
// scoped columns spath and scontent (migration 0019) weigh as path and
// content do; a query matches either those or the plain ones, never both.
const searchScore = `-bm25(memories_search, 4.0, 1.0, 0.0, 0.0, 0.0, 4.0, 1.0)`

// ftsQuery returns the FTS5 query of q: every term a double-quoted string
// (a phrase when it has several words), "*" after it for a prefix term,
// all AND-ed. Words hold only letters, digits and marks
// (trove.SearchWords), so no byte of user input reaches FTS5 syntax; a '"'
// is doubled anyway, as FTS5 quoting asks, should that rule ever change.
//
// Without store keys the terms are looked for in the path and content
// columns. With them, in the scoped columns: each word prefixed with a
// store's tag (scopeTag), the terms of each store AND-ed, the stores
// OR-ed, so FTS5 reads only those stores' entries.
func ftsQuery(q trove.SearchQuery, keys []int64) string {
	var b strings.Builder
	terms := func(tag string) {
		b.WriteByte('(')
		for i, t := range q.Terms {
			if i > 0 {
				b.WriteString(" AND ")
			}
			b.WriteByte('"')
			for j, w := range t.Words {
				if j > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(tag)
				b.WriteString(strings.ReplaceAll(w, `"`, `""`))
			}
			b.WriteByte('"')
			if t.Prefix {
				b.WriteByte('*')
			}
		}
		b.WriteByte(')')
	}
	if len(keys) == 0 {
		b.WriteString("{path content} : ")
		terms("")
		return b.String()
	}
	b.WriteString("{spath scontent} : (")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" OR ")
		}
		terms(scopeTag(k))
	}
	b.WriteByte(')')
	return b.String()
}

// MemorySearch ranks the matches in memories_search alone, then reads only
// the page's memories: a query that matches thousands of memories reads
// none of their 1 KiB rows. Where the time goes (docs/perf/search.md): FTS5
// computes bm25 for every match before any LIMIT applies (a docsize row
// read per match), and reading an UNINDEXED column of a match (store_id,
// memory_id, path_key) costs another row read per match, about as much as
// scoring it. So the ranking statement reads none of them unless it must:
//
//   - store_id only when some memory of the database lies outside the
//     searched stores (searchScoped: one look at the stores' exact
//     memory_count) and the searched stores are many (below); a credential
//     that sees the only store, or every store of the only workspace,
//     filters nothing. A few stores (named ones, or every store of a
//     workspace among others) are not filtered by store_id but searched in
//     the scoped columns, under their keys (ftsQuery, migration 0019):
//     FTS5 then reads only their memories' entries and bm25 counts only
//     those, so a search of one store costs the same however many other
//     stores the database holds. "A few" is up to maxScopedPhrases
//     stores × terms.
//   - path_key only for a path prefix.
//   - memory_id, the tie-break of equal scores, only for the top rows:
//     see rankSearch.
//
// Store IDs are passed as one JSON array (json_each), so the statement
// text, and its cached preparation, does not depend on how many there are.
//
// The index may lag the memory rows (searchindex.go): MemorySearch runs in
// ReadSearch's snapshots, where it does not, and in a Write, where it first
// applies the queue in the group's transaction; in a plain Read it fails
// (EINTERNAL).
func (t *tx) MemorySearch(ctx context.Context, p storage.MemorySearchParams) ([]storage.MemorySearchHit, error) {
	switch {
	case t.stores != nil: // a Write
		if err := t.searchInWrite(ctx); err != nil {
			return nil, err
		}
	case !t.searchFresh:
		return nil, errSearchNotFresh
	}
	if len(p.Query.Terms) == 0 {
		return []storage.MemorySearchHit{}, nil
	}
	w, ok, err := t.searchWhere(ctx, p)
	if err != nil || !ok {
		return []storage.MemorySearchHit{}, err
	}
	top, err := t.rankSearch(ctx, w, p.After, p.Limit)
	if err != nil || len(top) == 0 {
		return []storage.MemorySearchHit{}, err
	}
	if p.MaxBytes > 0 { // the contents read are the page's, by their sizes
		n := p.MaxBytes
		for i, r := range top {
			if n -= r.size; n < 0 {
				top = top[:i+1]
				break
			}
		}
	}
	return t.searchPage(ctx, top)
}

// searchWhere returns the conditions of p's search on memories_search: the
// MATCH (ftsQuery, on the scoped columns or the plain ones), the store
// filter when the plain columns are read for some stores only, and the
// path prefix. ok is false when no store searched holds a memory.
func (t *tx) searchWhere(ctx context.Context, p storage.MemorySearchParams) (w whereBuilder, ok bool, err error) {
	var ids string
	if len(p.StoreIDs) > 0 {
		b, err := json.Marshal(p.StoreIDs)
		if err != nil {
			return w, false, err
		}
		ids = string(b)
	}
	scoped, err := t.searchScoped(ctx, p.WorkspaceID, ids)
	if err != nil {
		return w, false, err
	}
	// Filtered by store: on the scoped columns under the stores' keys when
	// the stores times the terms stay within maxScopedPhrases, else on the
	// plain columns by store_id.
	var keys []int64
	if scoped {
		most := maxScopedPhrases / len(p.Query.Terms)
		if keys, err = t.searchStoreKeys(ctx, p.WorkspaceID, ids, most+1); err != nil || len(keys) == 0 {
			return w, false, err
		}
		if len(keys) > most {
			keys = nil
		}
	}
	w.add("memories_search MATCH ?", ftsQuery(p.Query, keys))
	switch {
	case !scoped || keys != nil:
	case ids == "":
		w.add("store_id IN (SELECT s.id FROM stores s WHERE s.workspace_id = ? AND s.archived_at IS NULL)", p.WorkspaceID)
	default:
		w.add("store_id IN (SELECT s.id FROM stores s WHERE s.workspace_id = ? AND s.id IN (SELECT value FROM json_each(?)))", p.WorkspaceID, ids)
	}
	if p.Prefix != "" {
		w.add("path_key >= ?", p.Prefix)
		if end, ok := prefixEnd(p.Prefix); ok {
			w.add("path_key < ?", end)
		}
	}
	return w, true, nil
}

// maxScopedPhrases bounds the phrases a search of named stores asks the
// scoped columns for: each store's terms are phrases of their own, and
// bm25 scores every match against every phrase of the query, so naming
// many stores with many terms costs (matches × stores × terms): naming 100
// of 101 stores of 50 memories with 8 terms took 0.79 s, the store_id
// filter 0.11 s. Past the
// bound the plain columns are searched and the matches filtered by store,
// which costs what every store's matches do. 64 keeps a session's 8
// stores with a query of 8 terms on the scoped columns.
const maxScopedPhrases = 64

// searchStoreKeys returns the search keys (store_search_keys) of at most
// limit of the searched stores that hold memories: of ids (a JSON array)
// that belong to workspaceID, or, when ids is "", of the workspace's
// stores that are not archived.
func (t *tx) searchStoreKeys(ctx context.Context, workspaceID, ids string, limit int) ([]int64, error) {
	q := `SELECT k.key FROM stores s JOIN store_search_keys k ON k.store_id = s.id
		WHERE s.workspace_id = ? AND s.memory_count > 0 AND s.id IN (SELECT value FROM json_each(?)) LIMIT ?`
	args := []any{workspaceID, ids, limit}
	if ids == "" {
		q = `SELECT k.key FROM stores s JOIN store_search_keys k ON k.store_id = s.id
		WHERE s.workspace_id = ? AND s.memory_count > 0 AND s.archived_at IS NULL LIMIT ?`
		args = []any{workspaceID, limit}
	}
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			return nil, translate(err)
		}
		out = append(out, k)
	}
	return out, translate(rows.Err())
}

// searchScoped reports whether the search of the given stores (ids, a JSON
// array; "" for every non-archived store of the workspace) must filter the
// index's matches by store: whether a store outside them holds a live
// memory. memory_count is exact (migration 0002's triggers, in the same
// transaction as memories; memories_search is in step in MemorySearch's
// snapshots), so when no store outside
// holds one, every row of the index is a memory of a searched store. The
// scan of stores stops at the first store outside that holds memories.
func (t *tx) searchScoped(ctx context.Context, workspaceID, ids string) (bool, error) {
	var q string
	args := []any{workspaceID}
	if ids != "" {
		q = `SELECT EXISTS (SELECT 1 FROM stores WHERE memory_count > 0 AND NOT (workspace_id = ? AND id IN (SELECT value FROM json_each(?))))`
		args = append(args, ids)
	} else {
		q = `SELECT EXISTS (SELECT 1 FROM stores WHERE memory_count > 0 AND NOT (workspace_id = ? AND archived_at IS NULL))`
	}
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var scoped bool
	if rows.Next() {
		if err := rows.Scan(&scoped); err != nil {
			return false, translate(err)
		}
	}
	return scoped, translate(rows.Err())
}

// searchRanked is a match's place in the ranking: the memory's rowid (the
// index's rowid), score and ID.
type searchRanked struct {
	rowid int64
	score float64
	id    string
	size  int // the memory's content bytes
}

// rankSearch returns the first limit matches of w (all when limit <= 0)
// strictly after after, by score descending then memory ID ascending.
//
// The ranking statement sorts by score alone (SQLite keeps the best k in
// its sorter) and reads the memory ID of those k only. When it returns k
// rows, the ones scored like the last might be only some of the rows with
// that score, so they are set aside: every row scored higher is there, and
// those are ranked exactly. When after setting them aside (and dropping
// the rows at or before after) fewer than limit remain, it runs again with
// a k four times larger. Equal scores are common (memories of the same
// length with the same counts of a word), so k starts at 2 × limit + 1: it
// runs again only when a run of equal scores spans more than limit rows
// around the page's end.
func (t *tx) rankSearch(ctx context.Context, w whereBuilder, after *storage.SearchPosition, limit int) ([]searchRanked, error) {
	ranked := `SELECT rowid AS r, ` + searchScore + ` AS score FROM memories_search` + w.String()
	args := slices.Clone(w.args)
	if after != nil {
		// LIMIT -1 keeps SQLite from flattening the subquery into this
		// one, which would compute the score twice per match.
		ranked = `SELECT r, score FROM (` + ranked + ` LIMIT -1) WHERE score <= ?`
		args = append(args, after.Score)
	}
	q := `SELECT top.r, top.score, m.id, m.size_bytes FROM (` + ranked + ` ORDER BY score DESC LIMIT ?) top JOIN memories m ON m.rowid = top.r`
	k := -1
	if limit > 0 {
		k = 2*limit + 1
	}
	for {
		rows, err := t.query(ctx, q, append(args, k)...)
		if err != nil {
			return nil, err
		}
		var got []searchRanked
		for rows.Next() {
			var r searchRanked
			if err := rows.Scan(&r.rowid, &r.score, &r.id, &r.size); err != nil {
				rows.Close()
				return nil, translate(err)
			}
			got = append(got, r)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, translate(err)
		}
		slices.SortFunc(got, func(a, b searchRanked) int {
			return cmp.Or(cmp.Compare(b.score, a.score), strings.Compare(a.id, b.id))
		})
		complete := k < 0 || len(got) < k
		if !complete {
			last := got[len(got)-1].score
			for len(got) > 0 && got[len(got)-1].score == last {
				got = got[:len(got)-1]
			}
		}
		if after != nil {
			got = slices.DeleteFunc(got, func(r searchRanked) bool { return r.score == after.Score && r.id <= after.ID })
		}
		if complete || len(got) >= limit {
			if limit > 0 && len(got) > limit {
				got = got[:limit]
			}
			return got, nil
		}
		k *= 4
	}
}

// searchPage reads the memories of top, in top's order.
func (t *tx) searchPage(ctx context.Context, top []searchRanked) ([]storage.MemorySearchHit, error) {
	rowids := make([]int64, len(top))
	at := make(map[int64]int, len(top))
	for i, r := range top {
		rowids[i] = r.rowid
		at[r.rowid] = i
	}
	b, err := json.Marshal(rowids)
	if err != nil {
		return nil, err
	}
	rows, err := t.query(ctx, `SELECT m.rowid, m.id, m.store_id, m.path, m.size_bytes, m.sha256, m.version_id, m.created_at, m.updated_at, m.content
		FROM memories m WHERE m.rowid IN (SELECT value FROM json_each(?))`, string(b))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]storage.MemorySearchHit, len(top))
	n := 0
	for rows.Next() {
		var rowid int64
		var h storage.MemorySearchHit
		if err := scanSearchHit(rows, &rowid, &h); err != nil {
			return nil, translate(err)
		}
		i := at[rowid]
		h.Score = top[i].score
		out[i] = h
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	if n != len(top) { // the same snapshot as the ranking: cannot happen
		return nil, fmt.Errorf("sqlite: search: %d of %d ranked memories read", n, len(top))
	}
	return out, nil
}

func scanSearchHit(r rowScanner, rowid *int64, h *storage.MemorySearchHit) error {
	var created, updated int64
	var content string
	m := &h.Memory
	if err := r.Scan(rowid, &m.ID, &m.StoreID, &m.Path, &m.SizeBytes, &m.SHA256, &m.VersionID, &created, &updated, &content); err != nil {
		return err
	}
	m.CreatedAt, m.UpdatedAt = fromMicros(created), fromMicros(updated)
	m.Content = &content
	return nil
}
