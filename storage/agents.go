package storage

import (
	"context"
	"time"

	"github.com/trovehq/trove"
)

// AgentTx is the part of Tx that stores agents, environments, environment
// keys and the self-hosted work queue (Managed Agents).
type AgentTx interface {
	// AgentInsert inserts a new agent and its version a.Version.
	AgentInsert(ctx context.Context, a *trove.Agent) error
	// AgentGet returns the agent of workspaceID at version (0: current), or
	// ENOTFOUND.
	AgentGet(ctx context.Context, workspaceID, id string, version int64) (*trove.Agent, error)
	// AgentLock is AgentGet of the current version that also serializes every
	// other AgentLock of the agent until the transaction ends.
	AgentLock(ctx context.Context, workspaceID, id string) (*trove.Agent, error)
	// AgentUpdate sets the agent's head to a (version, updated_at,
	// archived_at) and, when newVersion, inserts version a.Version.
	AgentUpdate(ctx context.Context, a *trove.Agent, newVersion bool) error
	// AgentList lists current versions by (created_at, id) descending.
	AgentList(ctx context.Context, p AgentListParams) ([]trove.Agent, error)
	// AgentVersionList lists an agent's versions by version descending,
	// strictly below BeforeVersion when it is not 0.
	AgentVersionList(ctx context.Context, agentID string, beforeVersion int64, limit int) ([]trove.Agent, error)

	// EnvironmentInsert inserts a new environment.
	EnvironmentInsert(ctx context.Context, e *trove.Environment) error
	// EnvironmentGet returns an environment of workspaceID ("" for any), or
	// ENOTFOUND.
	EnvironmentGet(ctx context.Context, workspaceID, id string) (*trove.Environment, error)
	// EnvironmentUpdate replaces name, description, type, metadata,
	// updated_at and archived_at of e.ID.
	EnvironmentUpdate(ctx context.Context, e *trove.Environment) error
	// EnvironmentList lists by (created_at, id) descending.
	EnvironmentList(ctx context.Context, p EnvironmentListParams) ([]trove.Environment, error)
	// EnvironmentDelete deletes the environment with its keys, work items
	// and poller records.
	EnvironmentDelete(ctx context.Context, id string) error

	// EnvironmentKeyInsert stores a key with the SHA-256 of its secret.
	EnvironmentKeyInsert(ctx context.Context, k *trove.EnvironmentKey, secretHash []byte) error
	// EnvironmentKeyGetByHash finds a key (revoked ones too), or ENOTFOUND.
	EnvironmentKeyGetByHash(ctx context.Context, secretHash []byte) (*trove.EnvironmentKey, error)
	// EnvironmentKeyList lists an environment's keys by (created_at, id).
	EnvironmentKeyList(ctx context.Context, environmentID string) ([]trove.EnvironmentKey, error)
	// EnvironmentKeyRevoke sets revoked_at unless set; ENOTFOUND for an
	// unknown key.
	EnvironmentKeyRevoke(ctx context.Context, id string, at time.Time) error

	// WorkInsert inserts a new work item; ECONFLICT when its session already
	// has an item that is not stopped.
	WorkInsert(ctx context.Context, w *trove.WorkItem) error
	// WorkGet returns an item of environmentID, or ENOTFOUND.
	WorkGet(ctx context.Context, environmentID, id string) (*trove.WorkItem, error)
	// WorkLock is WorkGet that also serializes every other WorkLock (and
	// WorkClaim) of the item until the transaction ends.
	WorkLock(ctx context.Context, environmentID, id string) (*trove.WorkItem, error)
	// WorkGetByTokenHash finds the item whose current claim token has this
	// hash, or ENOTFOUND.
	WorkGetByTokenHash(ctx context.Context, tokenHash []byte) (*trove.WorkItem, error)
	// WorkLiveForSession returns the session's item that is not stopped, or
	// ENOTFOUND.
	WorkLiveForSession(ctx context.Context, sessionID string) (*trove.WorkItem, error)
	// WorkUpdate replaces every mutable column of w.ID (state, metadata,
	// timestamps, lease, worker, claims); the token hash stays.
	WorkUpdate(ctx context.Context, w *trove.WorkItem) error
	// WorkSetToken sets the hash of the item's current claim token (nil
	// clears it).
	WorkSetToken(ctx context.Context, id string, tokenHash []byte) error
	// WorkClaim takes the oldest claimable item of environmentID — queued;
	// polled and unacknowledged with polled_at before reclaimBefore; or
	// starting/active with lease_expires_at before now — and returns it
	// (unchanged: the caller updates it with WorkUpdate in the same
	// transaction). ENOTFOUND when none. Two concurrent claims never take the
	// same item (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: the single
	// writer).
	WorkClaim(ctx context.Context, environmentID string, now, reclaimBefore time.Time) (*trove.WorkItem, error)
	// WorkList lists an environment's items by (created_at, id) descending.
	WorkList(ctx context.Context, environmentID string, before *Position, limit int) ([]trove.WorkItem, error)
	// WorkStats counts queued items (depth) and polled-unacknowledged ones
	// (pending), the oldest created_at among them, and the workers that
	// polled at or after pollersSince.
	WorkStats(ctx context.Context, environmentID string, pollersSince time.Time) (trove.WorkQueueStats, error)
	// WorkPollerSeen records that workerID polled environmentID at at.
	WorkPollerSeen(ctx context.Context, environmentID, workerID string, at time.Time) error
}

// AgentListParams filters AgentList.
type AgentListParams struct {
	WorkspaceID     string
	IncludeArchived bool
	CreatedAt       trove.TimeRange
	Before          *Position
	Limit           int
}

// EnvironmentListParams filters EnvironmentList.
type EnvironmentListParams struct {
	WorkspaceID     string
	IncludeArchived bool
	Before          *Position
	Limit           int
}
