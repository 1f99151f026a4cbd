package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// agentCols reads an agent at one version: the head (a) joined with the
// version (v).
const agentCols = `a.id, a.workspace_id, v.version, v.name, v.description, v.model_id, v.model_speed, v.model_effort,
	v.system, v.tools, v.metadata, a.created_at, CASE WHEN v.version = a.version THEN a.updated_at ELSE v.created_at END, a.archived_at`

func scanAgent(r scanner) (*trove.Agent, error) {
	var a trove.Agent
	var tools, meta string
	var archived *time.Time
	if err := r.Scan(&a.ID, &a.WorkspaceID, &a.Version, &a.Name, &a.Description, &a.Model.ID, &a.Model.Speed, &a.Model.Effort,
		&a.System, &tools, &meta, &a.CreatedAt, &a.UpdatedAt, &archived); err != nil {
		return nil, err
	}
	var err error
	if a.Tools, err = storage.DecodeAgentTools(tools); err != nil {
		return nil, err
	}
	if a.Metadata, err = storage.DecodeMetadata(meta); err != nil {
		return nil, err
	}
	a.CreatedAt, a.UpdatedAt, a.ArchivedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC(), utc(archived)
	return &a, nil
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
		system, tools, metadata, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		a.ID, a.Version, a.Name, a.Description, a.Model.ID, a.Model.Speed, a.Model.Effort, a.System, tools, meta, a.UpdatedAt)
	return translate(err)
}

// AgentInsert inserts a new agent and its version a.Version.
func (t *tx) AgentInsert(ctx context.Context, a *trove.Agent) error {
	if _, err := t.exec(ctx, `INSERT INTO agents (id, workspace_id, version, created_at, updated_at, archived_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		a.ID, a.WorkspaceID, a.Version, a.CreatedAt, a.UpdatedAt, a.ArchivedAt); err != nil {
		return translate(err)
	}
	return t.agentVersionInsert(ctx, a)
}

// AgentGet returns the agent at version (0: current), or ENOTFOUND.
func (t *tx) AgentGet(ctx context.Context, workspaceID, id string, version int64) (*trove.Agent, error) {
	return t.agentGet(ctx, workspaceID, id, version, "")
}

// AgentLock is AgentGet of the current version with FOR UPDATE on the head.
func (t *tx) AgentLock(ctx context.Context, workspaceID, id string) (*trove.Agent, error) {
	return t.agentGet(ctx, workspaceID, id, 0, " FOR UPDATE OF a")
}

func (t *tx) agentGet(ctx context.Context, workspaceID, id string, version int64, suffix string) (*trove.Agent, error) {
	q := `SELECT ` + agentCols + ` FROM agents a JOIN agent_versions v ON v.agent_id = a.id
		WHERE a.id = $1 AND a.workspace_id = $2 AND v.version = CASE WHEN $3::bigint > 0 THEN $3::bigint ELSE a.version END` + suffix
	a, err := scanAgent(t.queryRow(ctx, q, id, workspaceID, version))
	if err == pgx.ErrNoRows {
		return nil, notFound("agent")
	}
	return a, translate(err)
}

// AgentUpdate moves the head and inserts the version when newVersion.
func (t *tx) AgentUpdate(ctx context.Context, a *trove.Agent, newVersion bool) error {
	tag, err := t.exec(ctx, `UPDATE agents SET version = $2, updated_at = $3, archived_at = $4 WHERE id = $1`,
		a.ID, a.Version, a.UpdatedAt, a.ArchivedAt)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("agent")
	}
	if newVersion {
		return t.agentVersionInsert(ctx, a)
	}
	return nil
}

func (t *tx) queryAgents(ctx context.Context, q string, args ...any) ([]trove.Agent, error) {
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []trove.Agent{}
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *a)
	}
	return out, translate(rows.Err())
}

// AgentList lists current versions by (created_at, id) descending.
func (t *tx) AgentList(ctx context.Context, p storage.AgentListParams) ([]trove.Agent, error) {
	var w where
	w.add("a.workspace_id = ?", p.WorkspaceID)
	if !p.IncludeArchived {
		w.add("a.archived_at IS NULL")
	}
	w.timeRange("a.created_at", p.CreatedAt)
	if p.Before != nil {
		w.add("(a.created_at, a.id) < (?, ?)", p.Before.CreatedAt, p.Before.ID)
	}
	q := `SELECT ` + agentCols + ` FROM agents a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.version WHERE ` +
		w.sql() + ` ORDER BY a.created_at DESC, a.id DESC`
	q += w.limit(p.Limit)
	return t.queryAgents(ctx, q, w.args...)
}

// AgentVersionList lists versions by version descending.
func (t *tx) AgentVersionList(ctx context.Context, agentID string, beforeVersion int64, limit int) ([]trove.Agent, error) {
	var w where
	w.add("a.id = ?", agentID)
	if beforeVersion > 0 {
		w.add("v.version < ?", beforeVersion)
	}
	q := `SELECT ` + agentCols + ` FROM agents a JOIN agent_versions v ON v.agent_id = a.id WHERE ` + w.sql() + ` ORDER BY v.version DESC`
	q += w.limit(limit)
	return t.queryAgents(ctx, q, w.args...)
}

const envCols = `id, workspace_id, name, description, type, metadata, created_at, updated_at, archived_at`

func scanEnvironment(r scanner) (*trove.Environment, error) {
	var e trove.Environment
	var meta string
	var archived *time.Time
	if err := r.Scan(&e.ID, &e.WorkspaceID, &e.Name, &e.Description, &e.Type, &meta, &e.CreatedAt, &e.UpdatedAt, &archived); err != nil {
		return nil, err
	}
	var err error
	if e.Metadata, err = storage.DecodeMetadata(meta); err != nil {
		return nil, err
	}
	e.CreatedAt, e.UpdatedAt, e.ArchivedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC(), utc(archived)
	return &e, nil
}

// EnvironmentInsert inserts a new environment.
func (t *tx) EnvironmentInsert(ctx context.Context, e *trove.Environment) error {
	meta, err := storage.EncodeMetadata(e.Metadata)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO environments (`+envCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		e.ID, e.WorkspaceID, e.Name, e.Description, e.Type, meta, e.CreatedAt, e.UpdatedAt, e.ArchivedAt)
	return translate(err)
}

// EnvironmentGet returns an environment of workspaceID ("" for any).
func (t *tx) EnvironmentGet(ctx context.Context, workspaceID, id string) (*trove.Environment, error) {
	e, err := scanEnvironment(t.queryRow(ctx, `SELECT `+envCols+` FROM environments WHERE id = $1 AND ($2 = '' OR workspace_id = $2)`, id, workspaceID))
	if err == pgx.ErrNoRows {
		return nil, notFound("environment")
	}
	return e, translate(err)
}

// EnvironmentUpdate replaces the mutable columns of e.ID.
func (t *tx) EnvironmentUpdate(ctx context.Context, e *trove.Environment) error {
	meta, err := storage.EncodeMetadata(e.Metadata)
	if err != nil {
		return err
	}
	return one(t.exec(ctx, `UPDATE environments SET name = $2, description = $3, type = $4, metadata = $5, updated_at = $6, archived_at = $7 WHERE id = $1`,
		e.ID, e.Name, e.Description, e.Type, meta, e.UpdatedAt, e.ArchivedAt))("environment")
}

// one turns an exec result into nil, its translated error, or ENOTFOUND
// when no row was affected.
func one(tag pgconn.CommandTag, err error) func(what string) error {
	return func(what string) error {
		if err != nil {
			return translate(err)
		}
		if tag.RowsAffected() == 0 {
			return notFound(what)
		}
		return nil
	}
}

// EnvironmentList lists by (created_at, id) descending.
func (t *tx) EnvironmentList(ctx context.Context, p storage.EnvironmentListParams) ([]trove.Environment, error) {
	var w where
	w.add("workspace_id = ?", p.WorkspaceID)
	if !p.IncludeArchived {
		w.add("archived_at IS NULL")
	}
	w.before(p.Before)
	q := `SELECT ` + envCols + ` FROM environments WHERE ` + w.sql() + ` ORDER BY created_at DESC, id DESC`
	q += w.limit(p.Limit)
	rows, err := t.query(ctx, q, w.args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []trove.Environment{}
	for rows.Next() {
		e, err := scanEnvironment(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *e)
	}
	return out, translate(rows.Err())
}

// EnvironmentDelete deletes the environment; its keys, work items and
// poller records go with it (ON DELETE CASCADE).
func (t *tx) EnvironmentDelete(ctx context.Context, id string) error {
	return one(t.exec(ctx, `DELETE FROM environments WHERE id = $1`, id))("environment")
}

const envKeyCols = `id, workspace_id, environment_id, name, hint, created_at, revoked_at`

func scanEnvKey(r scanner) (*trove.EnvironmentKey, error) {
	var k trove.EnvironmentKey
	var revoked *time.Time
	if err := r.Scan(&k.ID, &k.WorkspaceID, &k.EnvironmentID, &k.Name, &k.Hint, &k.CreatedAt, &revoked); err != nil {
		return nil, err
	}
	k.CreatedAt, k.RevokedAt = k.CreatedAt.UTC(), utc(revoked)
	return &k, nil
}

// EnvironmentKeyInsert stores a key with the SHA-256 of its secret.
func (t *tx) EnvironmentKeyInsert(ctx context.Context, k *trove.EnvironmentKey, secretHash []byte) error {
	_, err := t.exec(ctx, `INSERT INTO environment_keys (`+envKeyCols+`, secret_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		k.ID, k.WorkspaceID, k.EnvironmentID, k.Name, k.Hint, k.CreatedAt, k.RevokedAt, secretHash)
	return translate(err)
}

// EnvironmentKeyGetByHash finds a key by secret hash.
func (t *tx) EnvironmentKeyGetByHash(ctx context.Context, secretHash []byte) (*trove.EnvironmentKey, error) {
	k, err := scanEnvKey(t.queryRow(ctx, `SELECT `+envKeyCols+` FROM environment_keys WHERE secret_hash = $1`, secretHash))
	if err == pgx.ErrNoRows {
		return nil, notFound("environment key")
	}
	return k, translate(err)
}

// EnvironmentKeyList lists an environment's keys oldest first.
func (t *tx) EnvironmentKeyList(ctx context.Context, environmentID string) ([]trove.EnvironmentKey, error) {
	rows, err := t.query(ctx, `SELECT `+envKeyCols+` FROM environment_keys WHERE environment_id = $1 ORDER BY created_at, id`, environmentID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []trove.EnvironmentKey{}
	for rows.Next() {
		k, err := scanEnvKey(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *k)
	}
	return out, translate(rows.Err())
}

// EnvironmentKeyRevoke sets revoked_at unless set.
func (t *tx) EnvironmentKeyRevoke(ctx context.Context, id string, at time.Time) error {
	return one(t.exec(ctx, `UPDATE environment_keys SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1`, id, at))("environment key")
}

const workCols = `id, workspace_id, environment_id, session_id, state, metadata, created_at, polled_at, acknowledged_at,
	started_at, latest_heartbeat_at, stop_requested_at, stopped_at, last_heartbeat, lease_ttl_ms, lease_expires_at, worker_id, claims`

func scanWork(r scanner) (*trove.WorkItem, error) {
	var w trove.WorkItem
	var meta string
	var ttl int64
	var polled, acked, started, beat, stopReq, stopped, leaseExp *time.Time
	if err := r.Scan(&w.ID, &w.WorkspaceID, &w.EnvironmentID, &w.SessionID, &w.State, &meta, &w.CreatedAt, &polled, &acked,
		&started, &beat, &stopReq, &stopped, &w.LastHeartbeat, &ttl, &leaseExp, &w.WorkerID, &w.Claims); err != nil {
		return nil, err
	}
	var err error
	if w.Metadata, err = storage.DecodeMetadata(meta); err != nil {
		return nil, err
	}
	w.CreatedAt = w.CreatedAt.UTC()
	w.PolledAt, w.AcknowledgedAt, w.StartedAt = utc(polled), utc(acked), utc(started)
	w.LatestHeartbeatAt, w.StopRequestedAt, w.StoppedAt = utc(beat), utc(stopReq), utc(stopped)
	w.LeaseTTL, w.LeaseExpiresAt = time.Duration(ttl)*time.Millisecond, utc(leaseExp)
	return &w, nil
}

func workArgs(w *trove.WorkItem) ([]any, error) {
	meta, err := storage.EncodeMetadata(w.Metadata)
	if err != nil {
		return nil, err
	}
	return []any{w.ID, w.WorkspaceID, w.EnvironmentID, w.SessionID, string(w.State), meta, w.CreatedAt,
		w.PolledAt, w.AcknowledgedAt, w.StartedAt, w.LatestHeartbeatAt, w.StopRequestedAt, w.StoppedAt,
		w.LastHeartbeat, w.LeaseTTL.Milliseconds(), w.LeaseExpiresAt, w.WorkerID, w.Claims}, nil
}

// WorkInsert inserts a new work item; ECONFLICT when the session already
// has a live one.
func (t *tx) WorkInsert(ctx context.Context, w *trove.WorkItem) error {
	args, err := workArgs(w)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO work_items (`+workCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`, args...)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "work_items_live_session" {
		return &trove.Error{Code: trove.ECONFLICT, Message: "the session already has live work", Err: err}
	}
	return translate(err)
}

func (t *tx) workOne(ctx context.Context, q string, args ...any) (*trove.WorkItem, error) {
	w, err := scanWork(t.queryRow(ctx, q, args...))
	if err == pgx.ErrNoRows {
		return nil, notFound("work")
	}
	return w, translate(err)
}

// WorkGet returns an item of environmentID.
func (t *tx) WorkGet(ctx context.Context, environmentID, id string) (*trove.WorkItem, error) {
	return t.workOne(ctx, `SELECT `+workCols+` FROM work_items WHERE id = $1 AND environment_id = $2`, id, environmentID)
}

// WorkLock is WorkGet with FOR UPDATE.
func (t *tx) WorkLock(ctx context.Context, environmentID, id string) (*trove.WorkItem, error) {
	return t.workOne(ctx, `SELECT `+workCols+` FROM work_items WHERE id = $1 AND environment_id = $2 FOR UPDATE`, id, environmentID)
}

// WorkGetByTokenHash finds the item holding this claim token.
func (t *tx) WorkGetByTokenHash(ctx context.Context, tokenHash []byte) (*trove.WorkItem, error) {
	return t.workOne(ctx, `SELECT `+workCols+` FROM work_items WHERE token_hash = $1`, tokenHash)
}

// WorkLiveForSession returns the session's item that is not stopped.
func (t *tx) WorkLiveForSession(ctx context.Context, sessionID string) (*trove.WorkItem, error) {
	return t.workOne(ctx, `SELECT `+workCols+` FROM work_items WHERE session_id = $1 AND state <> 'stopped'`, sessionID)
}

// WorkUpdate replaces the mutable columns of w.ID.
func (t *tx) WorkUpdate(ctx context.Context, w *trove.WorkItem) error {
	meta, err := storage.EncodeMetadata(w.Metadata)
	if err != nil {
		return err
	}
	return one(t.exec(ctx, `UPDATE work_items SET state = $2, metadata = $3, polled_at = $4, acknowledged_at = $5,
		started_at = $6, latest_heartbeat_at = $7, stop_requested_at = $8, stopped_at = $9, last_heartbeat = $10, lease_ttl_ms = $11,
		lease_expires_at = $12, worker_id = $13, claims = $14 WHERE id = $1`,
		w.ID, string(w.State), meta, w.PolledAt, w.AcknowledgedAt, w.StartedAt, w.LatestHeartbeatAt, w.StopRequestedAt, w.StoppedAt,
		w.LastHeartbeat, w.LeaseTTL.Milliseconds(), w.LeaseExpiresAt, w.WorkerID, w.Claims))("work")
}

// WorkSetToken sets (nil: clears) the item's token hash.
func (t *tx) WorkSetToken(ctx context.Context, id string, tokenHash []byte) error {
	return one(t.exec(ctx, `UPDATE work_items SET token_hash = $2 WHERE id = $1`, id, tokenHash))("work")
}

// WorkClaim returns the oldest claimable item, locked; items another
// transaction is claiming are skipped (FOR UPDATE SKIP LOCKED), so two
// nodes never take the same one.
func (t *tx) WorkClaim(ctx context.Context, environmentID string, now, reclaimBefore time.Time) (*trove.WorkItem, error) {
	return t.workOne(ctx, `SELECT `+workCols+` FROM work_items WHERE environment_id = $1 AND (
			(state = 'queued' AND (polled_at IS NULL OR polled_at < $2))
			OR (state IN ('starting', 'active') AND lease_expires_at < $3))
		ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`, environmentID, reclaimBefore, now)
}

// WorkList lists an environment's items newest first.
func (t *tx) WorkList(ctx context.Context, environmentID string, before *storage.Position, limit int) ([]trove.WorkItem, error) {
	var w where
	w.add("environment_id = ?", environmentID)
	w.before(before)
	q := `SELECT ` + workCols + ` FROM work_items WHERE ` + w.sql() + ` ORDER BY created_at DESC, id DESC`
	q += w.limit(limit)
	rows, err := t.query(ctx, q, w.args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []trove.WorkItem{}
	for rows.Next() {
		it, err := scanWork(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *it)
	}
	return out, translate(rows.Err())
}

// WorkStats counts the queue.
func (t *tx) WorkStats(ctx context.Context, environmentID string, pollersSince time.Time) (trove.WorkQueueStats, error) {
	var st trove.WorkQueueStats
	var oldest *time.Time
	err := t.queryRow(ctx, `SELECT
		(SELECT count(*) FROM work_items WHERE environment_id = $1 AND state = 'queued' AND polled_at IS NULL),
		(SELECT count(*) FROM work_items WHERE environment_id = $1 AND state = 'queued' AND polled_at IS NOT NULL),
		(SELECT min(created_at) FROM work_items WHERE environment_id = $1 AND state = 'queued'),
		(SELECT count(*) FROM work_pollers WHERE environment_id = $1 AND polled_at >= $2)`,
		environmentID, pollersSince).Scan(&st.Depth, &st.Pending, &oldest, &st.WorkersPolling)
	st.OldestQueuedAt = utc(oldest)
	return st, translate(err)
}

// WorkPollerSeen records a poll.
func (t *tx) WorkPollerSeen(ctx context.Context, environmentID, workerID string, at time.Time) error {
	_, err := t.exec(ctx, `INSERT INTO work_pollers (environment_id, worker_id, polled_at) VALUES ($1, $2, $3)
		ON CONFLICT (environment_id, worker_id) DO UPDATE SET polled_at = greatest(work_pollers.polled_at, excluded.polled_at)`,
		environmentID, workerID, at)
	return translate(err)
}
