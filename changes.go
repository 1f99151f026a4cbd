package trove

import (
	"context"
	"time"
)

// Change is one entry of a store's change feed: a version, without its
// content, at its place (Seq) in the store's history. Redaction adds no
// version, so it is not a change of its own: a version redacted before it
// is read comes with Redacted set and Path, SHA256 and SizeBytes empty
// (a redacted version is never a live memory's current one, so a follower
// that re-reads the memory loses nothing).
type Change struct {
	Seq       int64 // MemoryVersion.Seq: 1, 2, 3… per store in commit order
	VersionID string
	MemoryID  string
	Operation Operation
	Path      string // the memory's path after this change ("" when redacted)
	SHA256    string // content hash after it ("" for OpDeleted or redacted)
	SizeBytes int    // content size after it (0 for OpDeleted or redacted)
	CreatedBy *Actor // nil when the author was not recorded
	CreatedAt time.Time
	Redacted  bool
}

// ListChangesParams selects a page of a store's changes.
type ListChangesParams struct {
	// After is the cursor: changes with Seq > After are listed. 0 is the
	// start of the store's history; negative is EINVALID.
	After int64
	// Limit bounds the page: 0 means the default page size, more than the
	// maximum page size is EINVALID.
	Limit int
}

// ChangeBatch is one page of changes.
type ChangeBatch struct {
	// Changes in ascending Seq order. Seqs may skip numbers whose versions
	// retention has deleted; no existing version is ever skipped.
	Changes []Change
	// Cursor is the After to pass next: the last change's Seq when More,
	// else the store's newest Seq when the page was read (never below
	// After), so a caller that stores Cursor resumes exactly where it
	// stopped.
	Cursor int64
	// More is true when changes after Cursor existed when the page was
	// read.
	More bool
	// Head is the store's newest Seq when the page was read: a follower
	// that wants only what comes next starts after it.
	Head int64
}

// ChangeService is a store's live change feed: every version the store
// gets, in commit order, after a durable cursor. It is read like the
// store's versions (a session credential sees only its attached stores;
// any other store is ENOTFOUND). core.Service and httpapi.Client
// implement it.
type ChangeService interface {
	// ListChanges returns the changes after p.After.
	ListChanges(ctx context.Context, storeID string, p ListChangesParams) (*ChangeBatch, error)
	// WaitChanges blocks until the store's history goes past after and
	// returns a Seq above after that the store has reached (core: its
	// newest; at once when it already has). When ctx
	// ends first it returns ctx's error as is (context.Canceled or
	// context.DeadlineExceeded), so a caller can tell "no change yet" from
	// a failure; ENOTFOUND when the store does not exist or is not
	// readable, also when it is deleted while waiting.
	WaitChanges(ctx context.Context, storeID string, after int64) (int64, error)
}

// ChangeFromVersion returns the change a version stands for (its Content
// is dropped).
func ChangeFromVersion(v *MemoryVersion) Change {
	c := Change{
		Seq: v.Seq, VersionID: v.ID, MemoryID: v.MemoryID, Operation: v.Operation,
		CreatedAt: v.CreatedAt, Redacted: v.RedactedAt != nil,
	}
	if v.CreatedBy != nil {
		a := *v.CreatedBy
		c.CreatedBy = &a
	}
	if v.Path != nil {
		c.Path = *v.Path
	}
	if v.Operation != OpDeleted && v.RedactedAt == nil {
		if v.SHA256 != nil {
			c.SHA256 = *v.SHA256
		}
		if v.SizeBytes != nil {
			c.SizeBytes = *v.SizeBytes
		}
	}
	return c
}
