package trove

import (
	"context"
	"time"
)

// EnvironmentSelfHosted is the only environment type Trove runs: a work
// queue that the environment's own workers poll (the official SDK's
// lib/environments EnvironmentWorker, or `trove worker`). Cloud
// environments are refused.
const EnvironmentSelfHosted = "self_hosted"

// Environment is where a session's tools run. Archived environments keep
// their sessions and work but accept no new sessions.
type Environment struct {
	ID          string // env_…
	WorkspaceID string
	Name        string  // 1-256 characters
	Description *string // nil when unset (the API's null); "" is kept as ""
	Type        string  // EnvironmentSelfHosted
	Metadata    map[string]string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ArchivedAt  *time.Time
}

// EnvironmentKey is an environment's standing credential, used by its
// workers to poll the work queue. The secret is shown once and stored only
// as a hash; a revoked key stops authenticating within the auth cache TTL
// (at once on the node that revoked it).
type EnvironmentKey struct {
	ID            string // envkey_…
	WorkspaceID   string
	EnvironmentID string
	Name          string
	Hint          string // the last characters of the secret
	CreatedAt     time.Time
	RevokedAt     *time.Time
}

// CreateEnvironmentParams creates a self-hosted environment.
type CreateEnvironmentParams struct {
	Name        string
	Description *string // at most 1,024 characters
	Type        string  // "" or EnvironmentSelfHosted; anything else is EINVALID
	Metadata    map[string]string
}

// UpdateEnvironmentParams changes an environment. Nil fields are unchanged;
// ClearDescription sets the description to null. Metadata is a merge
// patch: a key mapped to nil or to "" is removed.
type UpdateEnvironmentParams struct {
	Name             *string
	Description      *string
	ClearDescription bool
	Type             string // "" or EnvironmentSelfHosted
	Metadata         map[string]*string
}

// ListEnvironmentsParams filters and pages environments, newest first.
type ListEnvironmentsParams struct {
	Limit           int // 0 means the default (20), at most 1,000
	Cursor          string
	IncludeArchived bool
}

// EnvironmentService manages environments and their standing credentials.
// Every method acts within the workspace of the Principal carried by ctx;
// session and environment credentials get EFORBIDDEN.
type EnvironmentService interface {
	// CreateEnvironment returns EINVALID naming the field for a bad name,
	// description, type or metadata.
	CreateEnvironment(ctx context.Context, p CreateEnvironmentParams) (*Environment, error)
	// GetEnvironment returns archived environments too; ENOTFOUND if absent.
	GetEnvironment(ctx context.Context, environmentID string) (*Environment, error)
	// UpdateEnvironment returns EINVALID on an archived environment.
	UpdateEnvironment(ctx context.Context, environmentID string, p UpdateEnvironmentParams) (*Environment, error)
	ListEnvironments(ctx context.Context, p ListEnvironmentsParams) (*Page[Environment], error)
	// ArchiveEnvironment is one-way and idempotent.
	ArchiveEnvironment(ctx context.Context, environmentID string) (*Environment, error)
	// DeleteEnvironment removes the environment, its keys and its stopped
	// work; ECONFLICT while it has work that is not stopped.
	DeleteEnvironment(ctx context.Context, environmentID string) error

	// CreateEnvironmentKey mints a standing credential for the environment
	// and returns it with its secret (shown once). EINVALID on an archived
	// environment or a bad name.
	CreateEnvironmentKey(ctx context.Context, environmentID, name string) (*EnvironmentKey, string, error)
	// ListEnvironmentKeys lists the environment's keys, oldest first,
	// revoked ones included; secrets are never returned.
	ListEnvironmentKeys(ctx context.Context, environmentID string) ([]EnvironmentKey, error)
	// RevokeEnvironmentKey is idempotent (the first revocation time stays);
	// ENOTFOUND for a key that is not the environment's.
	RevokeEnvironmentKey(ctx context.Context, environmentID, keyID string) (*EnvironmentKey, error)
}
