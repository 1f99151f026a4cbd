package trove

import (
	"context"
	"time"
)

// WorkState is where a work item is in its life:
// queued → (polled) → starting (acked) → active (first heartbeat) →
// stopping (stop requested) → stopped. A work item whose claim or lease
// lapses goes back to queued (reclaim). stopped is final.
type WorkState string

const (
	WorkQueued   WorkState = "queued"
	WorkStarting WorkState = "starting"
	WorkActive   WorkState = "active"
	WorkStopping WorkState = "stopping"
	WorkStopped  WorkState = "stopped"
)

// WorkDataSession is the only work data type: the session a worker must
// serve.
const WorkDataSession = "session"

// NoHeartbeat is the expected_last_heartbeat value that claims a lease that
// has had no heartbeat yet.
const NoHeartbeat = "NO_HEARTBEAT"

// Work queue timing, as the API defines it.
const (
	// DefaultReclaimAfter is how long a polled, unacknowledged item stays
	// claimed before another poll may take it (reclaim_older_than_ms).
	DefaultReclaimAfter = 5 * time.Second
	// MaxPollBlock is the longest a poll waits for work (block_ms 1-999).
	MaxPollBlock = 999 * time.Millisecond
	// DefaultLeaseTTL, MinLeaseTTL and MaxLeaseTTL bound a heartbeat's lease
	// (desired_ttl_seconds is clamped into [Min, Max]).
	DefaultLeaseTTL = 30 * time.Second
	MinLeaseTTL     = 5 * time.Second
	MaxLeaseTTL     = 300 * time.Second
)

// WorkItem is a unit of work in a self-hosted environment's queue: a
// session that needs a worker. At most one item per session is not
// stopped at any time.
type WorkItem struct {
	ID            string // work_…
	WorkspaceID   string
	EnvironmentID string
	SessionID     string // data.id (data.type is always "session")
	State         WorkState
	Metadata      map[string]string
	// Secret is set only in the result of the poll that claimed the item:
	// URL-safe base64 (no padding) of {"sessions_token": "…"}, a credential
	// that acts as the session (its stores only) and also heartbeats and
	// stops this item. It dies when the item stops or is claimed again.
	Secret string

	CreatedAt         time.Time
	PolledAt          *time.Time // the current claim's poll; nil while queued
	AcknowledgedAt    *time.Time
	StartedAt         *time.Time // the first heartbeat of the current claim
	LatestHeartbeatAt *time.Time
	StopRequestedAt   *time.Time
	StoppedAt         *time.Time

	// Lease bookkeeping: the heartbeat token the holder must echo ("" for
	// none yet), the lease's TTL and expiry, the polling worker's ID, and
	// how many times the item was claimed.
	LastHeartbeat  string
	LeaseTTL       time.Duration
	LeaseExpiresAt *time.Time
	WorkerID       string
	Claims         int
}

// WorkLease is a work item's lease as the server holds it: the answer to a
// heartbeat, and the current_state detail of a refused one.
type WorkLease struct {
	LastHeartbeat string // "" when there has been none
	LeaseExtended bool
	State         WorkState
	TTL           time.Duration
}

// PollWorkParams are a poll's options.
type PollWorkParams struct {
	Block        time.Duration // 0: return at once; at most MaxPollBlock
	ReclaimAfter time.Duration // 0: DefaultReclaimAfter
	WorkerID     string        // the Anthropic-Worker-ID header, for stats
}

// HeartbeatParams are a heartbeat's options.
type HeartbeatParams struct {
	// ExpectedLastHeartbeat is NoHeartbeat for the first beat of a claim, or
	// the LastHeartbeat of the previous answer. Not compared on a stopping
	// or stopped item.
	ExpectedLastHeartbeat string
	DesiredTTL            time.Duration // 0: DefaultLeaseTTL
}

// ListWorkParams pages an environment's work items, newest first.
type ListWorkParams struct {
	Limit  int // 0 means 20, at most 1,000
	Cursor string
}

// WorkQueueStats describes an environment's queue.
type WorkQueueStats struct {
	Depth          int        // queued items
	Pending        int        // polled, not acknowledged
	OldestQueuedAt *time.Time // oldest queued or pending item
	WorkersPolling int        // distinct worker IDs that polled in the last 30 s
}

// WorkService is the self-hosted work queue. An environment key reaches only
// its own environment's queue; a work item's session token reaches only
// GetWork, HeartbeatWork and StopWork of items of its session; API keys
// reach every environment of their workspace. Anything else is EFORBIDDEN
// (ENOTFOUND for another workspace's environment).
type WorkService interface {
	// PollWork claims the oldest claimable item — queued, polled but not
	// acknowledged for longer than ReclaimAfter, or acknowledged/active with
	// an expired lease (a dead worker's) — and returns it with a fresh
	// Secret; nil, nil when none arrives within Block. The credential is
	// re-checked while waiting. EINVALID on an archived environment.
	PollWork(ctx context.Context, environmentID string, p PollWorkParams) (*WorkItem, error)
	// AckWork confirms the claim: a polled item becomes starting.
	// ECONFLICT for an item that is not polled-and-unacknowledged.
	AckWork(ctx context.Context, environmentID, workID string) (*WorkItem, error)
	// HeartbeatWork extends the lease. A stopping or stopped item answers
	// its state with LeaseExtended false (no comparison). Otherwise a
	// mismatched ExpectedLastHeartbeat, a re-queued item or an expired lease
	// is ELEASELOST carrying the server's lease (Error.Lease).
	HeartbeatWork(ctx context.Context, environmentID, workID string, p HeartbeatParams) (*WorkLease, error)
	// StopWork stops the item. force, a stop by the worker itself (the
	// environment key or the item's token) or an item no worker holds stops
	// it at once; a workspace key's graceful stop makes it stopping until
	// its worker, told by its next heartbeat, stops it.
	// ECONFLICT for an item already stopped.
	StopWork(ctx context.Context, environmentID, workID string, force bool) (*WorkItem, error)
	// UpdateWork merges metadata (a key mapped to nil is removed).
	UpdateWork(ctx context.Context, environmentID, workID string, metadata map[string]*string) (*WorkItem, error)
	// GetWork never returns the Secret.
	GetWork(ctx context.Context, environmentID, workID string) (*WorkItem, error)
	ListWork(ctx context.Context, environmentID string, p ListWorkParams) (*Page[WorkItem], error)
	WorkStats(ctx context.Context, environmentID string) (*WorkQueueStats, error)
}
