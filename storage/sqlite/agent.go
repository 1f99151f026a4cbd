package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// agentCols reads an agent at one version: the head (a) joined with the
// version (v).
const agentCols = `a.id, a.workspace_id, v.version, v.name, v.description, v.model_id, v.model_speed, v.model_effort,
	v.system, v.tools, v.metadata, a.created_at, CASE WHEN v.version = a.version THEN a.updated_at ELSE v.created_at END, a.archived_at`

func scanAgent(r rowScanner, a *trove.Agent) error {
	var tools, meta string
	var created, updated int64
	var archived sql.NullInt64
	if err := r.Scan(&a.ID, &a.WorkspaceID, &a.Version, &a.Name, &a.Description, &a.Model.ID, &a.Model.Speed, &a.Model.Effort,
		&a.System, &tools, &meta, &created, &updated, &archived); err != nil {
		return err
	}
	var err error
	if a.Tools, err = storage.DecodeAgentTools(tools); err != nil {
		return err
	}
	if a.Metadata, err = storage.DecodeMetadata(meta); err != nil {
		return err
	}
	a.CreatedAt, a.UpdatedAt, a.ArchivedAt = fromMicros(created), fromMicros(updated), timePtr(archived)
	return nil
}

func (t *tx) agentVersionInsert(ctx context.Context, a *trove.Agent) error {
	tools, err := storage.EncodeAgentTools(a.Tools)
	if err != nil {
		return err
	}
	meta, err := storage.EncodeMetadata(a.Metadata)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO agent_versions (agent_id, version, name, description, model_id, model_speed, model_effort,
		system, tools, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.Version, a.Name, a.Description, a.Model.ID, a.Model.Speed, a.Model.Effort, a.System, tools, meta, micros(a.UpdatedAt))
	return err
}

// AgentInsert inserts a new agent and its version a.Version.
func (t *tx) AgentInsert(ctx context.Context, a *trove.Agent) error {
	if _, err := t.exec(ctx, `INSERT INTO agents (id, workspace_id, version, created_at, updated_at, archived_at) VALUES (?, ?, ?, ?, ?, ?)`,
		a.ID, a.WorkspaceID, a.Version, micros(a.CreatedAt), micros(a.UpdatedAt), nullMicros(a.ArchivedAt)); err != nil {
		return err
	}
	return t.agentVersionInsert(ctx, a)
}

// AgentGet returns the agent at version (0: current), or ENOTFOUND.
func (t *tx) AgentGet(ctx context.Context, workspaceID, id string, version int64) (*trove.Agent, error) {
	var a trove.Agent
	q := `SELECT ` + agentCols + ` FROM agents a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.version
		WHERE a.id = ? AND a.workspace_id = ?`
	args := []any{id, workspaceID}
	if version > 0 {
		q = `SELECT ` + agentCols + ` FROM agents a JOIN agent_versions v ON v.agent_id = a.id
			WHERE a.id = ? AND a.workspace_id = ? AND v.version = ?`
		args = append(args, version)
	}
	if err := t.queryRow(ctx, "agent", id, func(r rowScanner) error { return scanAgent(r, &a) }, q, args...); err != nil {
		return nil, err
	}
	return &a, nil
}

// AgentLock is AgentGet of the current version (SQLite runs one writer at a
// time, so the write transaction already serializes).
func (t *tx) AgentLock(ctx context.Context, workspaceID, id string) (*trove.Agent, error) {
	return t.AgentGet(ctx, workspaceID, id, 0)
}

// AgentUpdate moves the head and inserts the version when newVersion.
func (t *tx) AgentUpdate(ctx context.Context, a *trove.Agent, newVersion bool) error {
	if err := t.execOne(ctx, "agent", a.ID, `UPDATE agents SET version = ?, updated_at = ?, archived_at = ? WHERE id = ?`,
		a.Version, micros(a.UpdatedAt), nullMicros(a.ArchivedAt), a.ID); err != nil {
		return err
	}
	if newVersion {
		return t.agentVersionInsert(ctx, a)
	}
	return nil
}

func (t *tx) queryAgents(ctx context.Context, q string, args ...any) ([]trove.Agent, error) {
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.Agent{}
	for rows.Next() {
		var a trove.Agent
		if err := scanAgent(rows, &a); err != nil {
			return nil, translate(err)
		}
		out = append(out, a)
	}
	return out, translate(rows.Err())
}

// AgentList lists current versions by (created_at, id) descending.
func (t *tx) AgentList(ctx context.Context, p storage.AgentListParams) ([]trove.Agent, error) {
	var w whereBuilder
	w.add("a.workspace_id = ?", p.WorkspaceID)
	if !p.IncludeArchived {
		w.add("a.archived_at IS NULL")
	}
	w.timeRange("a.created_at", p.CreatedAt)
	if p.Before != nil {
		us, id := beforeKey(p.Before)
		w.add("(a.created_at, a.id) < (?, ?)", us, id)
	}
	return t.queryAgents(ctx, `SELECT `+agentCols+` FROM agents a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.version`+
		w.String()+` ORDER BY a.created_at DESC, a.id DESC LIMIT ?`, append(w.args, limitArg(p.Limit))...)
}

// AgentVersionList lists versions by version descending.
func (t *tx) AgentVersionList(ctx context.Context, agentID string, beforeVersion int64, limit int) ([]trove.Agent, error) {
	var w whereBuilder
	w.add("a.id = ?", agentID)
	if beforeVersion > 0 {
		w.add("v.version < ?", beforeVersion)
	}
	return t.queryAgents(ctx, `SELECT `+agentCols+` FROM agents a JOIN agent_versions v ON v.agent_id = a.id`+
		w.String()+` ORDER BY v.version DESC LIMIT ?`, append(w.args, limitArg(limit))...)
}

const envCols = `id, workspace_id, name, description, type, metadata, created_at, updated_at, archived_at`

func scanEnvironment(r rowScanner, e *trove.Environment) error {
	var desc sql.NullString
	var meta string
	var created, updated int64
	var archived sql.NullInt64
	if err := r.Scan(&e.ID, &e.WorkspaceID, &e.Name, &desc, &e.Type, &meta, &created, &updated, &archived); err != nil {
		return err
	}
	if desc.Valid {
		e.Description = &desc.String
	}
	var err error
	if e.Metadata, err = storage.DecodeMetadata(meta); err != nil {
		return err
	}
	e.CreatedAt, e.UpdatedAt, e.ArchivedAt = fromMicros(created), fromMicros(updated), timePtr(archived)
	return nil
}

// EnvironmentInsert inserts a new environment.
func (t *tx) EnvironmentInsert(ctx context.Context, e *trove.Environment) error {
	meta, err := storage.EncodeMetadata(e.Metadata)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO environments (`+envCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.WorkspaceID, e.Name, nullString(e.Description), e.Type, meta, micros(e.CreatedAt), micros(e.UpdatedAt), nullMicros(e.ArchivedAt))
	return err
}

// EnvironmentGet returns an environment of workspaceID ("" for any).
func (t *tx) EnvironmentGet(ctx context.Context, workspaceID, id string) (*trove.Environment, error) {
	var e trove.Environment
	q, args := `SELECT `+envCols+` FROM environments WHERE id = ?`, []any{id}
	if workspaceID != "" {
		q, args = q+` AND workspace_id = ?`, append(args, workspaceID)
	}
	if err := t.queryRow(ctx, "environment", id, func(r rowScanner) error { return scanEnvironment(r, &e) }, q, args...); err != nil {
		return nil, err
	}
	return &e, nil
}

// EnvironmentUpdate replaces the mutable columns of e.ID.
func (t *tx) EnvironmentUpdate(ctx context.Context, e *trove.Environment) error {
	meta, err := storage.EncodeMetadata(e.Metadata)
	if err != nil {
		return err
	}
	return t.execOne(ctx, "environment", e.ID,
		`UPDATE environments SET name = ?, description = ?, type = ?, metadata = ?, updated_at = ?, archived_at = ? WHERE id = ?`,
		e.Name, nullString(e.Description), e.Type, meta, micros(e.UpdatedAt), nullMicros(e.ArchivedAt), e.ID)
}

// EnvironmentList lists by (created_at, id) descending.
func (t *tx) EnvironmentList(ctx context.Context, p storage.EnvironmentListParams) ([]trove.Environment, error) {
	var w whereBuilder
	w.add("workspace_id = ?", p.WorkspaceID)
	if !p.IncludeArchived {
		w.add("archived_at IS NULL")
	}
	w.before(p.Before)
	rows, err := t.query(ctx, `SELECT `+envCols+` FROM environments`+w.String()+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(w.args, limitArg(p.Limit))...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.Environment{}
	for rows.Next() {
		var e trove.Environment
		if err := scanEnvironment(rows, &e); err != nil {
			return nil, translate(err)
		}
		out = append(out, e)
	}
	return out, translate(rows.Err())
}

// EnvironmentDelete deletes the environment and everything of it.
func (t *tx) EnvironmentDelete(ctx context.Context, id string) error {
	for _, q := range []string{
		`DELETE FROM work_pollers WHERE environment_id = ?`,
		`DELETE FROM work_items WHERE environment_id = ?`,
		`DELETE FROM environment_keys WHERE environment_id = ?`,
	} {
		if _, err := t.exec(ctx, q, id); err != nil {
			return err
		}
	}
	return t.execOne(ctx, "environment", id, `DELETE FROM environments WHERE id = ?`, id)
}

const envKeyCols = `id, workspace_id, environment_id, name, hint, created_at, revoked_at`

func scanEnvKey(r rowScanner, k *trove.EnvironmentKey) error {
	var created int64
	var revoked sql.NullInt64
	if err := r.Scan(&k.ID, &k.WorkspaceID, &k.EnvironmentID, &k.Name, &k.Hint, &created, &revoked); err != nil {
		return err
	}
	k.CreatedAt, k.RevokedAt = fromMicros(created), timePtr(revoked)
	return nil
}

// EnvironmentKeyInsert stores a key with the SHA-256 of its secret.
func (t *tx) EnvironmentKeyInsert(ctx context.Context, k *trove.EnvironmentKey, secretHash []byte) error {
	_, err := t.exec(ctx, `INSERT INTO environment_keys (`+envKeyCols+`, secret_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.WorkspaceID, k.EnvironmentID, k.Name, k.Hint, micros(k.CreatedAt), nullMicros(k.RevokedAt), nonNilBytes(secretHash))
	return err
}

// EnvironmentKeyGetByHash finds a key by secret hash.
func (t *tx) EnvironmentKeyGetByHash(ctx context.Context, secretHash []byte) (*trove.EnvironmentKey, error) {
	var k trove.EnvironmentKey
	err := t.queryRow(ctx, "environment key", "(by secret)", func(r rowScanner) error { return scanEnvKey(r, &k) },
		`SELECT `+envKeyCols+` FROM environment_keys WHERE secret_hash = ?`, nonNilBytes(secretHash))
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// EnvironmentKeyList lists an environment's keys oldest first.
func (t *tx) EnvironmentKeyList(ctx context.Context, environmentID string) ([]trove.EnvironmentKey, error) {
	rows, err := t.query(ctx, `SELECT `+envKeyCols+` FROM environment_keys WHERE environment_id = ? ORDER BY created_at, id`, environmentID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.EnvironmentKey{}
	for rows.Next() {
		var k trove.EnvironmentKey
		if err := scanEnvKey(rows, &k); err != nil {
			return nil, translate(err)
		}
		out = append(out, k)
	}
	return out, translate(rows.Err())
}

// EnvironmentKeyRevoke sets revoked_at unless set.
func (t *tx) EnvironmentKeyRevoke(ctx context.Context, id string, at time.Time) error {
	return t.execOne(ctx, "environment key", id,
		`UPDATE environment_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, micros(at), id)
}

const workCols = `id, workspace_id, environment_id, session_id, state, metadata, created_at, polled_at, acknowledged_at,
	started_at, latest_heartbeat_at, stop_requested_at, stopped_at, last_heartbeat, lease_ttl_ms, lease_expires_at, worker_id, claims`

func scanWork(r rowScanner, w *trove.WorkItem) error {
	var meta string
	var created, ttl int64
	var polled, acked, started, beat, stopReq, stopped, leaseExp sql.NullInt64
	if err := r.Scan(&w.ID, &w.WorkspaceID, &w.EnvironmentID, &w.SessionID, &w.State, &meta, &created, &polled, &acked,
		&started, &beat, &stopReq, &stopped, &w.LastHeartbeat, &ttl, &leaseExp, &w.WorkerID, &w.Claims); err != nil {
		return err
	}
	var err error
	if w.Metadata, err = storage.DecodeMetadata(meta); err != nil {
		return err
	}
	w.CreatedAt = fromMicros(created)
	w.PolledAt, w.AcknowledgedAt, w.StartedAt = timePtr(polled), timePtr(acked), timePtr(started)
	w.LatestHeartbeatAt, w.StopRequestedAt, w.StoppedAt = timePtr(beat), timePtr(stopReq), timePtr(stopped)
	w.LeaseTTL, w.LeaseExpiresAt = time.Duration(ttl)*time.Millisecond, timePtr(leaseExp)
	return nil
}

func workArgs(w *trove.WorkItem) ([]any, error) {
	meta, err := storage.EncodeMetadata(w.Metadata)
	if err != nil {
		return nil, err
	}
	return []any{w.ID, w.WorkspaceID, w.EnvironmentID, w.SessionID, string(w.State), meta, micros(w.CreatedAt),
		nullMicros(w.PolledAt), nullMicros(w.AcknowledgedAt), nullMicros(w.StartedAt), nullMicros(w.LatestHeartbeatAt),
		nullMicros(w.StopRequestedAt), nullMicros(w.StoppedAt), w.LastHeartbeat, w.LeaseTTL.Milliseconds(),
		nullMicros(w.LeaseExpiresAt), w.WorkerID, w.Claims}, nil
}

// WorkInsert inserts a new work item; ECONFLICT when the session already
// has a live one.
func (t *tx) WorkInsert(ctx context.Context, w *trove.WorkItem) error {
	args, err := workArgs(w)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO work_items (`+workCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
	if isUnique(err, "work_items.session_id") {
		return &trove.Error{Code: trove.ECONFLICT, Message: "the session already has live work", Err: err}
	}
	return err
}

func (t *tx) workOne(ctx context.Context, id string, q string, args ...any) (*trove.WorkItem, error) {
	var w trove.WorkItem
	if err := t.queryRow(ctx, "work", id, func(r rowScanner) error { return scanWork(r, &w) }, q, args...); err != nil {
		return nil, err
	}
	return &w, nil
}

// WorkGet returns an item of environmentID.
func (t *tx) WorkGet(ctx context.Context, environmentID, id string) (*trove.WorkItem, error) {
	return t.workOne(ctx, id, `SELECT `+workCols+` FROM work_items WHERE id = ? AND environment_id = ?`, id, environmentID)
}

// WorkLock is WorkGet (the write transaction already serializes).
func (t *tx) WorkLock(ctx context.Context, environmentID, id string) (*trove.WorkItem, error) {
	return t.WorkGet(ctx, environmentID, id)
}

// WorkGetByTokenHash finds the item holding this claim token.
func (t *tx) WorkGetByTokenHash(ctx context.Context, tokenHash []byte) (*trove.WorkItem, error) {
	return t.workOne(ctx, "(by token)", `SELECT `+workCols+` FROM work_items WHERE token_hash = ?`, nonNilBytes(tokenHash))
}

// WorkLiveForSession returns the session's item that is not stopped.
func (t *tx) WorkLiveForSession(ctx context.Context, sessionID string) (*trove.WorkItem, error) {
	return t.workOne(ctx, sessionID, `SELECT `+workCols+` FROM work_items WHERE session_id = ? AND state <> 'stopped'`, sessionID)
}

// WorkUpdate replaces the mutable columns of w.ID.
func (t *tx) WorkUpdate(ctx context.Context, w *trove.WorkItem) error {
	meta, err := storage.EncodeMetadata(w.Metadata)
	if err != nil {
		return err
	}
	return t.execOne(ctx, "work", w.ID, `UPDATE work_items SET state = ?, metadata = ?, polled_at = ?, acknowledged_at = ?,
		started_at = ?, latest_heartbeat_at = ?, stop_requested_at = ?, stopped_at = ?, last_heartbeat = ?, lease_ttl_ms = ?,
		lease_expires_at = ?, worker_id = ?, claims = ? WHERE id = ?`,
		string(w.State), meta, nullMicros(w.PolledAt), nullMicros(w.AcknowledgedAt), nullMicros(w.StartedAt),
		nullMicros(w.LatestHeartbeatAt), nullMicros(w.StopRequestedAt), nullMicros(w.StoppedAt), w.LastHeartbeat,
		w.LeaseTTL.Milliseconds(), nullMicros(w.LeaseExpiresAt), w.WorkerID, w.Claims, w.ID)
}

// WorkSetToken sets (nil: clears) the item's token hash.
func (t *tx) WorkSetToken(ctx context.Context, id string, tokenHash []byte) error {
	var tok any
	if tokenHash != nil {
		tok = tokenHash
	}
	return t.execOne(ctx, "work", id, `UPDATE work_items SET token_hash = ? WHERE id = ?`, tok, id)
}

// WorkClaim returns the oldest claimable item (SQLite has one writer, so
// the caller's update in the same transaction cannot race another claim).
func (t *tx) WorkClaim(ctx context.Context, environmentID string, now, reclaimBefore time.Time) (*trove.WorkItem, error) {
	return t.workOne(ctx, "(claimable)", `SELECT `+workCols+` FROM work_items WHERE environment_id = ? AND (
			(state = 'queued' AND (polled_at IS NULL OR polled_at < ?))
			OR (state IN ('starting', 'active') AND lease_expires_at < ?))
		ORDER BY created_at, id LIMIT 1`, environmentID, micros(reclaimBefore), micros(now))
}

// WorkList lists an environment's items newest first.
func (t *tx) WorkList(ctx context.Context, environmentID string, before *storage.Position, limit int) ([]trove.WorkItem, error) {
	var w whereBuilder
	w.add("environment_id = ?", environmentID)
	w.before(before)
	rows, err := t.query(ctx, `SELECT `+workCols+` FROM work_items`+w.String()+` ORDER BY created_at DESC, id DESC LIMIT ?`,
		append(w.args, limitArg(limit))...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.WorkItem{}
	for rows.Next() {
		var it trove.WorkItem
		if err := scanWork(rows, &it); err != nil {
			return nil, translate(err)
		}
		out = append(out, it)
	}
	return out, translate(rows.Err())
}

// WorkStats counts the queue.
func (t *tx) WorkStats(ctx context.Context, environmentID string, pollersSince time.Time) (trove.WorkQueueStats, error) {
	var st trove.WorkQueueStats
	var oldest sql.NullInt64
	err := t.queryRow(ctx, "environment", environmentID, func(r rowScanner) error {
		return r.Scan(&st.Depth, &st.Pending, &oldest, &st.WorkersPolling)
	}, `SELECT
		(SELECT count(*) FROM work_items WHERE environment_id = ?1 AND state = 'queued' AND polled_at IS NULL),
		(SELECT count(*) FROM work_items WHERE environment_id = ?1 AND state = 'queued' AND polled_at IS NOT NULL),
		(SELECT min(created_at) FROM work_items WHERE environment_id = ?1 AND state = 'queued'),
		(SELECT count(*) FROM work_pollers WHERE environment_id = ?1 AND polled_at >= ?2)`,
		environmentID, micros(pollersSince))
	st.OldestQueuedAt = timePtr(oldest)
	return st, err
}

// WorkPollerSeen records a poll.
func (t *tx) WorkPollerSeen(ctx context.Context, environmentID, workerID string, at time.Time) error {
	_, err := t.exec(ctx, `INSERT INTO work_pollers (environment_id, worker_id, polled_at) VALUES (?, ?, ?)
		ON CONFLICT (environment_id, worker_id) DO UPDATE SET polled_at = excluded.polled_at`, environmentID, workerID, micros(at))
	return err
}
