package trove

import (
	"context"
	"time"
)

// DreamStatus is where a dream is in its life:
// pending → running → completed | failed | canceled. The three terminal
// statuses never change once reached.
type DreamStatus string

const (
	DreamPending   DreamStatus = "pending"
	DreamRunning   DreamStatus = "running"
	DreamCompleted DreamStatus = "completed"
	DreamFailed    DreamStatus = "failed"
	DreamCanceled  DreamStatus = "canceled"
)

// Terminal reports whether s is completed, failed or canceled.
func (s DreamStatus) Terminal() bool {
	return s == DreamCompleted || s == DreamFailed || s == DreamCanceled
}

// Dream output behaviours.
const (
	OutputCreateNew      = "create_new"      // a new store cloned from the input (default)
	OutputUpdateExisting = "update_existing" // the input store, consolidated in place
)

// Dream error types (error.type), as the hosted API names them.
const (
	DreamErrTimeout            = "timeout"
	DreamErrInternal           = "internal_error"
	DreamErrStoreTooLarge      = "input_memory_store_too_large"
	DreamErrStoreUnavailable   = "input_memory_store_unavailable"
	DreamErrSessionUnavailable = "input_session_unavailable"
	DreamErrModelNotConfigured = "model_not_configured"
	DreamErrModelRequestFailed = "model_request_failed"
	DreamErrBudgetExhausted    = "budget_exhausted"
	DreamErrRunnerLost         = "runner_lost"
	// DreamErrCredentialRevoked (Trove's): the API key of the dream's
	// creator was revoked before or while it ran.
	DreamErrCredentialRevoked = "credential_revoked"
)

// DreamUsage is the model token usage of a dream, summed over its model
// calls.
type DreamUsage struct {
	InputTokens              int64
	OutputTokens             int64
	CacheReadInputTokens     int64
	CacheCreationInputTokens int64
}

// DreamError says why a dream failed.
type DreamError struct {
	Type    string
	Message string
}

// Dream is an asynchronous job that consolidates one memory store from
// session transcripts into an output store (a new one cloned from the input
// by default), running as a session of its own whose writes are versions
// attributed to it.
type Dream struct {
	ID             string // drm_…
	WorkspaceID    string
	Status         DreamStatus
	InputStoreID   string
	SessionIDs     []string // the input sessions, sorted
	Model          string
	ModelSpeed     string // "standard"
	Instructions   string // "" when unset
	OutputBehavior string // OutputCreateNew or OutputUpdateExisting
	OutputStoreID  string // "" until known
	SessionID      string // the dream's own session; "" until running
	Usage          DreamUsage
	Error          *DreamError
	CreatedBy      Actor
	CreatedAt      time.Time
	EndedAt        *time.Time
	ArchivedAt     *time.Time
	// Runner bookkeeping, not part of the API, read from the dream's job
	// in the jobs queue while it has one (from its creation until its
	// runner finishes it; zero after): the node holding the dream and
	// until when its lease runs (renewed by heartbeats), and how many
	// times a runner claimed it.
	LeaseOwner     string
	LeaseExpiresAt *time.Time
	Attempts       int
}

// CreateDreamParams creates a dream.
type CreateDreamParams struct {
	StoreID        string
	SessionIDs     []string
	Model          string
	ModelSpeed     string // "" means "standard"
	Instructions   string
	OutputBehavior string // "" means OutputCreateNew
	// OutputStoreID is the store named by update_existing; it must equal
	// StoreID.
	OutputStoreID string
}

// ListDreamsParams filters and pages dreams, newest first.
type ListDreamsParams struct {
	Limit           int
	Cursor          string
	Statuses        []DreamStatus
	CreatedAfter    *time.Time // created_at > this
	CreatedBefore   *time.Time // created_at < this
	IncludeArchived bool
}

// DreamService manages dreams. Session credentials cannot call it.
type DreamService interface {
	// CreateDream queues a dream (status pending). EINVALID for a missing,
	// archived or repeated input, 0 or more than Limits.MaxDreamSessions
	// sessions, a bad model, speed or output behaviour, instructions over
	// Limits.MaxInstructionsChars; ENOTFOUND for an unknown store or
	// session; ECONFLICT for update_existing while another update_existing
	// dream on the store has not fully stopped.
	CreateDream(ctx context.Context, p CreateDreamParams) (*Dream, error)
	// GetDream returns archived dreams too; ENOTFOUND if absent.
	GetDream(ctx context.Context, dreamID string) (*Dream, error)
	// ListDreams lists newest first.
	ListDreams(ctx context.Context, p ListDreamsParams) (*Page[Dream], error)
	// CancelDream moves a pending or running dream to canceled; a canceled
	// dream is returned unchanged; EINVALID for a completed or failed one.
	CancelDream(ctx context.Context, dreamID string) (*Dream, error)
	// ArchiveDream sets archived_at on a terminal dream (idempotent) and
	// leaves its output store alone; EINVALID for pending or running.
	ArchiveDream(ctx context.Context, dreamID string) (*Dream, error)
}
