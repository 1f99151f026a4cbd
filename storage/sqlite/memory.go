package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const memoryCols = `id, store_id, path, size_bytes, sha256, version_id, created_at, updated_at`

// memorySelect returns the SELECT list, with content or NULL in last place.
func memorySelect(withContent bool) string {
	if withContent {
		return `SELECT ` + memoryCols + `, content FROM memories`
	}
	return `SELECT ` + memoryCols + `, NULL FROM memories`
}

func scanMemory(r rowScanner, m *trove.Memory) error {
	var created, updated int64
	var content sql.NullString
	if err := r.Scan(&m.ID, &m.StoreID, &m.Path, &m.SizeBytes, &m.SHA256, &m.VersionID, &created, &updated, &content); err != nil {
		return err
	}
	m.CreatedAt, m.UpdatedAt = fromMicros(created), fromMicros(updated)
	m.Content = nil
	if content.Valid {
		c := content.String
		m.Content = &c
	}
	return nil
}

// MemoryInsert inserts m with content *m.Content. EPATHCONFLICT if a live
// memory of the store already has m.Path.
func (t *tx) MemoryInsert(ctx context.Context, m *trove.Memory) error {
	if m.Content == nil {
		return errors.New("sqlite: MemoryInsert with nil Content")
	}
	_, err := t.exec(ctx, `INSERT INTO memories (`+memoryCols+`, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.StoreID, m.Path, m.SizeBytes, m.SHA256, m.VersionID, micros(m.CreatedAt), micros(m.UpdatedAt), *m.Content)
	return t.pathConflict(ctx, err, m.StoreID, m.Path)
}

// pathConflict completes an EPATHCONFLICT error with the memory that holds
// path (the statement failed alone; the transaction is still usable).
func (t *tx) pathConflict(ctx context.Context, err error, storeID, path string) error {
	if trove.ErrorCode(err) != trove.EPATHCONFLICT {
		return err
	}
	e := &trove.Error{Code: trove.EPATHCONFLICT, Message: fmt.Sprintf("a memory already exists at path %q", path),
		ConflictingPath: path, Err: err}
	var id string
	if qerr := t.queryRow(ctx, "memory at path", path, func(r rowScanner) error { return r.Scan(&id) },
		`SELECT id FROM memories WHERE store_id = ? AND path = ?`, storeID, path); qerr == nil {
		e.ConflictingMemoryID = id
	}
	return e
}

// MemoryGet returns a live memory of storeID, with Content filled when
// withContent; ENOTFOUND if absent or in another store.
func (t *tx) MemoryGet(ctx context.Context, storeID, id string, withContent bool) (*trove.Memory, error) {
	var m trove.Memory
	err := t.queryRow(ctx, "memory", id, func(r rowScanner) error { return scanMemory(r, &m) },
		memorySelect(withContent)+` WHERE id = ? AND store_id = ?`, id, storeID)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// MemoryGetByPath returns the live memory at path, or ENOTFOUND.
func (t *tx) MemoryGetByPath(ctx context.Context, storeID, path string, withContent bool) (*trove.Memory, error) {
	var m trove.Memory
	err := t.queryRow(ctx, "memory at path", path, func(r rowScanner) error { return scanMemory(r, &m) },
		memorySelect(withContent)+` WHERE store_id = ? AND path = ?`, storeID, path)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// MemoryUpdate replaces path, content, size, sha256, version_id and
// updated_at of m.ID in m.StoreID. ENOTFOUND if there is no such memory,
// EPATHCONFLICT if another memory has m.Path.
func (t *tx) MemoryUpdate(ctx context.Context, m *trove.Memory) error {
	if m.Content == nil {
		return errors.New("sqlite: MemoryUpdate with nil Content")
	}
	err := t.execOne(ctx, "memory", m.ID,
		`UPDATE memories SET path = ?, content = ?, size_bytes = ?, sha256 = ?, version_id = ?, updated_at = ?
		 WHERE id = ? AND store_id = ?`,
		m.Path, *m.Content, m.SizeBytes, m.SHA256, m.VersionID, micros(m.UpdatedAt), m.ID, m.StoreID)
	return t.pathConflict(ctx, err, m.StoreID, m.Path)
}

// MemoryDelete deletes a live memory (its versions stay); ENOTFOUND if
// there is none.
func (t *tx) MemoryDelete(ctx context.Context, storeID, id string) error {
	return t.execOne(ctx, "memory", id, `DELETE FROM memories WHERE id = ? AND store_id = ?`, id, storeID)
}

// MemoryCount counts a store's live memories (0 for an unknown store): it
// reads the counter the memories triggers keep (migration 0002).
func (t *tx) MemoryCount(ctx context.Context, storeID string) (int, error) {
	var n int
	err := t.queryRow(ctx, "memory store", storeID, func(r rowScanner) error { return r.Scan(&n) },
		`SELECT coalesce((SELECT memory_count FROM stores WHERE id = ?), 0)`, storeID)
	return n, err
}

// ancestors returns the proper ancestor paths of p by whole segments:
// "/a/b/c" → ["/a", "/a/b"].
func ancestors(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// MemoryFindOverlap returns a live memory other than excludeID whose path
// equals path, is an ancestor of it or a descendant of it (whole segments),
// or nil. The same path or the deepest ancestor is preferred to a
// descendant. It is one statement of two lookups driven by the
// (store_id, path) index: an IN list of the path and its ancestors, and the
// range [path+"/", path+"0") ('0' is '/'+1) for descendants; a table row is
// read only for a match.
func (t *tx) MemoryFindOverlap(ctx context.Context, storeID, path, excludeID string) (*trove.Memory, error) {
	q := overlapQuery(storeID, path, excludeID)
	return t.findOne(ctx, q.sql, q.args...)
}

// sqlQuery is a statement with its arguments.
type sqlQuery struct {
	sql  string
	args []any
}

// overlapQuery returns MemoryFindOverlap's statement: the memory whose ID
// is the first found of the path and its ancestors (deepest first), else of
// the first descendant (coalesce evaluates the second lookup only when the
// first finds nothing).
func overlapQuery(storeID, path, excludeID string) sqlQuery {
	cands := append(ancestors(path), path)
	args := make([]any, 0, len(cands)+6)
	args = append(args, storeID)
	for _, c := range cands {
		args = append(args, c)
	}
	args = append(args, excludeID, storeID, path+"/", path+"0", excludeID)
	ph := strings.Repeat("?, ", len(cands)-1) + "?"
	return sqlQuery{memorySelect(false) + ` WHERE id = coalesce(
		(SELECT id FROM memories WHERE store_id = ? AND path IN (` + ph + `) AND id <> ? ORDER BY path DESC LIMIT 1),
		(SELECT id FROM memories WHERE store_id = ? AND path >= ? AND path < ? AND id <> ? ORDER BY path LIMIT 1))`, args}
}

// findOne returns the first memory of a query, or nil.
func (t *tx) findOne(ctx context.Context, query string, args ...any) (*trove.Memory, error) {
	rows, err := t.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, translate(rows.Err())
	}
	var m trove.Memory
	if err := scanMemory(rows, &m); err != nil {
		return nil, translate(err)
	}
	return &m, nil
}

// prefixEnd returns the smallest string greater than every string that
// starts with prefix (prefix with its last byte incremented, trailing 0xff
// bytes dropped), or ok=false when there is none.
func prefixEnd(prefix string) (end string, ok bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// MemoryList lists live memories in ascending bytewise path order whose path
// starts with Prefix and is >= From, as one range scan of the
// (store_id, path) index. Limit <= 0 means no limit.
func (t *tx) MemoryList(ctx context.Context, p storage.MemoryListParams) ([]trove.Memory, error) {
	q := memoryListQuery(p)
	rows, err := t.query(ctx, q.sql, q.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.Memory{}
	for rows.Next() {
		var m trove.Memory
		if err := scanMemory(rows, &m); err != nil {
			return nil, translate(err)
		}
		out = append(out, m)
	}
	return out, translate(rows.Err())
}

// memoryListQuery is MemoryList's statement: path >= max(Prefix, From) and
// path < prefixEnd(Prefix), in index order.
func memoryListQuery(p storage.MemoryListParams) sqlQuery {
	var w whereBuilder
	w.add("store_id = ?", p.StoreID)
	lo := max(p.Prefix, p.From)
	if lo != "" {
		w.add("path >= ?", lo)
	}
	if p.Prefix != "" {
		if end, ok := prefixEnd(p.Prefix); ok {
			w.add("path < ?", end)
		}
	}
	return sqlQuery{memorySelect(p.WithContent) + w.String() + ` ORDER BY path LIMIT ?`, append(w.args, limitArg(p.Limit))}
}
