// Package trove holds Trove's domain vocabulary: memory stores, memories,
// immutable memory versions, actors, sessions, the service interfaces every
// adapter talks to, the closed set of error codes, and the pure path rules.
//
// It depends on the standard library only. Implementations live elsewhere:
// core implements the services over a storage driver; httpapi serves them
// over the wire-compatible HTTP API and also offers a Client that implements
// the same interfaces remotely, so adapters (sync, mounts, MCP, memory tool)
// work unchanged against a local database or a remote server.
package trove

import (
	"context"
	"maps"
	"time"
)

// Access is how a session may use an attached store.
type Access string

const (
	// AccessReadWrite allows reads and writes of the store's memories.
	AccessReadWrite Access = "read_write"
	// AccessReadOnly allows reads only; the server refuses writes.
	AccessReadOnly Access = "read_only"
)

// View selects whether memory content is returned.
type View string

const (
	// ViewBasic leaves Content nil.
	ViewBasic View = "basic"
	// ViewFull fills Content.
	ViewFull View = "full"
)

// Operation is what a memory version records.
type Operation string

const (
	OpCreated  Operation = "created"
	OpModified Operation = "modified"
	OpDeleted  Operation = "deleted"
)

// ActorType discriminates Actor.
type ActorType string

const (
	ActorAPI            ActorType = "api_actor"
	ActorSession        ActorType = "session_actor"
	ActorUser           ActorType = "user_actor"
	ActorServiceAccount ActorType = "service_account_actor"
)

// Actor is who made a change. Exactly the ID field matching Type is set.
// Actors are recorded at write time and never updated.
type Actor struct {
	Type             ActorType
	APIKeyID         string // apikey_… for ActorAPI
	SessionID        string // sesn_… for ActorSession
	UserID           string // user_… for ActorUser
	ServiceAccountID string // svac_… for ActorServiceAccount
}

// ID returns the ID field that matches a.Type; ok is false for an empty or
// unknown type.
func (a Actor) ID() (id string, ok bool) {
	switch a.Type {
	case ActorAPI:
		return a.APIKeyID, true
	case ActorSession:
		return a.SessionID, true
	case ActorUser:
		return a.UserID, true
	case ActorServiceAccount:
		return a.ServiceAccountID, true
	}
	return "", false
}

// NewActor returns the actor of type t with id in the field that matches t
// (no ID field is set for an unknown type).
func NewActor(t ActorType, id string) Actor {
	a := Actor{Type: t}
	switch t {
	case ActorAPI:
		a.APIKeyID = id
	case ActorSession:
		a.SessionID = id
	case ActorUser:
		a.UserID = id
	case ActorServiceAccount:
		a.ServiceAccountID = id
	}
	return a
}

// Store is a memory store: a named, path-addressed collection of memories
// owned by one workspace.
type Store struct {
	ID          string // memstore_…
	WorkspaceID string
	Name        string
	Description string            // "" when unset, never absent
	Metadata    map[string]string // empty, never nil, in results
	CreatedAt   time.Time
	UpdatedAt   time.Time  // changes on name/description/metadata change and on archive only
	ArchivedAt  *time.Time // nil until archived; archiving is one-way
}

// Clone returns a copy of s that shares no map or pointer with it; its
// Metadata is never nil.
func (s *Store) Clone() *Store {
	c := *s
	c.Metadata = maps.Clone(s.Metadata)
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	if s.ArchivedAt != nil {
		at := *s.ArchivedAt
		c.ArchivedAt = &at
	}
	return &c
}

// Memory is the current state of one path in a store.
type Memory struct {
	ID        string // mem_…, stable across renames
	StoreID   string
	Path      string
	Content   *string // nil under ViewBasic
	SizeBytes int     // UTF-8 byte length of the content, whatever the view
	SHA256    string  // lowercase hex SHA-256 of the exact content bytes
	VersionID string  // memver_… of the version that holds the current content
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MemoryPrefix is a list item standing for one or more memories below Path,
// returned when a depth-limited listing folds deeper paths. Path ends in "/".
type MemoryPrefix struct {
	Path string
}

// MemoryListItem is one item of a memory listing: exactly one of Memory and
// Prefix is set.
type MemoryListItem struct {
	Memory *Memory
	Prefix *MemoryPrefix
}

// MemoryVersion is an immutable record of one mutation. Only redaction
// changes it afterwards: it nulls Path, Content, SizeBytes and SHA256 and sets
// RedactedAt/RedactedBy, keeping who, what operation and when.
type MemoryVersion struct {
	ID         string // memver_…
	StoreID    string
	MemoryID   string
	Operation  Operation
	Path       *string // nil iff redacted
	Content    *string // nil under ViewBasic, for OpDeleted, or when redacted
	SizeBytes  *int    // nil for OpDeleted or when redacted
	SHA256     *string // nil for OpDeleted or when redacted
	CreatedBy  *Actor
	CreatedAt  time.Time
	RedactedAt *time.Time
	RedactedBy *Actor
	// Seq is the version's position in its store's history: 1, 2, 3, … in
	// commit order, assigned by the driver when the version is inserted.
	// Within a store it is unique, never reused (not even after retention
	// deletes old versions), and a reader that sees version n has seen
	// every version below n of that store that still exists. It is the
	// cursor of anything that follows a store's changes. The /v1 wire does
	// not carry it: versions read through that API have Seq 0.
	Seq int64
	// LeafHash is VersionLeafHash of the version as inserted, kept through
	// redaction; ChainHash is VersionChainHash(previous version's
	// ChainHash, Seq, LeafHash), the link of the store's tamper-evident
	// history. Both are set by the driver on insert (nil for versions
	// written before the chain existed, schema migration 8). The /v1 wire
	// does not carry them.
	LeafHash  []byte
	ChainHash []byte
	// Origin is set on the first version of a memory made by ForkStore: the
	// source store and version it was copied from. nil otherwise.
	Origin *VersionOrigin
}

// Page is one page of a cursor-paginated listing. NextPage is "" on the last
// page. Cursors are opaque, hold only a position, and stay valid under
// concurrent inserts.
type Page[T any] struct {
	Data     []T
	NextPage string
}

// TimeRange filters on created_at; nil bounds are open. Both bounds are
// inclusive.
type TimeRange struct {
	GTE *time.Time
	LTE *time.Time
}

// CreateStoreParams creates a store.
type CreateStoreParams struct {
	Name        string
	Description string
	Metadata    map[string]string
}

// UpdateStoreParams updates a store. Nil fields are unchanged. Metadata is a
// merge patch: a key mapped to nil is removed, a key mapped to a value is set.
type UpdateStoreParams struct {
	Name        *string
	Description *string
	Metadata    map[string]*string
}

// ListStoresParams filters and pages stores, newest first.
type ListStoresParams struct {
	Limit           int // 0 means the default (20)
	Cursor          string
	IncludeArchived bool
	CreatedAt       TimeRange
}

// CreateMemoryParams creates a memory. Create never overwrites.
type CreateMemoryParams struct {
	Path    string
	Content string
	View    View // of the result; "" means ViewBasic
}

// UpdateMemoryParams changes content, path or both. Nil fields are unchanged;
// at least one must be set. When PreconditionSHA256 is not "", the memory's
// current content hash must equal it, unless the memory already holds exactly
// the requested content and path.
type UpdateMemoryParams struct {
	Content            *string
	Path               *string
	PreconditionSHA256 string
	View               View // of the result; "" means ViewBasic
}

// ListMemoriesParams filters and pages memories in ascending path order
// (bytewise).
type ListMemoriesParams struct {
	PathPrefix string // "" or "/" for the whole store; otherwise must end in "/"
	Depth      int    // 0: every memory below the prefix; 1: direct children only, deeper paths folded into prefixes; anything else is EINVALID
	Limit      int    // 0 means the default (20); at most 20 with ViewFull
	Cursor     string
	View       View // "" means ViewBasic
}

// ListVersionsParams filters and pages versions, newest first (ID tiebreak).
type ListVersionsParams struct {
	MemoryID         string
	SessionID        string
	APIKeyID         string
	ServiceAccountID string
	Operation        Operation
	CreatedAt        TimeRange
	Limit            int
	Cursor           string
	View             View // "" means ViewBasic
}

// StoreService manages memory stores. Every method acts within the workspace
// of the Principal carried by ctx; another workspace's stores are ENOTFOUND.
type StoreService interface {
	// CreateStore returns EINVALID for a bad name, description or metadata.
	CreateStore(ctx context.Context, p CreateStoreParams) (*Store, error)
	// GetStore returns archived stores too; ENOTFOUND if absent.
	GetStore(ctx context.Context, storeID string) (*Store, error)
	// UpdateStore returns EINVALID on an archived store or when the merged
	// metadata breaks the limits.
	UpdateStore(ctx context.Context, storeID string, p UpdateStoreParams) (*Store, error)
	// ListStores lists newest first.
	ListStores(ctx context.Context, p ListStoresParams) (*Page[Store], error)
	// ArchiveStore is one-way and idempotent.
	ArchiveStore(ctx context.Context, storeID string) (*Store, error)
	// DeleteStore removes the store with all its memories and versions.
	DeleteStore(ctx context.Context, storeID string) error
}

// MemoryService manages the memories of a store.
type MemoryService interface {
	// CreateMemory writes version #1 (OpCreated). EPATHCONFLICT if the path
	// is used by, or is an ancestor or descendant of, another memory's path;
	// EINVALID on an archived store, at the memory limit, or for bad input.
	CreateMemory(ctx context.Context, storeID string, p CreateMemoryParams) (*Memory, error)
	// GetMemory returns ENOTFOUND for a missing or deleted memory.
	GetMemory(ctx context.Context, storeID, memoryID string, view View) (*Memory, error)
	// UpdateMemory appends an OpModified version for a real change and none
	// for a no-op. EPRECONDITION when the precondition fails, EPATHCONFLICT
	// when the new path overlaps another memory, EINVALID on an archived store.
	UpdateMemory(ctx context.Context, storeID, memoryID string, p UpdateMemoryParams) (*Memory, error)
	// ListMemories lists memories and folded prefixes in ascending path order.
	ListMemories(ctx context.Context, storeID string, p ListMemoriesParams) (*Page[MemoryListItem], error)
	// DeleteMemory appends an OpDeleted version. When expectedSHA256 is not
	// "" and differs from the current hash it returns EPRECONDITION and
	// deletes nothing.
	DeleteMemory(ctx context.Context, storeID, memoryID, expectedSHA256 string) error
}

// VersionService reads and redacts memory versions.
type VersionService interface {
	GetVersion(ctx context.Context, storeID, versionID string, view View) (*MemoryVersion, error)
	ListVersions(ctx context.Context, storeID string, p ListVersionsParams) (*Page[MemoryVersion], error)
	// RedactVersion is idempotent. It returns EINVALID for the current
	// version of a live memory (update or delete the memory first).
	RedactVersion(ctx context.Context, storeID, versionID string) (*MemoryVersion, error)
}

// Services bundles everything an adapter needs. Both core.Service (local
// database) and httpapi.Client (remote server) implement it.
type Services interface {
	StoreService
	MemoryService
	VersionService
	DirectoryService
	SearchService
}
