package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

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
