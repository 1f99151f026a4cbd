package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const sessionCols = `id, workspace_id, created_by_type, created_by_id, created_at, ended_at,
	title, metadata, status, updated_at, archived_at, agent_id, agent_version, environment_id,
	usage_input_tokens, usage_output_tokens, usage_cache_read_tokens, usage_cache_creation_tokens,
	active_micros, running_since, budget_currency, budget_amount`

func scanSession(r scanner) (*trove.Session, error) {
	var s trove.Session
	var typ, id, meta, status, agentID, envID, budgetCur, budgetAmt string
	var ended, archived, runningSince *time.Time
	var active, agentVersion int64
	var m trove.ManagedSession
	if err := r.Scan(&s.ID, &s.WorkspaceID, &typ, &id, &s.CreatedAt, &ended,
		&s.Title, &meta, &status, &s.UpdatedAt, &archived, &agentID, &agentVersion, &envID,
		&m.Usage.InputTokens, &m.Usage.OutputTokens, &m.Usage.CacheReadInputTokens, &m.Usage.CacheCreationInputTokens,
		&active, &runningSince, &budgetCur, &budgetAmt); err != nil {
		return nil, err
	}
	s.CreatedBy = *actorFrom(&typ, &id)
	s.CreatedAt, s.EndedAt = s.CreatedAt.UTC(), utc(ended)
	s.Status, s.UpdatedAt, s.ArchivedAt = trove.SessionStatus(status), s.UpdatedAt.UTC(), utc(archived)
	s.Metadata = map[string]string{}
	if err := json.Unmarshal([]byte(meta), &s.Metadata); err != nil {
		return nil, fmt.Errorf("session %s: bad metadata: %w", s.ID, err)
	}
	if s.Metadata == nil {
		s.Metadata = map[string]string{}
	}
	if agentID != "" {
		m.AgentID, m.AgentVersion, m.EnvironmentID = agentID, agentVersion, envID
		m.ActiveSeconds = float64(active) / 1e6
		m.RunningSince = utc(runningSince)
		if budgetCur != "" {
			m.Budget = &trove.SessionBudget{Currency: budgetCur, Amount: budgetAmt}
		}
		s.Managed = &m
	}
	return &s, nil
}

// managedCols returns the managed part's column values (zeros for an
// agent-less session): agent_id, agent_version, environment_id, the four
// usage counters, active_micros, running_since, budget currency and amount.
func managedCols(m *trove.ManagedSession) []any {
	if m == nil {
		return []any{"", int64(0), "", int64(0), int64(0), int64(0), int64(0), int64(0), (*time.Time)(nil), "", ""}
	}
	var cur, amt string
	if m.Budget != nil {
		cur, amt = m.Budget.Currency, m.Budget.Amount
	}
	return []any{m.AgentID, m.AgentVersion, m.EnvironmentID,
		m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CacheReadInputTokens, m.Usage.CacheCreationInputTokens,
		int64(m.ActiveSeconds * 1e6), m.RunningSince, cur, amt}
}

// SessionInsert stores s, its attached stores in order, and the SHA-256 of
// its credential.
func (t *tx) SessionInsert(ctx context.Context, s *trove.Session, tokenHash []byte) error {
	typ, id := actorCols(&s.CreatedBy)
	meta, err := metadataJSON(s.Metadata)
	if err != nil {
		return err
	}
	args := []any{s.ID, s.WorkspaceID, typ, id, s.CreatedAt, s.EndedAt,
		s.Title, meta, string(s.Status), s.UpdatedAt, s.ArchivedAt}
	args = append(append(args, managedCols(s.Managed)...), tokenHash)
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO sessions (`+sessionCols+`, token_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
		$11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)`, args...)
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
	return t.sessionGet(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = $1 AND ($2 = '' OR workspace_id = $2)", id, workspaceID)
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
	if p.AgentID != "" {
		w.add("agent_id = ?", p.AgentID)
		if p.AgentVersion > 0 {
			w.add("agent_version = ?", p.AgentVersion)
		}
	}
	if len(p.Statuses) > 0 {
		st := make([]string, len(p.Statuses))
		for i, v := range p.Statuses {
			st[i] = string(v)
		}
		w.add("status = ANY(?::text[])", st)
	}
	if !p.IncludeArchived {
		w.add("archived_at IS NULL")
	}
	w.timeRange("created_at", p.CreatedAt)
	if p.CreatedAfter != nil {
		w.add("created_at > ?", floorMicro(*p.CreatedAfter))
	}
	if p.CreatedBefore != nil {
		w.add("created_at < ?", ceilMicro(*p.CreatedBefore))
	}
	order := " ORDER BY created_at DESC, id DESC"
	if p.Asc {
		if p.After != nil {
			w.add("(created_at, id) > (?, ?)", p.After.CreatedAt, p.After.ID)
		}
		order = " ORDER BY created_at, id"
	} else {
		w.before(p.Before)
	}
	q := "SELECT " + sessionCols + " FROM sessions WHERE " + w.sql() + order
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

// SessionLock is SessionGet with the session's row locked FOR UPDATE.
func (t *tx) SessionLock(ctx context.Context, workspaceID, id string) (*trove.Session, error) {
	return t.sessionGet(ctx, "SELECT "+sessionCols+" FROM sessions WHERE id = $1 AND ($2 = '' OR workspace_id = $2) FOR UPDATE", id, workspaceID)
}

// SessionUpdate replaces the session's mutable columns and tells every
// node's WaitEvents (listen.go).
func (t *tx) SessionUpdate(ctx context.Context, s *trove.Session) error {
	meta, err := metadataJSON(s.Metadata)
	if err != nil {
		return err
	}
	m := managedCols(s.Managed)
	tag, err := t.exec(ctx, `WITH w AS (SELECT pg_notify('`+notifyChannel+`', current_schema() || ' ' || $1))
		UPDATE sessions SET title = $2, metadata = $3, status = $4, updated_at = $5,
		ended_at = $6, archived_at = $7, usage_input_tokens = $8, usage_output_tokens = $9, usage_cache_read_tokens = $10,
		usage_cache_creation_tokens = $11, active_micros = $12, running_since = $13 FROM w WHERE id = $1`,
		s.ID, s.Title, meta, string(s.Status), s.UpdatedAt, s.EndedAt, s.ArchivedAt, m[3], m[4], m[5], m[6], m[7], m[8])
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("session")
	}
	return nil
}

// SessionDelete deletes a session (attachments and events cascade) and
// tells every node's WaitEvents.
func (t *tx) SessionDelete(ctx context.Context, id string) error {
	tag, err := t.exec(ctx, `WITH w AS (SELECT pg_notify('`+notifyChannel+`', current_schema() || ' ' || $1))
		DELETE FROM sessions USING w WHERE id = $1`, id)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("session")
	}
	return nil
}
