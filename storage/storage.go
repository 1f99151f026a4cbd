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
	// Tx.MemoryGet. The memory returned is the caller's (as every
	// read's result is): a new value, shared with nothing.
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
	// side effects outside the Tx. A ctx marked by WithWriteStore says
	// which store fn locks first; a driver may queue that store's
	// writers on it, and must not let it change what fn does.
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
	// AgentTx stores agents, environments and the work queue (agents.go).
	AgentTx
	// WebhookTx stores webhook endpoints and their delivery queue
	// (webhooks.go).
	WebhookTx

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
	// MemoryInsertBatch inserts memories, each with its first version: vs[i]
	// belongs to ms[i], all of one store. Its effects and errors are those
	// of MemoryInsert(ms[i]) then VersionInsert(vs[i]) for each i in order
	// (every version's Seq, LeafHash and ChainHash set), in fewer
	// statements: ForkStore copies a whole store with it.
	MemoryInsertBatch(ctx context.Context, ms []*trove.Memory, vs []*trove.MemoryVersion) error
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
	// StoreStats returns a store's stored counters (live memories, the sum
	// of their SizeBytes, retained versions), which the driver keeps in the
	// same transaction as every change to memories and versions whatever
	// makes it (inserts, batches, updates, deletes, retention, store
	// deletion, a rolled-back savepoint); one row read, never a count.
	// ENOTFOUND for an unknown store.
	StoreStats(ctx context.Context, storeID string) (StoreStats, error)
	// WorkspaceStoreCount returns the number of stores of a workspace
	// (archived ones included), a stored counter kept by StoreInsert and
	// StoreDelete, and in a Write serializes every other
	// WorkspaceStoreCount of the same workspace until the transaction
	// ends, so a check against a limit followed by StoreInsert holds
	// across processes and nodes. 0 for a workspace without stores.
	WorkspaceStoreCount(ctx context.Context, workspaceID string) (int, error)
	// MemoryFindOverlap returns a live memory other than excludeID whose path
	// equals path, is an ancestor of it, or is a descendant of it (whole
	// segments), or nil when there is none.
	MemoryFindOverlap(ctx context.Context, storeID, path, excludeID string) (*trove.Memory, error)
	// MemoryList lists live memories in ascending bytewise path order whose
	// path starts with Prefix and is >= From.
	MemoryList(ctx context.Context, p MemoryListParams) ([]trove.Memory, error)

	// VersionInsert appends v (its Content is the version's content, nil for
	// OpDeleted) and sets v.Seq to the store's next sequence number (see
	// trove.MemoryVersion.Seq); ENOTFOUND when the store does not exist.
	// Taking the number locks the store's row until the transaction ends,
	// so numbers are handed out in commit order.
	VersionInsert(ctx context.Context, v *trove.MemoryVersion) error
	// VersionScan lists a store's versions in ascending Seq order with
	// AfterSeq < Seq <= UpToSeq (UpToSeq 0: no upper bound).
	VersionScan(ctx context.Context, p VersionScanParams) ([]trove.MemoryVersion, error)
	// StoreSeq returns the Seq of the newest version the store ever had (0
	// when none), or ENOTFOUND.
	StoreSeq(ctx context.Context, storeID string) (int64, error)
	// StoreHead returns the Seq of the store's newest version ever and the
	// chain hash of its newest chained version (trove.MemoryVersion.ChainHash;
	// nil when none), or ENOTFOUND.
	StoreHead(ctx context.Context, storeID string) (seq int64, head []byte, err error)
	// VersionSeqAt returns the largest Seq among the store's versions
	// created at or before at (0 when none).
	VersionSeqAt(ctx context.Context, storeID string, at time.Time) (int64, error)
	// VersionAsOf returns the store as of p.Seq: for each memory, its
	// version with the largest Seq <= p.Seq, unless that version is
	// OpDeleted; ordered by (path, memory ID) with a redacted version's
	// NULL path first (as ""). Filters: MemoryID, Path (exact), Prefix
	// (redacted versions never match a non-empty prefix), After.
	// It relies on what core keeps in every write transaction: the store's
	// memories are the live memories of its history, each with the path
	// and the ID (VersionID) of its newest version; a driver may read the
	// state as of a recent moment from them and the versions since, so the
	// cost of a page does not grow with the history before the moment.
	VersionAsOf(ctx context.Context, p VersionAsOfParams) ([]trove.MemoryVersion, error)
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
	// KeysLock serializes every other KeysLock of the database, on any node,
	// until this transaction ends, and is meant for Writes. Core takes it
	// before deciding from KeyList that no key exists (EnsureFirstKey), so
	// that the check and the insert after it cannot both pass in two
	// transactions: the next holder's KeyList sees the previous holder's
	// committed key. A driver whose Writes already run one at a time (a
	// single writer) only checks that the transaction is still usable.
	KeysLock(ctx context.Context) error

	// SessionInsert stores a session, its attached stores, and the SHA-256 of
	// its credential.
	SessionInsert(ctx context.Context, s *trove.Session, tokenHash []byte) error
	// SessionGet returns a session of a workspace ("" for any workspace),
	// or ENOTFOUND.
	SessionGet(ctx context.Context, workspaceID, id string) (*trove.Session, error)
	// SessionGetByTokenHash finds a session by credential hash, or ENOTFOUND.
	SessionGetByTokenHash(ctx context.Context, tokenHash []byte) (*trove.Session, error)
	// SessionList lists a workspace's sessions by (created_at, id) descending.
	SessionList(ctx context.Context, p SessionListParams) ([]trove.Session, error)
	// SessionEnd sets ended_at if it is not set yet.
	SessionEnd(ctx context.Context, id string, at time.Time) error
	// SessionLock is SessionGet that also serializes every other
	// SessionLock and EventStats of the same session until this
	// transaction ends (SELECT … FOR UPDATE).
	SessionLock(ctx context.Context, workspaceID, id string) (*trove.Session, error)
	// SessionUpdate replaces the mutable columns of s.ID: title, metadata,
	// status, updated_at, ended_at, archived_at, and the managed part's
	// usage, active seconds and running_since. ENOTFOUND for an unknown
	// session.
	SessionUpdate(ctx context.Context, s *trove.Session) error
	// SessionDelete deletes a session, its attachments and its transcript;
	// ENOTFOUND for an unknown session.
	SessionDelete(ctx context.Context, id string) error

	// EventStats returns the number of events and their total body bytes
	// in a session's transcript, and serializes every other EventStats of
	// the same session until this transaction ends (FOR UPDATE), so core
	// can number appended events and enforce the transcript limits across
	// nodes. ENOTFOUND for an unknown session.
	EventStats(ctx context.Context, sessionID string) (count int, bytes int64, err error)
	// EventInsert appends events (Seq, ID and ProcessedAt set by core) and
	// adds them to the session's count and bytes (len(Body) each).
	EventInsert(ctx context.Context, events []trove.SessionEvent) error
	// EventList lists a session's events by Seq ascending, Seq > AfterSeq
	// (Desc: descending, Seq < BeforeSeq when BeforeSeq > 0), with the
	// filters of p.
	EventList(ctx context.Context, p EventListParams) ([]trove.SessionEvent, error)
	// EventGet returns one event of a session by ID, or ENOTFOUND.
	EventGet(ctx context.Context, sessionID, id string) (*trove.SessionEvent, error)
	// EventListByRef lists the session's events whose RefID is refID, by
	// Seq ascending.
	EventListByRef(ctx context.Context, sessionID, refID string) ([]trove.SessionEvent, error)

	// DreamInsert inserts a new dream (not its lease fields: the caller
	// wakes its JobDream job).
	DreamInsert(ctx context.Context, d *trove.Dream) error
	// DreamGet returns a dream of workspaceID ("" for any workspace), or
	// ENOTFOUND. Its LeaseOwner, LeaseExpiresAt and Attempts are those of
	// its job (kind JobDream, key its ID): zero when it has none.
	DreamGet(ctx context.Context, workspaceID, id string) (*trove.Dream, error)
	// DreamLock is DreamGet that also serializes every other DreamLock of
	// the same dream until this transaction ends (SELECT … FOR UPDATE).
	DreamLock(ctx context.Context, workspaceID, id string) (*trove.Dream, error)
	// DreamUpdate replaces every mutable column of d.ID: status, output
	// store, session, usage, error, ended_at, archived_at (the lease is its
	// job's: see JobDream).
	DreamUpdate(ctx context.Context, d *trove.Dream) error
	// DreamList lists a workspace's dreams by (created_at, id) descending
	// with the filters of p, their leases filled as DreamGet does.
	DreamList(ctx context.Context, p DreamListParams) ([]trove.Dream, error)
	// DreamInPlaceBusy reports whether a dream with output behaviour
	// update_existing on storeID is pending or running, or its job still
	// holds a lease that has not expired at now (its runner has not fully
	// stopped).
	DreamInPlaceBusy(ctx context.Context, storeID string, now time.Time) (bool, error)

	// MemorySearch returns live memories that match every term of p.Query
	// in their path or current content (words as trove.SearchWords splits
	// them, case-insensitive; a phrase's words adjacent and in order; the
	// last word of a Prefix term as a prefix), with Content filled, by
	// Score descending then ID ascending, strictly after p.After when set,
	// at most p.Limit. Only memories of p.WorkspaceID's stores are found:
	// the stores in p.StoreIDs, or, when it is empty, every non-archived
	// store of the workspace. A version's content is never indexed (only
	// live memories'). The index behind it may lag the memory rows in a
	// driver that implements SearchReader: call it in a ReadSearch (see
	// the package function ReadSearch) or a Write, where it is in step
	// with the memory rows of the snapshot; such a driver fails it in a
	// plain Read. In other drivers the index changes in the same
	// transaction as the memory rows and any Read will do.
	MemorySearch(ctx context.Context, p MemorySearchParams) ([]MemorySearchHit, error)

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

	// Jobs: a small durable work queue with leases, shared by runners that
	// must survive a dead node (the session agent loop; webhook
	// deliveries, one job per endpoint; dreams, one job per dream, JobDream;
	// the webhook log's pruning). A job is (Kind, Key), e.g. ("session_run", sesn_…).
	//
	// JobWake makes the job pending (creating it) and bumps its WakeSeq, so
	// a runner holding it knows there is new work since its claim.
	JobWake(ctx context.Context, kind, key string, now time.Time) error
	// JobClaim takes the lease of one pending job of kind whose lease is
	// free or expired at now (a deferred job: whose JobDefer time has come),
	// the least recently woken first: LeaseOwner
	// becomes owner, LeaseExpiresAt until, Attempts grows by one. ENOTFOUND
	// when none is claimable. Two transactions never claim the same job.
	JobClaim(ctx context.Context, kind, owner string, now, until time.Time) (*Job, error)
	// JobRenew extends owner's lease on the job to until. ECONFLICT when
	// owner no longer holds it (expired and claimed by another, or
	// released); ENOTFOUND for an unknown job.
	JobRenew(ctx context.Context, kind, key, owner string, until time.Time) (*Job, error)
	// JobRelease releases owner's lease; the job stays pending unless done
	// is true and its WakeSeq is still wakeSeq (no wake since the caller
	// read it). ECONFLICT when owner does not hold the lease.
	JobRelease(ctx context.Context, kind, key, owner string, wakeSeq int64, done bool) error
	// JobDefer releases owner's lease but keeps the job pending and
	// unclaimable until until (a retry's backoff); a JobWake meanwhile
	// does not shorten the wait. ECONFLICT when owner does not hold the
	// lease; ENOTFOUND for an unknown job.
	JobDefer(ctx context.Context, kind, key, owner string, until time.Time) error
	// JobDelete removes the job whoever holds it; removing an absent job
	// is not an error.
	JobDelete(ctx context.Context, kind, key string) error
	// JobDone marks a job done for good, whatever woke it since the claim:
	// it removes the job while owner holds its lease. ECONFLICT when owner
	// does not hold it (expired and claimed by another, or released);
	// ENOTFOUND for an unknown job.
	JobDone(ctx context.Context, kind, key, owner string) error
}

// JobDream is the job kind of a dream: one job per dream (key: its ID),
// woken when the dream is created and done when its runner finishes it.
// The drivers read a dream's lease from it (Tx.DreamGet).
const JobDream = "dream"

// StoreStats are a store's counters (see Tx.StoreStats).
type StoreStats struct {
	MemoryCount  int
	ContentBytes int64
	VersionCount int64
}

// EventListParams filters EventList.
type EventListParams struct {
	SessionID string
	AfterSeq  int64
	Limit     int

	Desc      bool            // newest first
	BeforeSeq int64           // with Desc: Seq < BeforeSeq when > 0
	Types     []string        // only these types; empty: any
	CreatedAt trove.TimeRange // on processed_at, inclusive bounds
	// CreatedAfter and CreatedBefore are exclusive bounds on processed_at.
	CreatedAfter  *time.Time
	CreatedBefore *time.Time
	// MaxBytes, when > 0, bounds what one listing holds in memory: the
	// list ends after the event whose Body takes the listed Bodies' bytes
	// past MaxBytes (so it holds at least one event, and a caller that
	// keeps the events within MaxBytes knows from the extra one that more
	// follow).
	MaxBytes int
}

// DreamListParams filters DreamList.
type DreamListParams struct {
	WorkspaceID     string
	Statuses        []trove.DreamStatus // empty: any
	CreatedAfter    *time.Time          // exclusive
	CreatedBefore   *time.Time          // exclusive
	IncludeArchived bool
	Before          *Position
	Limit           int
}

// MemorySearchParams filters MemorySearch.
type MemorySearchParams struct {
	WorkspaceID string
	StoreIDs    []string // empty: every non-archived store of WorkspaceID
	Query       trove.SearchQuery
	Prefix      string // path prefix; "" for all
	After       *SearchPosition
	Limit       int
	// MaxBytes, when > 0, bounds the hits' contents held at once: the
	// hits end after the one whose content takes them past MaxBytes (at
	// least one hit; one more than a caller keeping MaxBytes takes, which
	// tells it more follow).
	MaxBytes int
}

// SearchPosition is a keyset cursor position in a list ordered by
// (Score descending, ID ascending).
type SearchPosition struct {
	Score float64
	ID    string
}

// MemorySearchHit is one memory found by MemorySearch. Score is higher for
// a better match (more occurrences, matches in the path, rarer words); it
// is the same for the same data and query, so it can serve as a keyset
// position, and compares only within one driver.
type MemorySearchHit struct {
	Memory trove.Memory
	Score  float64
}

// Job is one entry of the durable job queue (see Tx.JobClaim).
type Job struct {
	Kind, Key      string
	Pending        bool
	WakeSeq        int64      // grows at every JobWake
	LeaseOwner     string     // "" when free (or deferred)
	LeaseExpiresAt *time.Time // the lease's end, or a deferred job's first claim
	Attempts       int64
	WokenAt        time.Time
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

// VersionScanParams selects VersionScan's range of one store's history.
type VersionScanParams struct {
	StoreID     string
	AfterSeq    int64 // exclusive lower bound; 0 from the start
	UpToSeq     int64 // inclusive upper bound; 0 for none
	Limit       int   // <= 0: no limit
	WithContent bool
}

// VersionAsOfParams selects VersionAsOf's versions.
type VersionAsOfParams struct {
	StoreID  string
	Seq      int64
	MemoryID string // "" for all
	Path     string // "" for all; else exactly this path
	Prefix   string // "" for all
	// After is an exclusive keyset position (path, memory ID) in the
	// listing's order; nil from the start.
	After       *AsOfPosition
	Limit       int // <= 0: no limit
	WithContent bool
	// MaxBytes, when > 0 with WithContent, bounds the contents read at
	// once: the list ends after the version whose content takes the read
	// contents past MaxBytes (at least one version), so a caller that
	// pages on After reads a bounded amount per call.
	MaxBytes int
}

// Walk reports whether a driver reads p by walking the store's versions in
// the listing's order (a skip scan over their (path, memory) pairs, whose
// cost is the page and the pairs it steps over) rather than by a plan that
// reads one side of the history: for a store whose newest seq is head, a
// page (a limit) whose moment S leaves that other plan too much to read
// for it — in the newer half of the history (head − S <= S) more than
// WalkRecentPerRow versions after S per row (reading the live memories and
// probing each memory those versions touched, about a step of the walk
// each), in the older half more than WalkOldPerRow versions up to S per
// row (one pass over them, about 2 µs each against 20–60 µs per step of
// the walk: docs/perf/scale.md). Both SQL drivers use it.
func (p VersionAsOfParams) Walk(head int64) bool {
	if p.Limit <= 0 || p.MemoryID != "" {
		return false
	}
	if after := head - p.Seq; after <= p.Seq {
		return after > WalkRecentPerRow*int64(p.Limit)
	}
	return p.Seq > WalkOldPerRow*int64(p.Limit)
}

// The thresholds of VersionAsOfParams.Walk.
const (
	WalkRecentPerRow = 4
	WalkOldPerRow    = 32
)

// AsOfPosition is a position in VersionAsOf's order ("" for a NULL path).
type AsOfPosition struct {
	Path     string
	MemoryID string
}

// SessionListParams filters SessionList.
type SessionListParams struct {
	WorkspaceID string
	StoreID     string // only sessions with this store attached
	Before      *Position
	Limit       int

	// Asc lists by (created_at, id) ascending, strictly after After when
	// set (Before is then ignored).
	Asc             bool
	After           *Position
	AgentID         string
	AgentVersion    int64 // with AgentID; 0: any version
	Statuses        []trove.SessionStatus
	CreatedAt       trove.TimeRange // inclusive bounds
	CreatedAfter    *time.Time      // exclusive
	CreatedBefore   *time.Time      // exclusive
	IncludeArchived bool
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

// EventNotifier is implemented by drivers that can tell this process when
// a commit made elsewhere (another process, another node) appended events
// to a session's transcript or changed the session; core uses it to wake
// WaitEvents at once. Without it core notices such commits by polling.
type EventNotifier interface {
	// NotifyEvents registers fn, called on a driver goroutine with the ID
	// of a session whose transcript or row changed, once per committed
	// transaction (possibly more often), whichever process made it. After
	// a lost connection fn is called with "" (any session may have
	// changed). fn must not block.
	NotifyEvents(fn func(sessionID string))
}

// VersionNotifier is implemented by drivers that can tell this process when
// a commit made elsewhere (another process, another node) added versions
// to a store; core uses it to wake the change feed's waiters at once
// rather than at its next poll. Without it core still notices such commits
// by polling.
type VersionNotifier interface {
	// NotifyVersions registers fn, called on a driver goroutine with the
	// ID of a store whose history grew, once per committed transaction
	// that added versions to it (possibly more often), whichever process
	// made it. After a lost connection, when notifications may have been
	// missed, fn is called with "" (any store may have changed). Delivery
	// stops when the driver is closed. fn must not block.
	NotifyVersions(fn func(storeID string))
}
