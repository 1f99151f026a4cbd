// Package storage is Trove's persistence port: the Driver and Tx interfaces
// that every database driver (storage/sqlite, storage/postgres) implements
// with its own SQL, migrations and error translation. Rules and invariants
// live above it, in core; a driver only stores and finds rows.
//
// Conventions every driver follows:
//   - Methods are noun-then-verb (StoreGet, MemoryInsert, VersionList).
//   - Missing rows are reported as a *trove.Error with code trove.ENOTFOUND.
//   - A unique-path violation on memories is reported as trove.EPATHCONFLICT
//     (core checks first; this only guards races the lock did not cover).
//   - Connection loss or an unavailable database is trove.EUNAVAILABLE;
//     anything else unexpected is returned as is and becomes EINTERNAL.
//   - Times are stored with at least microsecond precision and returned in UTC.
//   - Content is stored byte for byte.
//
// Two conformance suites run against every driver: storage/storagetest
// checks this port's contracts, core/coretest checks core over the driver.
package storage

import (
	"context"
	"time"

	"github.com/trovehq/trove"
)

// Driver is an open database.
type Driver interface {
	// Read runs fn once, in a read-only transaction in which every
	// statement sees one consistent snapshot, and returns fn's error as is
	// (database errors translated). The Tx must be used on fn's goroutine
	// only.
	Read(ctx context.Context, fn func(Tx) error) error
	// MemoryGet is Tx.MemoryGet run as one statement outside any
	// transaction: a single statement sees one snapshot of its own, so the
	// point read behind a get needs no BEGIN and ROLLBACK (SQLite) or no
	// second round trip (PostgreSQL). Same results and errors as
	// Tx.MemoryGet.
	MemoryGet(ctx context.Context, storeID, id string, withContent bool) (*trove.Memory, error)
	// Write runs fn in a read-write transaction and returns nil only after
	// the changes fn made are durable (on disk, survive kill -9).
	//
	// A driver may group concurrent Writes into one database transaction
	// (group commit). Each fn then runs inside its own savepoint: when fn
	// returns an error only its own changes are rolled back and that error
	// is returned to its caller alone. If the shared commit fails, every
	// Write in the group returns an error. fn may be run again when the
	// database asks for a retry (serialization failure), so fn must have no
	// side effects outside the Tx.
	Write(ctx context.Context, fn func(Tx) error) error
	// Close waits for in-flight Writes and releases the database.
	Close() error
}

// Position is a keyset cursor position in a list ordered by (CreatedAt, ID).
type Position struct {
	CreatedAt time.Time
	ID        string
}

// Tx is one transaction. Methods must not be called after the function
// passed to Read or Write has returned.
type Tx interface {
	// StoreInsert inserts a new store.
	StoreInsert(ctx context.Context, s *trove.Store) error
	// StoreGet returns the store with id in workspaceID, or ENOTFOUND.
	StoreGet(ctx context.Context, workspaceID, id string) (*trove.Store, error)
	// StoreLock is StoreGet that also serializes every other StoreLock of the
	// same store until this transaction ends (SELECT … FOR UPDATE). Core takes
	// it before any change to a store's memories, so per-store invariants
	// hold across processes and nodes.
	StoreLock(ctx context.Context, workspaceID, id string) (*trove.Store, error)
	// StoreUpdate replaces name, description, metadata, updated_at and
	// archived_at of s.ID.
	StoreUpdate(ctx context.Context, s *trove.Store) error
	// StoreList lists a workspace's stores by (created_at, id) descending,
	// strictly after Before when set.
	StoreList(ctx context.Context, p StoreListParams) ([]trove.Store, error)
	// StoreDelete deletes a store and all its memories and versions.
	StoreDelete(ctx context.Context, id string) error

	// MemoryInsert inserts m with content *m.Content (m.Content is not nil).
	MemoryInsert(ctx context.Context, m *trove.Memory) error
	// MemoryGet returns a live memory, with Content filled when withContent.
	MemoryGet(ctx context.Context, storeID, id string, withContent bool) (*trove.Memory, error)
	// MemoryGetByPath returns the live memory at path, or ENOTFOUND.
	MemoryGetByPath(ctx context.Context, storeID, path string, withContent bool) (*trove.Memory, error)
	// MemoryUpdate replaces path, content, size, sha256, version_id and
	// updated_at of m.ID (m.Content is not nil).
	MemoryUpdate(ctx context.Context, m *trove.Memory) error
	// MemoryDelete deletes a live memory (its versions stay).
	MemoryDelete(ctx context.Context, storeID, id string) error
	// MemoryCount counts a store's live memories.
	MemoryCount(ctx context.Context, storeID string) (int, error)
	// MemoryFindOverlap returns a live memory other than excludeID whose path
	// equals path, is an ancestor of it, or is a descendant of it (whole
	// segments), or nil when there is none.
	MemoryFindOverlap(ctx context.Context, storeID, path, excludeID string) (*trove.Memory, error)
	// MemoryList lists live memories in ascending bytewise path order whose
	// path starts with Prefix and is >= From.
	MemoryList(ctx context.Context, p MemoryListParams) ([]trove.Memory, error)

	// VersionInsert appends v (its Content is the version's content, nil for
	// OpDeleted).
	VersionInsert(ctx context.Context, v *trove.MemoryVersion) error
	// VersionGet returns a version of a store, or ENOTFOUND.
	VersionGet(ctx context.Context, storeID, id string, withContent bool) (*trove.MemoryVersion, error)
	// VersionList lists versions by (created_at, id) descending with the
	// filters of p.
	VersionList(ctx context.Context, p VersionListParams) ([]trove.MemoryVersion, error)
	// VersionRedact nulls content, path, size and sha256 and sets
	// redacted_at/redacted_by.
	VersionRedact(ctx context.Context, storeID, id string, at time.Time, by trove.Actor) error
	// VersionDeleteExpired deletes versions created before cutoff, except a
	// version that is the current version of a live memory, and returns how
	// many it deleted.
	VersionDeleteExpired(ctx context.Context, cutoff time.Time) (int, error)

	// KeyInsert stores an API key with the SHA-256 of its secret.
	KeyInsert(ctx context.Context, k *trove.APIKey, secretHash []byte) error
	// KeyGetByHash finds a key (revoked ones too) by secret hash, or ENOTFOUND.
	KeyGetByHash(ctx context.Context, secretHash []byte) (*trove.APIKey, error)
	// KeyList lists keys, all workspaces when workspaceID is "", oldest first.
	KeyList(ctx context.Context, workspaceID string) ([]trove.APIKey, error)
	// KeyRevoke sets revoked_at; ENOTFOUND for an unknown key.
	KeyRevoke(ctx context.Context, id string, at time.Time) error

	// SessionInsert stores a session, its attached stores, and the SHA-256 of
	// its credential.
	SessionInsert(ctx context.Context, s *trove.Session, tokenHash []byte) error
	// SessionGet returns a session of a workspace, or ENOTFOUND.
	SessionGet(ctx context.Context, workspaceID, id string) (*trove.Session, error)
	// SessionGetByTokenHash finds a session by credential hash, or ENOTFOUND.
	SessionGetByTokenHash(ctx context.Context, tokenHash []byte) (*trove.Session, error)
	// SessionList lists a workspace's sessions by (created_at, id) descending.
	SessionList(ctx context.Context, p SessionListParams) ([]trove.Session, error)
	// SessionEnd sets ended_at if it is not set yet.
	SessionEnd(ctx context.Context, id string, at time.Time) error

	// ConsoleSessionInsert stores a console (browser) sign-in under the
	// SHA-256 of its token; the token itself is never stored.
	ConsoleSessionInsert(ctx context.Context, s *ConsoleSession) error
	// ConsoleSessionGet finds a console session by token hash (expired ones
	// too: the caller compares ExpiresAt), or ENOTFOUND.
	ConsoleSessionGet(ctx context.Context, tokenHash []byte) (*ConsoleSession, error)
	// ConsoleSessionDelete removes the console session with this token
	// hash; removing an absent one is not an error.
	ConsoleSessionDelete(ctx context.Context, tokenHash []byte) error
	// ConsoleSessionDeleteExpired removes every console session whose
	// ExpiresAt is before now, and every one signed in with the API key
	// revokedKeyID when it is not "".
	ConsoleSessionDeleteExpired(ctx context.Context, now time.Time, revokedKeyID string) error
}

// ConsoleSession is a browser sign-in to the console: the API key it was
// made with and when it stops working.
type ConsoleSession struct {
	TokenHash   []byte // SHA-256 of the cookie's token
	KeyID       string // apikey_… signed in with
	WorkspaceID string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// StoreListParams filters StoreList.
type StoreListParams struct {
	WorkspaceID     string
	IncludeArchived bool
	CreatedAt       trove.TimeRange
	Before          *Position
	Limit           int
}

// MemoryListParams filters MemoryList.
type MemoryListParams struct {
	StoreID     string
	Prefix      string // "" for all
	From        string // inclusive lower bound on path; "" for none
	Limit       int
	WithContent bool
}

// VersionListParams filters VersionList. Empty strings are no filter.
type VersionListParams struct {
	StoreID          string
	MemoryID         string
	SessionID        string
	APIKeyID         string
	ServiceAccountID string
	Operation        trove.Operation
	CreatedAt        trove.TimeRange
	Before           *Position
	Limit            int
	WithContent      bool
}

// SessionListParams filters SessionList.
type SessionListParams struct {
	WorkspaceID string
	StoreID     string // only sessions with this store attached
	Before      *Position
	Limit       int
}

// Migrator is implemented by drivers with versioned schemas.
type Migrator interface {
	// Migrate applies every migration the driver knows that the database
	// lacks. It is safe to run concurrently from several processes.
	Migrate(ctx context.Context) error
	// SchemaVersion returns the database's schema version and the newest
	// version the driver knows.
	SchemaVersion(ctx context.Context) (have, known int, err error)
}
