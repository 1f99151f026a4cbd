package postgres

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const (
	memColsBasic = "id, store_id, path, NULL::bytea, size_bytes, sha256, version_id, created_at, updated_at"
	memColsFull  = "id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at"
)

func memCols(withContent bool) string {
	if withContent {
		return memColsFull
	}
	return memColsBasic
}

func scanMemory(r scanner) (*trove.Memory, error) {
	var m trove.Memory
	var content []byte
	if err := r.Scan(&m.ID, &m.StoreID, &m.Path, &content, &m.SizeBytes, &m.SHA256, &m.VersionID, &m.CreatedAt, &m.UpdatedAt); err != nil {
		return nil, err
	}
	if content != nil {
		c := string(content)
		m.Content = &c
	}
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return &m, nil
}

func contentBytes(c *string) []byte {
	if c == nil {
		return nil
	}
	b := []byte(*c)
	if b == nil {
		b = []byte{}
	}
	return b
}

// MemoryInsert inserts m. It returns EPATHCONFLICT (with the conflicting
// memory) when the store already has a memory at m.Path, and ENOTFOUND when
// the store does not exist. A path conflict leaves the transaction usable.
func (t *tx) MemoryInsert(ctx context.Context, m *trove.Memory) error {
	if m.Content == nil {
		return fmt.Errorf("postgres: MemoryInsert of %s without content", m.ID)
	}
	tag, err := t.exec(ctx, `INSERT INTO memories (id, store_id, path, content, size_bytes, sha256, version_id, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (store_id, path) DO NOTHING`,
		m.ID, m.StoreID, m.Path, contentBytes(m.Content), m.SizeBytes, m.SHA256, m.VersionID, m.CreatedAt, m.UpdatedAt)
	if err != nil {
		return translateFK(err, "memory store")
	}
	if tag.RowsAffected() == 0 {
		e := &trove.Error{Code: trove.EPATHCONFLICT, Message: fmt.Sprintf("a memory already exists at path %q", m.Path), ConflictingPath: m.Path}
		if err := t.queryRow(ctx, "SELECT id FROM memories WHERE store_id = $1 AND path = $2", m.StoreID, m.Path).Scan(&e.ConflictingMemoryID); err != nil && err != pgx.ErrNoRows {
			return translate(err)
		}
		return e
	}
	return nil
}

// translateFK is translate, with a foreign-key violation reported as
// ENOTFOUND of what.
func translateFK(err error, what string) error {
	if pgCode(err) == "23503" {
		return &trove.Error{Code: trove.ENOTFOUND, Message: what + " not found", Err: err}
	}
	return translate(err)
}

// MemoryGet returns a live memory of storeID, or ENOTFOUND.
func (t *tx) MemoryGet(ctx context.Context, storeID, id string, withContent bool) (*trove.Memory, error) {
	m, err := scanMemory(t.queryRow(ctx, "SELECT "+memCols(withContent)+" FROM memories WHERE id = $1 AND store_id = $2", id, storeID))
	if err == pgx.ErrNoRows {
		return nil, notFound("memory")
	}
	return m, translate(err)
}

// MemoryGetByPath returns the live memory at path, or ENOTFOUND.
func (t *tx) MemoryGetByPath(ctx context.Context, storeID, path string, withContent bool) (*trove.Memory, error) {
	m, err := scanMemory(t.queryRow(ctx, "SELECT "+memCols(withContent)+" FROM memories WHERE store_id = $1 AND path = $2", storeID, path))
	if err == pgx.ErrNoRows {
		return nil, notFound("memory")
	}
	return m, translate(err)
}

// MemoryUpdate replaces path, content, size, sha256, version_id and
// updated_at of m.ID. ENOTFOUND if it is not a live memory of m.StoreID;
// EPATHCONFLICT if another memory holds the new path.
func (t *tx) MemoryUpdate(ctx context.Context, m *trove.Memory) error {
	if m.Content == nil {
		return fmt.Errorf("postgres: MemoryUpdate of %s without content", m.ID)
	}
	tag, err := t.exec(ctx, `UPDATE memories SET path = $3, content = $4, size_bytes = $5, sha256 = $6, version_id = $7, updated_at = $8
		WHERE id = $1 AND store_id = $2`,
		m.ID, m.StoreID, m.Path, contentBytes(m.Content), m.SizeBytes, m.SHA256, m.VersionID, m.UpdatedAt)
	if err != nil {
		err = translate(err)
		if te, ok := err.(*trove.Error); ok && te.Code == trove.EPATHCONFLICT {
			te.Message = fmt.Sprintf("a memory already exists at path %q", m.Path)
			te.ConflictingPath = m.Path
		}
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound("memory")
	}
	return nil
}

// MemoryDelete deletes a live memory; ENOTFOUND if there is none.
func (t *tx) MemoryDelete(ctx context.Context, storeID, id string) error {
	tag, err := t.exec(ctx, "DELETE FROM memories WHERE id = $1 AND store_id = $2", id, storeID)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("memory")
	}
	return nil
}

// MemoryCount counts a store's live memories (0 for an unknown store): it
// reads the counter the memories trigger keeps (migration 0002).
func (t *tx) MemoryCount(ctx context.Context, storeID string) (int, error) {
	var n int
	err := t.queryRow(ctx, "SELECT coalesce((SELECT memory_count FROM stores WHERE id = $1), 0)", storeID).Scan(&n)
	return n, translate(err)
}

// ancestors returns the proper ancestor paths of p by whole segments:
// "/a/b/c" → "/a", "/a/b".
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
// equals path, is an ancestor of it, or is a descendant of it (whole
// segments), or nil. It uses the (store_id, path) index only: equality for
// the path and its ancestors, a range [path+"/", path+"0") for descendants.
func (t *tx) MemoryFindOverlap(ctx context.Context, storeID, path, excludeID string) (*trove.Memory, error) {
	same := append(ancestors(path), path)
	m, err := scanMemory(t.queryRow(ctx, "SELECT "+memColsBasic+` FROM memories
		WHERE store_id = $1 AND id <> $2 AND (path = ANY($3::text[]) OR (path >= $4 AND path < $5))
		ORDER BY path LIMIT 1`, storeID, excludeID, same, path+"/", path+"0"))
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	return m, translate(err)
}

// prefixUpper returns the least valid UTF-8 string greater than every
// string that starts with prefix, and false when there is none.
func prefixUpper(prefix string) (string, bool) {
	for len(prefix) > 0 {
		r, size := utf8.DecodeLastRuneInString(prefix)
		head := prefix[:len(prefix)-size]
		if r == utf8.RuneError && size <= 1 {
			return "", false // not valid UTF-8: no bound
		}
		next := r + 1
		if next >= 0xD800 && next <= 0xDFFF {
			next = 0xE000
		}
		if next <= utf8.MaxRune {
			return head + string(next), true
		}
		prefix = head
	}
	return "", false
}

// MemoryList lists live memories in ascending bytewise path order whose
// path starts with p.Prefix and is >= p.From, as a range scan on the
// (store_id, path) index.
func (t *tx) MemoryList(ctx context.Context, p storage.MemoryListParams) ([]trove.Memory, error) {
	var w where
	w.add("store_id = ?", p.StoreID)
	lower, op := p.Prefix, ">="
	if p.From > lower {
		lower = p.From
	}
	// PostgreSQL text cannot hold NUL, and paths never contain it: for a
	// path, path >= P+"\x00"+R is path > P (core pages with last+"\x00").
	if i := strings.IndexByte(lower, 0); i >= 0 {
		lower, op = lower[:i], ">"
	}
	if lower != "" || op == ">" {
		w.add("path "+op+" ?", lower)
	}
	if p.Prefix != "" {
		if up, ok := prefixUpper(p.Prefix); ok {
			w.add("path < ?", up)
		}
		w.add("starts_with(path, ?)", p.Prefix)
	}
	q := "SELECT " + memCols(p.WithContent) + " FROM memories WHERE " + w.sql() + " ORDER BY path"
	q += w.limit(p.Limit)
	rows, err := t.query(ctx, q, w.args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []trove.Memory
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *m)
	}
	return out, translate(rows.Err())
}
