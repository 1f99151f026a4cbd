package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

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
