package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const sessionCols = `id, workspace_id, created_by_type, created_by_id, created_at, ended_at,
	title, metadata, status, updated_at, archived_at, agent_id, agent_version, environment_id,
	usage_input_tokens, usage_output_tokens, usage_cache_read_tokens, usage_cache_creation_tokens,
	active_micros, running_since, budget_currency, budget_amount`

func scanSession(r rowScanner, s *trove.Session) error {
	var typ, id, meta, status, agentID, envID, budgetCur, budgetAmt string
	var created, updated, active, agentVersion int64
	var ended, archived, runningSince sql.NullInt64
	var m trove.ManagedSession
	if err := r.Scan(&s.ID, &s.WorkspaceID, &typ, &id, &created, &ended,
		&s.Title, &meta, &status, &updated, &archived, &agentID, &agentVersion, &envID,
		&m.Usage.InputTokens, &m.Usage.OutputTokens, &m.Usage.CacheReadInputTokens, &m.Usage.CacheCreationInputTokens,
		&active, &runningSince, &budgetCur, &budgetAmt); err != nil {
		return err
	}
	s.CreatedBy = *actorOf(sql.NullString{String: typ, Valid: true}, sql.NullString{String: id, Valid: true})
	s.CreatedAt, s.EndedAt = fromMicros(created), timePtr(ended)
	s.Status, s.UpdatedAt, s.ArchivedAt = trove.SessionStatus(status), fromMicros(updated), timePtr(archived)
	s.Metadata = map[string]string{}
	if meta != "{}" {
		if err := json.Unmarshal([]byte(meta), &s.Metadata); err != nil {
			return fmt.Errorf("sqlite: session %s: bad metadata: %w", s.ID, err)
		}
		if s.Metadata == nil {
			s.Metadata = map[string]string{}
		}
	}
	if agentID != "" {
		m.AgentID, m.AgentVersion, m.EnvironmentID = agentID, agentVersion, envID
		m.ActiveSeconds = float64(active) / 1e6
		m.RunningSince = timePtr(runningSince)
		if budgetCur != "" {
			m.Budget = &trove.SessionBudget{Currency: budgetCur, Amount: budgetAmt}
		}
		s.Managed = &m
	}
	return nil
}

// managedCols returns the managed part's column values (zeros for an
// agent-less session): agent_id, agent_version, environment_id, the four
// usage counters, active_micros, running_since, budget currency and amount.
func managedCols(m *trove.ManagedSession) []any {
	if m == nil {
		return []any{"", 0, "", 0, 0, 0, 0, 0, nil, "", ""}
	}
	var cur, amt string
	if m.Budget != nil {
		cur, amt = m.Budget.Currency, m.Budget.Amount
	}
	return []any{m.AgentID, m.AgentVersion, m.EnvironmentID,
		m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CacheReadInputTokens, m.Usage.CacheCreationInputTokens,
		int64(m.ActiveSeconds * 1e6), nullMicros(m.RunningSince), cur, amt}
}

// SessionInsert stores a session, its attached stores (in order) and the
// SHA-256 of its credential.
func (t *tx) SessionInsert(ctx context.Context, s *trove.Session, tokenHash []byte) error {
	id, err := actorID(s.CreatedBy)
	if err != nil {
		return err
	}
	meta, err := metadataJSON(s.Metadata)
	if err != nil {
		return err
	}
	args := []any{s.ID, s.WorkspaceID, string(s.CreatedBy.Type), id, micros(s.CreatedAt), nullMicros(s.EndedAt),
		s.Title, meta, string(s.Status), micros(s.UpdatedAt), nullMicros(s.ArchivedAt)}
	args = append(append(args, managedCols(s.Managed)...), nonNilBytes(tokenHash))
	if _, err := t.exec(ctx, `INSERT INTO sessions (`+sessionCols+`, token_hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
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

// SessionGet returns a session of a workspace ("" for any), or ENOTFOUND.
func (t *tx) SessionGet(ctx context.Context, workspaceID, id string) (*trove.Session, error) {
	if workspaceID == "" {
		return t.sessionWhere(ctx, "session", id, `id = ?`, id)
	}
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
	if p.AgentID != "" {
		w.add("agent_id = ?", p.AgentID)
		if p.AgentVersion > 0 {
			w.add("agent_version = ?", p.AgentVersion)
		}
	}
	if len(p.Statuses) > 0 {
		args := make([]any, len(p.Statuses))
		for i, st := range p.Statuses {
			args[i] = string(st)
		}
		w.add("status IN ("+strings.Repeat("?, ", len(args)-1)+"?)", args...)
	}
	if !p.IncludeArchived {
		w.add("archived_at IS NULL")
	}
	w.timeRange("created_at", p.CreatedAt)
	if p.CreatedAfter != nil {
		w.add("created_at > ?", micros(*p.CreatedAfter))
	}
	if p.CreatedBefore != nil {
		w.add("created_at < ?", ceilMicros(*p.CreatedBefore))
	}
	order := ` ORDER BY created_at DESC, id DESC LIMIT ?`
	if p.Asc {
		if p.After != nil {
			w.add("(created_at, id) > (?, ?)", micros(p.After.CreatedAt), p.After.ID)
		}
		order = ` ORDER BY created_at, id LIMIT ?`
	} else {
		w.before(p.Before)
	}
	rows, err := t.query(ctx, `SELECT `+sessionCols+` FROM sessions`+w.String()+
		order, append(w.args, limitArg(p.Limit))...)
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
	t.touchSession(id)
	return t.execOne(ctx, "session", id,
		`UPDATE sessions SET ended_at = coalesce(ended_at, ?) WHERE id = ?`, micros(at), id)
}

// SessionLock is SessionGet: SQLite has one writer at a time, so a read in
// a Write transaction already excludes every other writer.
func (t *tx) SessionLock(ctx context.Context, workspaceID, id string) (*trove.Session, error) {
	return t.SessionGet(ctx, workspaceID, id)
}

// SessionUpdate replaces the session's mutable columns.
func (t *tx) SessionUpdate(ctx context.Context, s *trove.Session) error {
	meta, err := metadataJSON(s.Metadata)
	if err != nil {
		return err
	}
	m := managedCols(s.Managed)
	t.touchSession(s.ID)
	return t.execOne(ctx, "session", s.ID, `UPDATE sessions SET title = ?, metadata = ?, status = ?, updated_at = ?,
		ended_at = ?, archived_at = ?, usage_input_tokens = ?, usage_output_tokens = ?, usage_cache_read_tokens = ?,
		usage_cache_creation_tokens = ?, active_micros = ?, running_since = ? WHERE id = ?`,
		s.Title, meta, string(s.Status), micros(s.UpdatedAt), nullMicros(s.EndedAt), nullMicros(s.ArchivedAt),
		m[3], m[4], m[5], m[6], m[7], m[8], s.ID)
}

// SessionDelete deletes a session; its attachments and events go with it
// (ON DELETE CASCADE).
func (t *tx) SessionDelete(ctx context.Context, id string) error {
	t.touchSession(id)
	return t.execOne(ctx, "session", id, `DELETE FROM sessions WHERE id = ?`, id)
}
