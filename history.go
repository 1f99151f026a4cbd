package trove

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Moment names a point in a store's history. At most one field is set; the
// zero Moment is "now" (the store's newest version).
//
//   - Seq: as of the version with that Seq (MemoryVersion.Seq), that is
//     after every version numbered Seq or lower and before any later one.
//   - VersionID: as of that version of the store (its Seq).
//   - Time: as of the largest Seq among the store's versions created at or
//     before Time (0, the empty store, when none was). Times are compared
//     at microsecond precision.
//
// Versions deleted by retention cannot be seen: as of a moment older than
// the retention horizon, memories whose versions were purged are missing.
type Moment struct {
	Seq       int64
	VersionID string
	Time      *time.Time
}

// IsZero reports whether m is "now".
func (m Moment) IsZero() bool { return m.Seq == 0 && m.VersionID == "" && m.Time == nil }

// String renders m as ParseExactMoment (and so ParseMoment) reads it (""
// for now); a time in UTC.
func (m Moment) String() string {
	switch {
	case m.VersionID != "":
		return m.VersionID
	case m.Time != nil:
		return m.Time.UTC().Format(time.RFC3339Nano)
	case m.Seq != 0:
		return strconv.FormatInt(m.Seq, 10)
	}
	return ""
}

// ParseExactMoment reads a moment in the forms that mean the same to every
// reader at any time: "" or "now" (the zero Moment), a version ID
// ("memver_…"), a positive decimal Seq, or an RFC 3339 time (with its zone:
// "Z" or an offset). EINVALID otherwise. The API reads moments this way.
func ParseExactMoment(s string) (Moment, error) {
	m, ok, err := parseExactMoment(strings.TrimSpace(s))
	if err != nil || ok {
		return m, err
	}
	return Moment{}, Errorf(EINVALID, "moment %q is not a version ID (memver_…), a version number or an RFC 3339 time (2026-01-02T15:04:05Z)", strings.TrimSpace(s))
}

// parseExactMoment reads the exact forms; ok is false when s is none of
// them (err is then nil).
func parseExactMoment(s string) (m Moment, ok bool, err error) {
	switch {
	case s == "" || s == "now":
		return Moment{}, true, nil
	case strings.HasPrefix(s, PrefixVersion):
		return Moment{VersionID: s}, true, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n <= 0 {
			return Moment{}, true, Errorf(EINVALID, "a version number (seq) must be positive, got %d", n)
		}
		return Moment{Seq: n}, true, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		t = t.UTC()
		return Moment{Time: &t}, true, nil
	}
	return Moment{}, false, nil
}

// MaxMomentAgo is the longest duration ParseMoment takes ("87600h", ten
// years of 365 days, or "3650d").
const MaxMomentAgo = 10 * 365 * 24 * time.Hour

// ParseMoment reads a moment as a person types it: every form
// ParseExactMoment reads, and
//
//   - a duration ago: a positive whole number and a unit, s, m, h, d (24
//     hours) or w (7 days), several of them added up, optionally followed
//     by "ago": "5m", "2h ago", "1d12h", "3d" is now minus that, at most
//     MaxMomentAgo;
//   - a date, "2026-12-02": the start of that day in loc;
//   - a date and time without a zone, in loc: "2026-12-02 03:52:50",
//     "2026-12-02T03:52", seconds and their fraction optional;
//   - an RFC 3339 time with a space for the "T", or without seconds:
//     "2026-12-02 03:52:50Z", "2026-12-02T03:52+01:00".
//
// now and loc are the reader's clock and zone (the CLI passes time.Now and
// time.Local; a server, which does not know its user's zone, time.UTC).
// The Time of the result is in UTC. EINVALID for anything else, with a
// message listing the forms.
func ParseMoment(s string, now time.Time, loc *time.Location) (Moment, error) {
	s = strings.TrimSpace(s)
	if m, ok, err := parseExactMoment(s); ok || err != nil {
		return m, err
	}
	if d, ok, err := parseAgo(s); ok || err != nil {
		if err != nil {
			return Moment{}, err
		}
		t := now.Add(-d).UTC()
		return Moment{Time: &t}, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	for _, layout := range zonedLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			t = t.UTC()
			return Moment{Time: &t}, nil
		}
	}
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			t = t.UTC()
			return Moment{Time: &t}, nil
		}
	}
	return Moment{}, Errorf(EINVALID, "moment %q is not a version ID (memver_…), a version number, a duration ago (5m, 2h, 3d, 1d12h ago), a date (2026-01-02), a local date and time (2026-01-02 15:04:05) or an RFC 3339 time (2026-01-02T15:04:05Z)", s)
}

// zonedLayouts are the forms with a zone besides RFC 3339's (time.Parse
// accepts a fraction of a second after the seconds).
var zonedLayouts = []string{
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02T15:04Z07:00",
	"2006-01-02 15:04Z07:00",
}

// localLayouts are the zoneless forms ParseMoment reads in the reader's
// zone (a fraction of a second is accepted after the seconds by
// time.Parse).
var localLayouts = []string{
	"2006-01-02",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
}

// parseAgo reads a duration ago ("5m", "2h ago", "1d12h"); ok is false
// when s does not look like one (err is then nil).
func parseAgo(s string) (d time.Duration, ok bool, err error) {
	orig := s
	if rest, found := strings.CutSuffix(s, "ago"); found {
		s = strings.TrimSpace(rest)
	}
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, false, nil
	}
	units := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 || i == len(s) {
			return 0, false, nil
		}
		unit, known := units[s[i]]
		if !known {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n > int64(MaxMomentAgo/unit) || d+time.Duration(n)*unit > MaxMomentAgo {
			return 0, true, Errorf(EINVALID, "moment %q: a duration ago is at most %d days", orig, MaxMomentAgo/(24*time.Hour))
		}
		d += time.Duration(n) * unit
		s = s[i+1:]
	}
	return d, true, nil
}

// AsOfPage is one page of a store listed as of a moment: for each memory
// that existed then, the version that was current (redacted ones with Path,
// Content, SizeBytes and SHA256 nil, never their old text). Seq is the
// moment resolved to a position in the store's history.
type AsOfPage struct {
	Seq      int64
	Data     []MemoryVersion
	NextPage string
}

// DiffKind is how a memory differs between two moments.
type DiffKind string

const (
	DiffAdded   DiffKind = "added"   // absent at From, present at To
	DiffRemoved DiffKind = "removed" // present at From, absent at To
	DiffMoved   DiffKind = "moved"   // same memory, another path (content may have changed too)
	DiffChanged DiffKind = "changed" // same memory and path, another version
)

// MemoryDiff is one memory's difference between two moments. From and To
// are the versions current at each moment (without content; nil on the
// side where the memory was absent). Patch is a unified diff of the
// contents ("" when they are equal or when either side is redacted:
// Redacted is then true and no old text is shown).
type MemoryDiff struct {
	Kind           DiffKind
	MemoryID       string
	From           *MemoryVersion
	To             *MemoryVersion
	ContentChanged bool
	Redacted       bool
	Patch          string
}

// StoreDiff is what changed in a store between two moments, in ascending
// order of the memories' paths (the To path, else the From path; redacted
// ones first).
//
// A diff is paged so that what one answer holds is bounded whatever the
// store: a page holds at most DiffParams.Limit memories and stops early
// once its patches pass MaxDiffPageBytes. NextPage, when not "", is the
// continuation: pass it as DiffParams.Cursor for the rest (the moments
// are pinned in it).
type StoreDiff struct {
	FromSeq  int64
	ToSeq    int64
	Changes  []MemoryDiff
	NextPage string
}

// DiffParams selects a page of a store diff (HistoryService.DiffStorePage).
type DiffParams struct {
	From, To Moment
	// Limit is the most memories a page holds: 0 means
	// DefaultDiffPageSize, at most MaxDiffPageSize.
	Limit int
	// Cursor is a StoreDiff's NextPage; it pins FromSeq and ToSeq, so
	// From and To are then ignored.
	Cursor string
}

// Bounds of a store diff's page.
const (
	DefaultDiffPageSize = 20
	MaxDiffPageSize     = 100
	// MaxDiffPageBytes bounds the patches of one page: a page ends after
	// the memory whose patch passes it (a page holds at least one memory).
	MaxDiffPageBytes = 1 << 20
)

// ForkStoreParams creates a store from another store as of a moment.
type ForkStoreParams struct {
	Name        string
	Description string
	Metadata    map[string]string
	AsOf        Moment
}

// ForkResult is the new store; Copied memories were forked, each with a
// first version (OpCreated) whose Origin names the source store and
// version; Skipped are memories whose version at the moment was redacted
// (their text is gone, so they are not copied). Seq is the source moment.
type ForkResult struct {
	Store   *Store
	Seq     int64
	Copied  int
	Skipped []string // memory IDs in the source store
}

// RollbackParams undoes what one actor wrote to a store after a moment.
// Exactly one of SessionID and APIKeyID names the actor.
type RollbackParams struct {
	SessionID string
	APIKeyID  string
	Since     Moment
	// DryRun computes the change set without writing anything.
	DryRun bool
	// Force applies the change set although some memories conflict: the
	// conflicting memories are left as they are (listed), the others are
	// rolled back. Without Force any conflict refuses the whole rollback
	// (ECONFLICT) and nothing changes.
	Force bool
	// Limit bounds the changes and the conflicts the result lists (each
	// list at most Limit; the totals are always whole): 0 lists them all
	// (an in-process caller's choice), else 1 to MaxRollbackPageSize. The
	// HTTP API always pages, DefaultRollbackPageSize by default.
	Limit int
	// Cursor is a dry run's RollbackResult.NextPage: the next Limit of
	// each list of the same dry run (same actor, moment and Force). Only
	// with DryRun; ECONFLICT when the store changed since the first page.
	Cursor string
}

// Bounds of a rollback's listing (RollbackParams.Limit).
const (
	DefaultRollbackPageSize = 100
	MaxRollbackPageSize     = 1000
)

// RollbackAction is what rolling a memory back does.
type RollbackAction string

const (
	RollbackDelete  RollbackAction = "delete"  // the actor created it: delete it
	RollbackRestore RollbackAction = "restore" // the actor deleted it: recreate it (same memory ID) as it was
	RollbackRevert  RollbackAction = "revert"  // the actor changed it: put back its content and path
)

// RollbackChange is one memory's part of a rollback: its current state
// (Current, nil when deleted) goes back to Target (the version current just
// before the actor's first write to it after the moment; nil when the
// actor created it).
type RollbackChange struct {
	Action   RollbackAction
	MemoryID string
	Current  *MemoryVersion
	Target   *MemoryVersion
}

// RollbackConflict is a memory the rollback leaves alone: someone other
// than the actor wrote it after the actor did (Version, By), or its target
// state cannot be restored (Reason says why: its version was redacted, or
// its path is taken by another memory).
type RollbackConflict struct {
	MemoryID string
	Path     string
	Version  *MemoryVersion
	Reason   string
}

// RollbackResult is the change set (Changes), what it refuses (Conflicts),
// and whether it was applied. Since is the moment resolved to a Seq.
//
// With RollbackParams.Limit the lists are one page: Changes and Conflicts
// hold at most Limit each, ChangesTotal and ConflictsTotal count the whole
// change set, and NextPage, when not "", continues a dry run (or a
// refused rollback, read as a dry run) with the next Limit of each. An
// applied rollback is not continued: its totals say what it did.
type RollbackResult struct {
	SinceSeq       int64
	Changes        []RollbackChange
	Conflicts      []RollbackConflict
	ChangesTotal   int
	ConflictsTotal int
	NextPage       string
	Applied        bool
}

// AuditBreak is where a store's hash chain first fails: the version (ID and
// Seq) and what differs.
type AuditBreak struct {
	VersionID string
	Seq       int64
	Problem   string
}

// AuditReport is the result of recomputing a store's hash chain.
//
// Verified counts versions whose links were checked. Unchained counts
// versions written before the chain existed (schema migration 8; they
// precede every chained version). Gaps lists Seq ranges with no versions:
// retention deletes old versions, so the link across a gap cannot be
// checked, and verification restarts from the stored chain hash of the
// version after it (a history that starts after Seq 1 starts that way).
// HeadSeq and Head are the store's newest Seq and chain hash: record Head
// elsewhere to detect a rewrite of the whole chain later. OK is true when
// Break is nil. Gaps lists the first MaxAuditGaps gaps (retention can
// leave one between most retained versions); GapsTotal counts them all.
type AuditReport struct {
	StoreID    string
	HeadSeq    int64
	Head       string // lowercase hex; "" when no version is chained
	Verified   int
	Unchained  int
	Redacted   int
	Gaps       [][2]int64
	GapsTotal  int
	OK         bool
	Break      *AuditBreak
	VerifiedAt time.Time
}

// MaxAuditGaps bounds AuditReport.Gaps, so that a report's size does not
// grow with the history.
const MaxAuditGaps = 1000

// HistoryService is a Trove extension (not part of the hosted API) over a
// store's immutable versions: the store as of any moment, the difference
// between two moments, forks, rollbacks of one actor's writes, and the
// tamper-evident hash chain. Served at /trove/v1/memory_stores/{id}/…
// (docs/API.md). Every view of the past keeps redacted versions redacted.
type HistoryService interface {
	// ListMemoriesAsOf lists the store as it was at the moment: every
	// memory then present, in ascending path order (redacted ones, whose
	// path is gone, first and only when PathPrefix is the whole store).
	// p.Depth must be 0. ENOTFOUND for an unknown store or version;
	// EINVALID for bad parameters or a moment that is not in the store's
	// history.
	ListMemoriesAsOf(ctx context.Context, storeID string, at Moment, p ListMemoriesParams) (*AsOfPage, error)
	// GetMemoryAsOf returns the version of one memory that was current at
	// the moment; ref is a memory ID (mem_…) or a path ("/…", the memory
	// at that path then). ENOTFOUND when it did not exist then.
	GetMemoryAsOf(ctx context.Context, storeID string, at Moment, ref string, view View) (*MemoryVersion, error)
	// DiffStore compares the store at two moments: the first page of
	// the diff (DiffStorePage with From and To; NextPage continues it).
	DiffStore(ctx context.Context, storeID string, from, to Moment) (*StoreDiff, error)
	// DiffStorePage is one page of the store diff between p.From and p.To
	// (see StoreDiff); EINVALID for a bad limit or cursor.
	DiffStorePage(ctx context.Context, storeID string, p DiffParams) (*StoreDiff, error)
	// ForkStore creates a new store holding the source store's memories
	// as of p.AsOf, in one transaction; later writes to either store do
	// not affect the other. A write: EFORBIDDEN for a session credential.
	ForkStore(ctx context.Context, storeID string, p ForkStoreParams) (*ForkResult, error)
	// RollbackActor computes, and unless p.DryRun applies in one
	// transaction, the change set that undoes what one session or API key
	// wrote to the store after p.Since. History is never rewritten: every
	// change is a new version by the caller. ECONFLICT (nothing applied)
	// when some memories conflict and p.Force is false.
	RollbackActor(ctx context.Context, storeID string, p RollbackParams) (*RollbackResult, error)
	// VerifyStore recomputes the store's hash chain and reports the first
	// break.
	VerifyStore(ctx context.Context, storeID string) (*AuditReport, error)
}
