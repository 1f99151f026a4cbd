package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// tx implements storage.Tx over one pgx transaction. Every method returns
// translated errors. After a method returns a database error (not ENOTFOUND)
// the PostgreSQL transaction is aborted, so fn should return that error.
type tx struct {
	conn        *pgx.Conn
	beginSQL    string // BEGIN with the isolation level and access mode
	sent        bool   // BEGIN was sent
	beginFailed bool   // BEGIN failed: nothing ran
	// rollbackTimeout bounds ROLLBACK, which runs even when the caller's
	// context is done.
	rollbackTimeout time.Duration
}

var _ storage.Tx = (*tx)(nil)

type scanner interface{ Scan(dest ...any) error }

func notFound(what string) error {
	return &trove.Error{Code: trove.ENOTFOUND, Message: what + " not found"}
}

// utc returns t in UTC; pgx returns timestamptz in the local zone.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ---- actors ----

func actorID(a *trove.Actor) string {
	if id, ok := a.ID(); ok {
		return id
	}
	for _, id := range []string{a.APIKeyID, a.SessionID, a.UserID, a.ServiceAccountID} {
		if id != "" {
			return id
		}
	}
	return ""
}

// actorCols returns the (type, id) columns of a, both nil for a nil actor.
func actorCols(a *trove.Actor) (typ, id *string) {
	if a == nil {
		return nil, nil
	}
	t, i := string(a.Type), actorID(a)
	return &t, &i
}

func actorFrom(typ, id *string) *trove.Actor {
	if typ == nil {
		return nil
	}
	var i string
	if id != nil {
		i = *id
	}
	a := trove.NewActor(trove.ActorType(*typ), i)
	return &a
}

// ---- time bounds ----

// ceilMicro and floorMicro turn an inclusive bound with nanoseconds into the
// equivalent bound on PostgreSQL's microsecond timestamps.
func ceilMicro(t time.Time) time.Time {
	if r := t.Truncate(time.Microsecond); !r.Equal(t) {
		return r.Add(time.Microsecond)
	}
	return t
}

func floorMicro(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// where accumulates SQL conditions and their arguments.
type where struct {
	conds []string
	args  []any
}

// add appends a condition whose "?" placeholders are numbered in order.
func (w *where) add(cond string, args ...any) {
	for _, a := range args {
		w.args = append(w.args, a)
		cond = strings.Replace(cond, "?", fmt.Sprintf("$%d", len(w.args)), 1)
	}
	w.conds = append(w.conds, cond)
}

func (w *where) sql() string { return strings.Join(w.conds, " AND ") }

func (w *where) timeRange(col string, r trove.TimeRange) {
	if r.GTE != nil {
		w.add(col+" >= ?", ceilMicro(*r.GTE))
	}
	if r.LTE != nil {
		w.add(col+" <= ?", floorMicro(*r.LTE))
	}
}

func (w *where) before(p *storage.Position) {
	if p != nil {
		w.add("(created_at, id) < (?, ?)", p.CreatedAt, p.ID)
	}
}

func (w *where) limit(n int) string {
	if n <= 0 {
		return ""
	}
	w.args = append(w.args, n)
	return fmt.Sprintf(" LIMIT $%d", len(w.args))
}

// ---- stores ----

const storeCols = "id, workspace_id, name, description, metadata, created_at, updated_at, archived_at"

func scanStore(r scanner) (*trove.Store, error) {
	var s trove.Store
	var meta string
	var archived *time.Time
	if err := r.Scan(&s.ID, &s.WorkspaceID, &s.Name, &s.Description, &meta, &s.CreatedAt, &s.UpdatedAt, &archived); err != nil {
		return nil, err
	}
	s.Metadata = map[string]string{}
	if err := json.Unmarshal([]byte(meta), &s.Metadata); err != nil {
		return nil, fmt.Errorf("store %s: bad metadata: %w", s.ID, err)
	}
	if s.Metadata == nil {
		s.Metadata = map[string]string{}
	}
	s.CreatedAt, s.UpdatedAt, s.ArchivedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC(), utc(archived)
	return &s, nil
}

func metadataJSON(m map[string]string) (string, error) {
	if m == nil {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// StoreInsert inserts s. It returns EINVALID when a field holds text
// PostgreSQL cannot store (NUL).
func (t *tx) StoreInsert(ctx context.Context, s *trove.Store) error {
	meta, err := metadataJSON(s.Metadata)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, "INSERT INTO stores ("+storeCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
		s.ID, s.WorkspaceID, s.Name, s.Description, meta, s.CreatedAt, s.UpdatedAt, s.ArchivedAt)
	return translate(err)
}

// StoreGet returns the store with id in workspaceID, or ENOTFOUND.
func (t *tx) StoreGet(ctx context.Context, workspaceID, id string) (*trove.Store, error) {
	return t.storeGet(ctx, workspaceID, id, "")
}

// StoreLock is StoreGet with SELECT … FOR UPDATE: it blocks until every
// other transaction holding the lock of this store has ended.
func (t *tx) StoreLock(ctx context.Context, workspaceID, id string) (*trove.Store, error) {
	return t.storeGet(ctx, workspaceID, id, " FOR UPDATE")
}

func (t *tx) storeGet(ctx context.Context, workspaceID, id, suffix string) (*trove.Store, error) {
	s, err := scanStore(t.queryRow(ctx, "SELECT "+storeCols+" FROM stores WHERE id = $1 AND workspace_id = $2"+suffix, id, workspaceID))
	if err == pgx.ErrNoRows {
		return nil, notFound("memory store")
	}
	return s, translate(err)
}

// StoreUpdate replaces name, description, metadata, updated_at and
// archived_at of s.ID; ENOTFOUND if there is no such store.
func (t *tx) StoreUpdate(ctx context.Context, s *trove.Store) error {
	meta, err := metadataJSON(s.Metadata)
	if err != nil {
		return err
	}
	tag, err := t.exec(ctx, "UPDATE stores SET name = $2, description = $3, metadata = $4, updated_at = $5, archived_at = $6 WHERE id = $1",
		s.ID, s.Name, s.Description, meta, s.UpdatedAt, s.ArchivedAt)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("memory store")
	}
	return nil
}

// StoreList lists a workspace's stores by (created_at, id) descending.
func (t *tx) StoreList(ctx context.Context, p storage.StoreListParams) ([]trove.Store, error) {
	var w where
	w.add("workspace_id = ?", p.WorkspaceID)
	if !p.IncludeArchived {
		w.add("archived_at IS NULL")
	}
	w.timeRange("created_at", p.CreatedAt)
	w.before(p.Before)
	q := "SELECT " + storeCols + " FROM stores WHERE " + w.sql() + " ORDER BY created_at DESC, id DESC"
	q += w.limit(p.Limit)
	rows, err := t.query(ctx, q, w.args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []trove.Store
	for rows.Next() {
		s, err := scanStore(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *s)
	}
	return out, translate(rows.Err())
}

// StoreDelete deletes a store; its memories and versions go with it (ON
// DELETE CASCADE). ENOTFOUND if there is no such store.
func (t *tx) StoreDelete(ctx context.Context, id string) error {
	tag, err := t.exec(ctx, "DELETE FROM stores WHERE id = $1", id)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("memory store")
	}
	return nil
}

// ---- memories ----

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

// ---- versions ----

const versionColsTail = `size_bytes, sha256, created_by_type, created_by_id, created_at, redacted_at, redacted_by_type, redacted_by_id`

func versionCols(withContent bool) string {
	c := "NULL::bytea"
	if withContent {
		c = "content"
	}
	return "id, store_id, memory_id, operation, path, " + c + ", " + versionColsTail
}

func scanVersion(r scanner) (*trove.MemoryVersion, error) {
	var v trove.MemoryVersion
	var op string
	var content []byte
	var cbType, cbID, rbType, rbID *string
	var redacted *time.Time
	if err := r.Scan(&v.ID, &v.StoreID, &v.MemoryID, &op, &v.Path, &content, &v.SizeBytes, &v.SHA256,
		&cbType, &cbID, &v.CreatedAt, &redacted, &rbType, &rbID); err != nil {
		return nil, err
	}
	v.Operation = trove.Operation(op)
	if content != nil {
		c := string(content)
		v.Content = &c
	}
	v.CreatedBy = actorFrom(cbType, cbID)
	v.RedactedBy = actorFrom(rbType, rbID)
	v.CreatedAt, v.RedactedAt = v.CreatedAt.UTC(), utc(redacted)
	return &v, nil
}

// VersionInsert appends v; ENOTFOUND when its store does not exist.
func (t *tx) VersionInsert(ctx context.Context, v *trove.MemoryVersion) error {
	cbType, cbID := actorCols(v.CreatedBy)
	rbType, rbID := actorCols(v.RedactedBy)
	_, err := t.exec(ctx, `INSERT INTO versions (id, store_id, memory_id, operation, path, content, size_bytes, sha256,
		created_by_type, created_by_id, created_at, redacted_at, redacted_by_type, redacted_by_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		v.ID, v.StoreID, v.MemoryID, string(v.Operation), v.Path, contentBytes(v.Content), v.SizeBytes, v.SHA256,
		cbType, cbID, v.CreatedAt, v.RedactedAt, rbType, rbID)
	return translateFK(err, "memory store")
}

// VersionGet returns a version of storeID, or ENOTFOUND.
func (t *tx) VersionGet(ctx context.Context, storeID, id string, withContent bool) (*trove.MemoryVersion, error) {
	v, err := scanVersion(t.queryRow(ctx, "SELECT "+versionCols(withContent)+" FROM versions WHERE id = $1 AND store_id = $2", id, storeID))
	if err == pgx.ErrNoRows {
		return nil, notFound("memory version")
	}
	return v, translate(err)
}

// VersionList lists versions by (created_at, id) descending with the
// filters of p (empty strings are no filter).
func (t *tx) VersionList(ctx context.Context, p storage.VersionListParams) ([]trove.MemoryVersion, error) {
	var w where
	w.add("store_id = ?", p.StoreID)
	if p.MemoryID != "" {
		w.add("memory_id = ?", p.MemoryID)
	}
	actor := func(typ trove.ActorType, id string) {
		if id != "" {
			w.add("created_by_type = ? AND created_by_id = ?", string(typ), id)
		}
	}
	actor(trove.ActorSession, p.SessionID)
	actor(trove.ActorAPI, p.APIKeyID)
	actor(trove.ActorServiceAccount, p.ServiceAccountID)
	if p.Operation != "" {
		w.add("operation = ?", string(p.Operation))
	}
	w.timeRange("created_at", p.CreatedAt)
	w.before(p.Before)
	q := "SELECT " + versionCols(p.WithContent) + " FROM versions WHERE " + w.sql() + " ORDER BY created_at DESC, id DESC"
	q += w.limit(p.Limit)
	rows, err := t.query(ctx, q, w.args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []trove.MemoryVersion
	for rows.Next() {
		v, err := scanVersion(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *v)
	}
	return out, translate(rows.Err())
}

// VersionRedact nulls content, path, size and sha256 of a version and sets
// redacted_at/redacted_by; ENOTFOUND if storeID has no such version.
func (t *tx) VersionRedact(ctx context.Context, storeID, id string, at time.Time, by trove.Actor) error {
	bt, bi := actorCols(&by)
	tag, err := t.exec(ctx, `UPDATE versions SET path = NULL, content = NULL, size_bytes = NULL, sha256 = NULL,
		redacted_at = $3, redacted_by_type = $4, redacted_by_id = $5 WHERE id = $1 AND store_id = $2`,
		id, storeID, at, bt, bi)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("memory version")
	}
	return nil
}

// VersionDeleteExpired deletes versions created before cutoff, except those
// that are the current version of a live memory, and returns how many.
func (t *tx) VersionDeleteExpired(ctx context.Context, cutoff time.Time) (int, error) {
	tag, err := t.exec(ctx, `DELETE FROM versions v WHERE v.created_at < $1
		AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = v.memory_id AND m.version_id = v.id)`, cutoff)
	if err != nil {
		return 0, translate(err)
	}
	return int(tag.RowsAffected()), nil
}

// ---- API keys ----

const keyCols = "id, workspace_id, name, hint, created_at, revoked_at"

func scanKey(r scanner) (*trove.APIKey, error) {
	var k trove.APIKey
	var revoked *time.Time
	if err := r.Scan(&k.ID, &k.WorkspaceID, &k.Name, &k.Hint, &k.CreatedAt, &revoked); err != nil {
		return nil, err
	}
	k.CreatedAt, k.RevokedAt = k.CreatedAt.UTC(), utc(revoked)
	return &k, nil
}

// KeyInsert stores k with the SHA-256 of its secret.
func (t *tx) KeyInsert(ctx context.Context, k *trove.APIKey, secretHash []byte) error {
	_, err := t.exec(ctx, "INSERT INTO api_keys (id, workspace_id, name, hint, secret_hash, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
		k.ID, k.WorkspaceID, k.Name, k.Hint, secretHash, k.CreatedAt, k.RevokedAt)
	return translate(err)
}

// KeyGetByHash finds a key (revoked ones too) by secret hash, or ENOTFOUND.
func (t *tx) KeyGetByHash(ctx context.Context, secretHash []byte) (*trove.APIKey, error) {
	k, err := scanKey(t.queryRow(ctx, "SELECT "+keyCols+" FROM api_keys WHERE secret_hash = $1", secretHash))
	if err == pgx.ErrNoRows {
		return nil, notFound("API key")
	}
	return k, translate(err)
}

// KeyList lists keys, all workspaces when workspaceID is "", oldest first.
func (t *tx) KeyList(ctx context.Context, workspaceID string) ([]trove.APIKey, error) {
	rows, err := t.query(ctx, "SELECT "+keyCols+" FROM api_keys WHERE $1 = '' OR workspace_id = $1 ORDER BY created_at, id", workspaceID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []trove.APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *k)
	}
	return out, translate(rows.Err())
}

// KeyRevoke sets revoked_at; ENOTFOUND for an unknown key.
func (t *tx) KeyRevoke(ctx context.Context, id string, at time.Time) error {
	tag, err := t.exec(ctx, "UPDATE api_keys SET revoked_at = $2 WHERE id = $1", id, at)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("API key")
	}
	return nil
}

// ---- sessions ----

const sessionCols = "id, workspace_id, created_by_type, created_by_id, created_at, ended_at"

func scanSession(r scanner) (*trove.Session, error) {
	var s trove.Session
	var typ, id string
	var ended *time.Time
	if err := r.Scan(&s.ID, &s.WorkspaceID, &typ, &id, &s.CreatedAt, &ended); err != nil {
		return nil, err
	}
	s.CreatedBy = *actorFrom(&typ, &id)
	s.CreatedAt, s.EndedAt = s.CreatedAt.UTC(), utc(ended)
	return &s, nil
}

// SessionInsert stores s, its attached stores in order, and the SHA-256 of
// its credential.
func (t *tx) SessionInsert(ctx context.Context, s *trove.Session, tokenHash []byte) error {
	typ, id := actorCols(&s.CreatedBy)
	b := &pgx.Batch{}
	b.Queue("INSERT INTO sessions (id, workspace_id, token_hash, created_by_type, created_by_id, created_at, ended_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
		s.ID, s.WorkspaceID, tokenHash, typ, id, s.CreatedAt, s.EndedAt)
	for i, st := range s.Stores {
		b.Queue(`INSERT INTO session_stores (session_id, ord, store_id, access, name, description, instructions, mount_path)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			s.ID, i, st.StoreID, string(st.Access), st.Name, st.Description, st.Instructions, st.MountPath)
	}
	if err := t.ensureBegun(ctx); err != nil {
		return translate(err)
	}
	return translate(t.conn.SendBatch(ctx, b).Close())
}

// loadStores fills the Stores of sessions, in attach order.
func (t *tx) loadStores(ctx context.Context, sessions []*trove.Session) error {
	if len(sessions) == 0 {
		return nil
	}
	ids := make([]string, len(sessions))
	byID := make(map[string]*trove.Session, len(sessions))
	for i, s := range sessions {
		ids[i] = s.ID
		byID[s.ID] = s
	}
	rows, err := t.query(ctx, `SELECT session_id, store_id, access, name, description, instructions, mount_path
		FROM session_stores WHERE session_id = ANY($1::text[]) ORDER BY session_id, ord`, ids)
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var sid, access string
		var st trove.SessionStore
		if err := rows.Scan(&sid, &st.StoreID, &access, &st.Name, &st.Description, &st.Instructions, &st.MountPath); err != nil {
			return translate(err)
		}
		st.Access = trove.Access(access)
		if s := byID[sid]; s != nil {
			s.Stores = append(s.Stores, st)
		}
	}
	return translate(rows.Err())
}

func (t *tx) sessionGet(ctx context.Context, q string, args ...any) (*trove.Session, error) {
	s, err := scanSession(t.queryRow(ctx, q, args...))
	if err == pgx.ErrNoRows {
		return nil, notFound("session")
	}
	if err != nil {
		return nil, translate(err)
	}
	if err := t.loadStores(ctx, []*trove.Session{s}); err != nil {
		return nil, err
	}
	return s, nil
}

// SessionGet returns a session of workspaceID, or ENOTFOUND.
func (t *tx) SessionGet(ctx context.Context, workspaceID, id string) (*trove.Session, error) {
	return t.sessionGet(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = $1 AND workspace_id = $2", id, workspaceID)
}

// SessionGetByTokenHash finds a session by credential hash, or ENOTFOUND.
func (t *tx) SessionGetByTokenHash(ctx context.Context, tokenHash []byte) (*trove.Session, error) {
	return t.sessionGet(ctx, "SELECT "+sessionCols+" FROM sessions WHERE token_hash = $1", tokenHash)
}

// SessionList lists a workspace's sessions by (created_at, id) descending,
// only those with p.StoreID attached when it is set.
func (t *tx) SessionList(ctx context.Context, p storage.SessionListParams) ([]trove.Session, error) {
	var w where
	w.add("workspace_id = ?", p.WorkspaceID)
	if p.StoreID != "" {
		w.add("EXISTS (SELECT 1 FROM session_stores ss WHERE ss.session_id = sessions.id AND ss.store_id = ?)", p.StoreID)
	}
	w.before(p.Before)
	q := "SELECT " + sessionCols + " FROM sessions WHERE " + w.sql() + " ORDER BY created_at DESC, id DESC"
	q += w.limit(p.Limit)
	rows, err := t.query(ctx, q, w.args...)
	if err != nil {
		return nil, translate(err)
	}
	var ptrs []*trove.Session
	for rows.Next() {
		s, err := scanSession(rows)
		if err != nil {
			rows.Close()
			return nil, translate(err)
		}
		ptrs = append(ptrs, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	if err := t.loadStores(ctx, ptrs); err != nil {
		return nil, err
	}
	out := make([]trove.Session, len(ptrs))
	for i, s := range ptrs {
		out[i] = *s
	}
	return out, nil
}

// SessionEnd sets ended_at if it is not set yet; ENOTFOUND for an unknown
// session.
func (t *tx) SessionEnd(ctx context.Context, id string, at time.Time) error {
	var found bool
	err := t.queryRow(ctx, `WITH u AS (UPDATE sessions SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)`, id, at).Scan(&found)
	if err != nil {
		return translate(err)
	}
	if !found {
		return notFound("session")
	}
	return nil
}
