package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// tx implements storage.Tx over a *sql.Tx (Read) or the writer connection
// inside a savepoint (Write).
type tx struct {
	q querier
	// stmts, when set, caches prepared statements on the connection q
	// runs on (the writer's); nil means statements are prepared per call.
	stmts *stmtCache
	// ctxOf derives the context statements run with. Writes share one
	// transaction, so their statements must not be interrupted by one
	// caller's cancellation (SQLite may then roll back the whole
	// transaction): Write uses context.WithoutCancel.
	ctxOf func(context.Context) context.Context
	ended atomic.Bool
	// stores, set in Writes only, is the committer's cache of the stores
	// StoreLock read in the current group; nil in Reads.
	stores *storeCache
}

var _ storage.Tx = (*tx)(nil)

// errTxEnded is returned by a Tx method called after fn returned.
var errTxEnded = errors.New("sqlite: Tx used after its Read or Write function returned")

func (t *tx) end() { t.ended.Store(true) }

// check refuses calls after the transaction ended or once ctx is done (the
// statement has not started, so only this caller is affected).
func (t *tx) check(ctx context.Context) error {
	if t.ended.Load() {
		return errTxEnded
	}
	if err := ctx.Err(); err != nil {
		return ctxError(err)
	}
	return nil
}

// exec runs a statement that changes rows. The store cache hears of it
// before it runs (see storeCache).
func (t *tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	t.stores.statement(query)
	var res sql.Result
	st, err := t.stmts.get(query)
	switch {
	case err != nil:
	case st != nil:
		res, err = st.ExecContext(t.ctxOf(ctx), args...)
	default:
		res, err = t.q.ExecContext(t.ctxOf(ctx), query, args...)
	}
	if err != nil {
		return nil, translate(err)
	}
	return res, nil
}

// execOne runs a statement that must change exactly one row, ENOTFOUND
// (with msg) otherwise.
func (t *tx) execOne(ctx context.Context, what, id, query string, args ...any) error {
	res, err := t.exec(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return translate(err)
	}
	if n == 0 {
		return notFound(what, id)
	}
	return nil
}

func (t *tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	var rows *sql.Rows
	st, err := t.stmts.get(query)
	switch {
	case err != nil:
	case st != nil:
		rows, err = st.QueryContext(t.ctxOf(ctx), args...)
	default:
		rows, err = t.q.QueryContext(t.ctxOf(ctx), query, args...)
	}
	if err != nil {
		return nil, translate(err)
	}
	return rows, nil
}

// queryRow runs a query whose single row scan fills; ENOTFOUND (naming what
// and id) when there is no row.
func (t *tx) queryRow(ctx context.Context, what, id string, scan func(rowScanner) error, query string, args ...any) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	st, err := t.stmts.get(query)
	switch {
	case err != nil:
	case st != nil:
		err = scan(st.QueryRowContext(t.ctxOf(ctx), args...))
	default:
		err = scan(t.q.QueryRowContext(t.ctxOf(ctx), query, args...))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(what, id)
	}
	return translate(err)
}

type rowScanner interface{ Scan(dest ...any) error }

// stmtCache keeps the statements prepared on one connection, by text.
// The set of texts the driver uses is small and bounded (lists take LIMIT
// as a parameter); past maxCachedStmts statements are not cached.
type stmtCache struct {
	mu   sync.Mutex
	m    map[string]*sql.Stmt
	prep func(query string) (*sql.Stmt, error)
}

const maxCachedStmts = 1024

func newStmtCache(prep func(query string) (*sql.Stmt, error)) *stmtCache {
	return &stmtCache{m: map[string]*sql.Stmt{}, prep: prep}
}

// get returns the cached statement for query, preparing it on a miss; nil
// (and no error) for a nil cache or a full one.
func (c *stmtCache) get(query string) (*sql.Stmt, error) {
	if c == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	if len(c.m) >= maxCachedStmts {
		return nil, nil
	}
	st, err := c.prep(query)
	if err != nil {
		return nil, err
	}
	c.m[query] = st
	return st, nil
}

// close closes every cached statement.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, st := range c.m {
		errs = append(errs, st.Close())
		delete(c.m, q)
	}
	return errors.Join(errs...)
}

// ---- conversions ----

// micros is t as integer microseconds since the epoch (floor).
func micros(t time.Time) int64 { return t.UnixMicro() }

// ceilMicros is the smallest microsecond count not before t.
func ceilMicros(t time.Time) int64 {
	us := t.UnixMicro()
	if time.UnixMicro(us).Before(t) {
		us++
	}
	return us
}

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func nullMicros(t *time.Time) any {
	if t == nil {
		return nil
	}
	return micros(*t)
}

func timePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

// actorCols returns the (type, id) columns of a, both NULL for nil.
func actorCols(a *trove.Actor) (typ, id any, err error) {
	if a == nil {
		return nil, nil, nil
	}
	s, err := actorID(*a)
	if err != nil {
		return nil, nil, err
	}
	return string(a.Type), s, nil
}

// actorID returns the ID field of a that matches its type.
func actorID(a trove.Actor) (string, error) {
	if id, ok := a.ID(); ok || a.Type == "" {
		return id, nil
	}
	return "", trove.Errorf(trove.EINVALID, "unknown actor type %q", a.Type)
}

// actorOf rebuilds an actor from its columns; nil when typ is NULL.
func actorOf(typ, id sql.NullString) *trove.Actor {
	if !typ.Valid {
		return nil
	}
	a := trove.NewActor(trove.ActorType(typ.String), id.String)
	return &a
}

// beforeKey turns a keyset position into the (created_at, id) bound of a
// strictly-less row-value comparison against stored microseconds. A
// position with a sub-microsecond part is rounded so that the comparison
// stays exact: every stored row at or below floor(t) precedes it.
func beforeKey(p *storage.Position) (int64, string) {
	us := p.CreatedAt.UnixMicro()
	if time.UnixMicro(us).Before(p.CreatedAt) {
		return us + 1, ""
	}
	return us, p.ID
}

// whereBuilder accumulates AND-ed conditions and their arguments.
type whereBuilder struct {
	conds []string
	args  []any
}

func (w *whereBuilder) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *whereBuilder) timeRange(col string, r trove.TimeRange) {
	if r.GTE != nil {
		w.add(col+" >= ?", ceilMicros(*r.GTE))
	}
	if r.LTE != nil {
		w.add(col+" <= ?", micros(*r.LTE))
	}
}

func (w *whereBuilder) before(p *storage.Position) {
	if p != nil {
		us, id := beforeKey(p)
		w.add("(created_at, id) < (?, ?)", us, id)
	}
}

func (w *whereBuilder) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// limitArg is the argument of a "LIMIT ?" clause: n, or -1 (no limit) for
// n <= 0. A parameter rather than a literal keeps the set of statement texts,
// and so the statement cache, small.
func limitArg(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// ---- stores ----

const storeCols = `id, workspace_id, name, description, metadata, created_at, updated_at, archived_at`

func scanStore(r rowScanner, s *trove.Store) error {
	var meta string
	var created, updated int64
	var archived sql.NullInt64
	if err := r.Scan(&s.ID, &s.WorkspaceID, &s.Name, &s.Description, &meta, &created, &updated, &archived); err != nil {
		return err
	}
	s.Metadata = map[string]string{}
	if meta != "{}" { // what metadataJSON stores for none: skip the decoder
		if err := json.Unmarshal([]byte(meta), &s.Metadata); err != nil {
			return fmt.Errorf("sqlite: store %s: bad metadata: %w", s.ID, err)
		}
	}
	if s.Metadata == nil {
		s.Metadata = map[string]string{}
	}
	s.CreatedAt, s.UpdatedAt, s.ArchivedAt = fromMicros(created), fromMicros(updated), timePtr(archived)
	return nil
}

func metadataJSON(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// StoreInsert inserts a new store.
func (t *tx) StoreInsert(ctx context.Context, s *trove.Store) error {
	meta, err := metadataJSON(s.Metadata)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO stores (`+storeCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.WorkspaceID, s.Name, s.Description, meta, micros(s.CreatedAt), micros(s.UpdatedAt), nullMicros(s.ArchivedAt))
	return err
}

// StoreGet returns the store with id in workspaceID, or ENOTFOUND.
func (t *tx) StoreGet(ctx context.Context, workspaceID, id string) (*trove.Store, error) {
	var s trove.Store
	err := t.queryRow(ctx, "memory store", id, func(r rowScanner) error { return scanStore(r, &s) },
		`SELECT `+storeCols+` FROM stores WHERE id = ? AND workspace_id = ?`, id, workspaceID)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// StoreLock is StoreGet: a SQLite write transaction already holds the
// database's only write lock, so every StoreLock is serialized. Within one
// group commit it reads each store once (see storeCache).
func (t *tx) StoreLock(ctx context.Context, workspaceID, id string) (*trove.Store, error) {
	if st, ok := t.stores.get(id); ok {
		if err := t.check(ctx); err != nil {
			return nil, err
		}
		if st.WorkspaceID != workspaceID {
			return nil, notFound("memory store", id)
		}
		return st, nil
	}
	st, err := t.StoreGet(ctx, workspaceID, id)
	if err != nil {
		return nil, err
	}
	t.stores.put(st)
	return st, nil
}

// StoreUpdate replaces name, description, metadata, updated_at and
// archived_at of s.ID; ENOTFOUND if there is no such store.
func (t *tx) StoreUpdate(ctx context.Context, s *trove.Store) error {
	meta, err := metadataJSON(s.Metadata)
	if err != nil {
		return err
	}
	return t.execOne(ctx, "memory store", s.ID,
		`UPDATE stores SET name = ?, description = ?, metadata = ?, updated_at = ?, archived_at = ? WHERE id = ?`,
		s.Name, s.Description, meta, micros(s.UpdatedAt), nullMicros(s.ArchivedAt), s.ID)
}

// StoreList lists a workspace's stores by (created_at, id) descending.
// Limit <= 0 means no limit.
func (t *tx) StoreList(ctx context.Context, p storage.StoreListParams) ([]trove.Store, error) {
	var w whereBuilder
	w.add("workspace_id = ?", p.WorkspaceID)
	if !p.IncludeArchived {
		w.add("archived_at IS NULL")
	}
	w.timeRange("created_at", p.CreatedAt)
	w.before(p.Before)
	rows, err := t.query(ctx, `SELECT `+storeCols+` FROM stores`+w.String()+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(w.args, limitArg(p.Limit))...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.Store{}
	for rows.Next() {
		var s trove.Store
		if err := scanStore(rows, &s); err != nil {
			return nil, translate(err)
		}
		out = append(out, s)
	}
	return out, translate(rows.Err())
}

// StoreDelete deletes a store with all its memories and versions; ENOTFOUND
// if there is no such store. Sessions that attached it keep their snapshot.
func (t *tx) StoreDelete(ctx context.Context, id string) error {
	if _, err := t.exec(ctx, `DELETE FROM versions WHERE store_id = ?`, id); err != nil {
		return err
	}
	if _, err := t.exec(ctx, `DELETE FROM memories WHERE store_id = ?`, id); err != nil {
		return err
	}
	return t.execOne(ctx, "memory store", id, `DELETE FROM stores WHERE id = ?`, id)
}

// ---- memories ----

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

// ---- versions ----

const versionCols = `id, store_id, memory_id, operation, path, size_bytes, sha256,
	created_by_type, created_by_id, created_at, redacted_at, redacted_by_type, redacted_by_id`

func versionSelect(withContent bool) string {
	if withContent {
		return `SELECT ` + versionCols + `, content FROM versions`
	}
	return `SELECT ` + versionCols + `, NULL FROM versions`
}

func scanVersion(r rowScanner, v *trove.MemoryVersion) error {
	var (
		op                 string
		path, sha, content sql.NullString
		size               sql.NullInt64
		cbType, cbID       sql.NullString
		rbType, rbID       sql.NullString
		created            int64
		redacted           sql.NullInt64
	)
	if err := r.Scan(&v.ID, &v.StoreID, &v.MemoryID, &op, &path, &size, &sha,
		&cbType, &cbID, &created, &redacted, &rbType, &rbID, &content); err != nil {
		return err
	}
	v.Operation = trove.Operation(op)
	v.Path, v.SHA256, v.Content, v.SizeBytes = nil, nil, nil, nil
	if path.Valid {
		v.Path = &path.String
	}
	if sha.Valid {
		v.SHA256 = &sha.String
	}
	if content.Valid {
		v.Content = &content.String
	}
	if size.Valid {
		n := int(size.Int64)
		v.SizeBytes = &n
	}
	v.CreatedBy = actorOf(cbType, cbID)
	v.CreatedAt = fromMicros(created)
	v.RedactedAt = timePtr(redacted)
	v.RedactedBy = actorOf(rbType, rbID)
	return nil
}

func nullString(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func nullInt(n *int) any {
	if n == nil {
		return nil
	}
	return *n
}

// VersionInsert appends v.
func (t *tx) VersionInsert(ctx context.Context, v *trove.MemoryVersion) error {
	cbType, cbID, err := actorCols(v.CreatedBy)
	if err != nil {
		return err
	}
	rbType, rbID, err := actorCols(v.RedactedBy)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO versions (`+versionCols+`, content)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		v.ID, v.StoreID, v.MemoryID, string(v.Operation), nullString(v.Path), nullInt(v.SizeBytes), nullString(v.SHA256),
		cbType, cbID, micros(v.CreatedAt), nullMicros(v.RedactedAt), rbType, rbID, nullString(v.Content))
	return err
}

// VersionGet returns a version of a store, or ENOTFOUND.
func (t *tx) VersionGet(ctx context.Context, storeID, id string, withContent bool) (*trove.MemoryVersion, error) {
	var v trove.MemoryVersion
	err := t.queryRow(ctx, "memory version", id, func(r rowScanner) error { return scanVersion(r, &v) },
		versionSelect(withContent)+` WHERE id = ? AND store_id = ?`, id, storeID)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// VersionList lists versions by (created_at, id) descending with the filters
// of p; several actor filters must all hold (so two different ones match
// nothing). Limit <= 0 means no limit.
func (t *tx) VersionList(ctx context.Context, p storage.VersionListParams) ([]trove.MemoryVersion, error) {
	q := versionListQuery(p)
	rows, err := t.query(ctx, q.sql, q.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.MemoryVersion{}
	for rows.Next() {
		var v trove.MemoryVersion
		if err := scanVersion(rows, &v); err != nil {
			return nil, translate(err)
		}
		out = append(out, v)
	}
	return out, translate(rows.Err())
}

// versionListQuery is VersionList's statement.
func versionListQuery(p storage.VersionListParams) sqlQuery {
	var w whereBuilder
	if p.StoreID != "" {
		w.add("store_id = ?", p.StoreID)
	}
	if p.MemoryID != "" {
		w.add("memory_id = ?", p.MemoryID)
	}
	for _, f := range []struct {
		typ trove.ActorType
		id  string
	}{{trove.ActorSession, p.SessionID}, {trove.ActorAPI, p.APIKeyID}, {trove.ActorServiceAccount, p.ServiceAccountID}} {
		if f.id != "" {
			w.add("created_by_type = ? AND created_by_id = ?", string(f.typ), f.id)
		}
	}
	if p.Operation != "" {
		w.add("operation = ?", string(p.Operation))
	}
	w.timeRange("created_at", p.CreatedAt)
	w.before(p.Before)
	return sqlQuery{versionSelect(p.WithContent) + w.String() + ` ORDER BY created_at DESC, id DESC LIMIT ?`, append(w.args, limitArg(p.Limit))}
}

// VersionRedact nulls content, path, size and sha256 and sets
// redacted_at/redacted_by; ENOTFOUND if the store has no such version.
func (t *tx) VersionRedact(ctx context.Context, storeID, id string, at time.Time, by trove.Actor) error {
	rbType, rbID, err := actorCols(&by)
	if err != nil {
		return err
	}
	return t.execOne(ctx, "memory version", id,
		`UPDATE versions SET path = NULL, content = NULL, size_bytes = NULL, sha256 = NULL,
		 redacted_at = ?, redacted_by_type = ?, redacted_by_id = ? WHERE id = ? AND store_id = ?`,
		micros(at), rbType, rbID, id, storeID)
}

// deleteExpiredSQL deletes the versions created before ?1 that are no live
// memory's current version (a range on versions_by_created, a primary-key
// probe of the version's memory per candidate).
const deleteExpiredSQL = `DELETE FROM versions WHERE created_at < ?
	AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = versions.memory_id AND m.version_id = versions.id)`

// VersionDeleteExpired deletes versions created strictly before cutoff,
// except a version that is the current version of a live memory, and
// returns how many it deleted.
func (t *tx) VersionDeleteExpired(ctx context.Context, cutoff time.Time) (int, error) {
	res, err := t.exec(ctx, deleteExpiredSQL, ceilMicros(cutoff))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), translate(err)
}

// ---- API keys ----

const keyCols = `id, workspace_id, name, hint, created_at, revoked_at`

func scanKey(r rowScanner, k *trove.APIKey) error {
	var created int64
	var revoked sql.NullInt64
	if err := r.Scan(&k.ID, &k.WorkspaceID, &k.Name, &k.Hint, &created, &revoked); err != nil {
		return err
	}
	k.CreatedAt, k.RevokedAt = fromMicros(created), timePtr(revoked)
	return nil
}

// KeyInsert stores an API key with the SHA-256 of its secret.
func (t *tx) KeyInsert(ctx context.Context, k *trove.APIKey, secretHash []byte) error {
	_, err := t.exec(ctx, `INSERT INTO api_keys (`+keyCols+`, secret_hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.WorkspaceID, k.Name, k.Hint, micros(k.CreatedAt), nullMicros(k.RevokedAt), nonNilBytes(secretHash))
	return err
}

// nonNilBytes keeps an empty hash a (non-NULL) empty BLOB.
func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// KeyGetByHash finds a key (revoked ones too) by secret hash, or ENOTFOUND.
func (t *tx) KeyGetByHash(ctx context.Context, secretHash []byte) (*trove.APIKey, error) {
	var k trove.APIKey
	err := t.queryRow(ctx, "api key", "(by secret)", func(r rowScanner) error { return scanKey(r, &k) },
		`SELECT `+keyCols+` FROM api_keys WHERE secret_hash = ?`, nonNilBytes(secretHash))
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// KeyList lists keys oldest first by (created_at, id), all workspaces when
// workspaceID is "".
func (t *tx) KeyList(ctx context.Context, workspaceID string) ([]trove.APIKey, error) {
	var w whereBuilder
	if workspaceID != "" {
		w.add("workspace_id = ?", workspaceID)
	}
	rows, err := t.query(ctx, `SELECT `+keyCols+` FROM api_keys`+w.String()+` ORDER BY created_at, id`, w.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.APIKey{}
	for rows.Next() {
		var k trove.APIKey
		if err := scanKey(rows, &k); err != nil {
			return nil, translate(err)
		}
		out = append(out, k)
	}
	return out, translate(rows.Err())
}

// KeyRevoke sets revoked_at (keeping the first revocation time of a key
// revoked twice); ENOTFOUND for an unknown key.
func (t *tx) KeyRevoke(ctx context.Context, id string, at time.Time) error {
	return t.execOne(ctx, "api key", id,
		`UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, micros(at), id)
}

// ---- sessions ----

const sessionCols = `id, workspace_id, created_by_type, created_by_id, created_at, ended_at`

func scanSession(r rowScanner, s *trove.Session) error {
	var typ, id string
	var created int64
	var ended sql.NullInt64
	if err := r.Scan(&s.ID, &s.WorkspaceID, &typ, &id, &created, &ended); err != nil {
		return err
	}
	s.CreatedBy = *actorOf(sql.NullString{String: typ, Valid: true}, sql.NullString{String: id, Valid: true})
	s.CreatedAt, s.EndedAt = fromMicros(created), timePtr(ended)
	return nil
}

// SessionInsert stores a session, its attached stores (in order) and the
// SHA-256 of its credential.
func (t *tx) SessionInsert(ctx context.Context, s *trove.Session, tokenHash []byte) error {
	id, err := actorID(s.CreatedBy)
	if err != nil {
		return err
	}
	if _, err := t.exec(ctx, `INSERT INTO sessions (`+sessionCols+`, token_hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.WorkspaceID, string(s.CreatedBy.Type), id, micros(s.CreatedAt), nullMicros(s.EndedAt), nonNilBytes(tokenHash)); err != nil {
		return err
	}
	for i, st := range s.Stores {
		if _, err := t.exec(ctx, `INSERT INTO session_stores
			(session_id, position, store_id, access, name, description, instructions, mount_path)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			s.ID, i, st.StoreID, string(st.Access), st.Name, st.Description, st.Instructions, st.MountPath); err != nil {
			return err
		}
	}
	return nil
}

// loadSessionStores fills the Stores of every session in ss.
func (t *tx) loadSessionStores(ctx context.Context, ss []trove.Session) error {
	if len(ss) == 0 {
		return nil
	}
	idx := make(map[string]int, len(ss))
	args := make([]any, len(ss))
	for i := range ss {
		idx[ss[i].ID] = i
		args[i] = ss[i].ID
		ss[i].Stores = []trove.SessionStore{}
	}
	rows, err := t.query(ctx, `SELECT session_id, store_id, access, name, description, instructions, mount_path
		FROM session_stores WHERE session_id IN (`+strings.Repeat("?, ", len(ss)-1)+`?)
		ORDER BY session_id, position`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var sid, access string
		var st trove.SessionStore
		if err := rows.Scan(&sid, &st.StoreID, &access, &st.Name, &st.Description, &st.Instructions, &st.MountPath); err != nil {
			return translate(err)
		}
		st.Access = trove.Access(access)
		i := idx[sid]
		ss[i].Stores = append(ss[i].Stores, st)
	}
	return translate(rows.Err())
}

func (t *tx) sessionWhere(ctx context.Context, what, id, where string, args ...any) (*trove.Session, error) {
	var s trove.Session
	err := t.queryRow(ctx, what, id, func(r rowScanner) error { return scanSession(r, &s) },
		`SELECT `+sessionCols+` FROM sessions WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	ss := []trove.Session{s}
	if err := t.loadSessionStores(ctx, ss); err != nil {
		return nil, err
	}
	return &ss[0], nil
}

// SessionGet returns a session of a workspace, or ENOTFOUND.
func (t *tx) SessionGet(ctx context.Context, workspaceID, id string) (*trove.Session, error) {
	return t.sessionWhere(ctx, "session", id, `id = ? AND workspace_id = ?`, id, workspaceID)
}

// SessionGetByTokenHash finds a session by credential hash, or ENOTFOUND.
func (t *tx) SessionGetByTokenHash(ctx context.Context, tokenHash []byte) (*trove.Session, error) {
	return t.sessionWhere(ctx, "session", "(by credential)", `token_hash = ?`, nonNilBytes(tokenHash))
}

// SessionList lists a workspace's sessions by (created_at, id) descending,
// only those with StoreID attached when it is set. Limit <= 0 means no limit.
func (t *tx) SessionList(ctx context.Context, p storage.SessionListParams) ([]trove.Session, error) {
	var w whereBuilder
	w.add("workspace_id = ?", p.WorkspaceID)
	if p.StoreID != "" {
		w.add("id IN (SELECT session_id FROM session_stores WHERE store_id = ?)", p.StoreID)
	}
	w.before(p.Before)
	rows, err := t.query(ctx, `SELECT `+sessionCols+` FROM sessions`+w.String()+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(w.args, limitArg(p.Limit))...)
	if err != nil {
		return nil, err
	}
	out := []trove.Session{}
	for rows.Next() {
		var s trove.Session
		if err := scanSession(rows, &s); err != nil {
			rows.Close()
			return nil, translate(err)
		}
		out = append(out, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	if err := t.loadSessionStores(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// SessionEnd sets ended_at if it is not set yet (ending twice keeps the
// first time); ENOTFOUND for an unknown session.
func (t *tx) SessionEnd(ctx context.Context, id string, at time.Time) error {
	return t.execOne(ctx, "session", id,
		`UPDATE sessions SET ended_at = coalesce(ended_at, ?) WHERE id = ?`, micros(at), id)
}
