package syncer

import (
	"sort"
	"time"
)

// Kind is what an Action does.
type Kind string

// Action kinds. "Local" is the synced directory, "remote" the store.
const (
	// KindUpload pushes the local bytes over the memory with precondition
	// RemoteSHA (local-only change).
	KindUpload Kind = "upload"
	// KindCreate creates the memory from the local file (new local file, or a
	// local edit that beats a remote delete).
	KindCreate Kind = "create"
	// KindDownload writes the remote bytes locally (remote-only change, a
	// remote edit that beats a local delete, a new remote memory).
	KindDownload Kind = "download"
	// KindAdopt records that both sides already hold the same bytes.
	KindAdopt Kind = "adopt"
	// KindMerge handles a change on both sides: diff3 when clean, else a
	// conflict copy.
	KindMerge Kind = "merge"
	// KindConflict keeps the remote at the path and the local bytes as a
	// conflict copy, in the store and locally (two-way: no base).
	KindConflict Kind = "conflict"
	// KindDeleteRemote deletes the memory (precondition BaseSHA) after the
	// local file stayed gone for the grace period.
	KindDeleteRemote Kind = "delete_remote"
	// KindDeleteLocal removes the unchanged local file of a memory deleted
	// in the store.
	KindDeleteLocal Kind = "delete_local"
	// KindRename moves the memory from Path to To (same id, same history).
	KindRename Kind = "rename"
	// KindForget drops the entry: both sides are gone.
	KindForget Kind = "forget"
	// KindMarkAbsent starts (Since set) or clears (Since zero) the grace
	// period of a missing local file.
	KindMarkAbsent Kind = "mark_absent"
	// KindRefuse records that the store can never accept the local bytes;
	// they stay local and are reported.
	KindRefuse Kind = "refuse"
	// KindRestore (read-only stores) moves the local bytes to quarantine and
	// writes the remote bytes (RemoteSHA "" : just quarantine).
	KindRestore Kind = "restore"
)

// Action is one step of a plan. Paths are store paths.
type Action struct {
	Kind      Kind
	Path      string
	To        string // KindRename
	MemoryID  string
	BaseSHA   string
	LocalSHA  string
	RemoteSHA string
	Since     time.Time // KindMarkAbsent
	Reason    string    // KindRefuse, KindRestore
}

// RemoteFile is one memory as listed (basic view).
type RemoteFile struct {
	ID   string
	SHA  string
	Size int
}

// PlanInput is everything the planner looks at. It is pure data.
type PlanInput struct {
	Entries map[string]*Entry
	Local   map[string]LocalFile
	Remote  map[string]RemoteFile
	Now     time.Time
	// ReadOnly: never upload, create, rename or delete remotely; restore
	// local tampering.
	ReadOnly bool
	// DeleteGrace is how long a local file must stay gone before its memory
	// is deleted; MaxDeletes caps deletes per pass (<= 0: none).
	DeleteGrace time.Duration
	MaxDeletes  int
	// Final waives the grace period (last pass before stopping).
	Final bool
}

// Plan is a plan and what the planner noticed.
type Plan struct {
	Actions []Action
	// PendingDeletes are local deletions waiting for the grace period or a
	// free slot under the per-pass cap.
	PendingDeletes []string
	// Wiped is true when the local directory was found empty while the
	// manifest knows several files: restored instead of mass-deleted.
	Wiped bool
}

// PlanSync is the pure decision table: from the last agreed state, the local
// scan and the remote listing it returns the actions of one pass, in
// ascending path order (renames at the rename target's position, deletes
// last). It does no I/O.
func PlanSync(in PlanInput) Plan {
	var pl Plan
	paths := map[string]bool{}
	for p := range in.Entries {
		paths[p] = true
	}
	for p := range in.Local {
		paths[p] = true
	}
	for p := range in.Remote {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)

	base := func(p string) (*Entry, string) {
		if e := in.Entries[p]; e != nil {
			return e, e.BaseSHA
		}
		return nil, ""
	}

	// A wiped directory (empty while several agreed files exist) is restored,
	// never turned into a mass delete.
	if !in.ReadOnly && len(in.Local) == 0 {
		n := 0
		for _, e := range in.Entries {
			if e.BaseSHA != "" {
				n++
			}
		}
		pl.Wiped = n >= 2
	}

	// Renames: an agreed path whose local file is gone while the store still
	// holds the base, paired with a new local path holding exactly that base.
	renamedFrom := map[string]string{} // to → from
	renamedAway := map[string]bool{}
	if !in.ReadOnly {
		gone := map[string][]string{}
		for _, p := range sorted {
			e, b := base(p)
			_, hasL := in.Local[p]
			r, hasR := in.Remote[p]
			if e != nil && b != "" && !hasL && hasR && r.SHA == b {
				gone[b] = append(gone[b], p)
			}
		}
		for _, p := range sorted {
			_, b := base(p)
			l, hasL := in.Local[p]
			_, hasR := in.Remote[p]
			if b != "" || !hasL || hasR || l.Problem != "" {
				continue
			}
			if from := gone[l.SHA]; len(from) > 0 {
				renamedFrom[p] = from[0]
				renamedAway[from[0]] = true
				gone[l.SHA] = from[1:]
			}
		}
	}

	var deletes []Action
	for _, p := range sorted {
		e, b := base(p)
		l, hasL := in.Local[p]
		r, hasR := in.Remote[p]
		id := r.ID
		if id == "" && e != nil {
			id = e.MemoryID
		}
		act := func(k Kind) Action {
			return Action{Kind: k, Path: p, MemoryID: id, BaseSHA: b, LocalSHA: l.SHA, RemoteSHA: r.SHA}
		}
		add := func(a Action) { pl.Actions = append(pl.Actions, a) }

		if hasL && e != nil && !e.AbsentSince.IsZero() {
			add(Action{Kind: KindMarkAbsent, Path: p})
		}
		if from, ok := renamedFrom[p]; ok {
			fe := in.Entries[from]
			add(Action{Kind: KindRename, Path: from, To: p, MemoryID: in.Remote[from].ID, BaseSHA: fe.BaseSHA, LocalSHA: l.SHA, RemoteSHA: in.Remote[from].SHA})
			continue
		}
		if renamedAway[p] {
			continue
		}

		if in.ReadOnly {
			switch {
			case !hasL && !hasR:
				if e != nil {
					add(act(KindForget))
				}
			case !hasL:
				add(act(KindDownload)) // a local delete is tampering too
			case hasR && l.SHA == r.SHA:
				if b != r.SHA {
					add(act(KindAdopt))
				}
			case hasR && b != "" && l.SHA == b:
				add(act(KindDownload)) // unchanged locally, changed remotely
			case hasR:
				a := act(KindRestore)
				a.Reason = "read-only store: local changes are not uploaded; the store's version was restored"
				add(a)
			case b != "" && l.SHA == b:
				add(act(KindDeleteLocal)) // deleted in the store, unchanged here
			default:
				a := act(KindRestore)
				a.Reason = "read-only store: local file is not in the store and was moved to quarantine"
				add(a)
			}
			continue
		}

		switch {
		case !hasL && !hasR:
			if e != nil {
				add(act(KindForget))
			}
		case !hasL && b == "":
			add(act(KindDownload)) // new in the store
		case !hasL && r.SHA != b:
			add(act(KindDownload)) // remote edit beats local delete
		case !hasL:
			// Deleted locally, unchanged remotely.
			switch {
			case pl.Wiped:
				add(act(KindDownload))
			case e.AbsentSince.IsZero() && !in.Final:
				a := act(KindMarkAbsent)
				a.Since = in.Now
				add(a)
				pl.PendingDeletes = append(pl.PendingDeletes, p)
			case in.Final || in.Now.Sub(e.AbsentSince) >= in.DeleteGrace:
				deletes = append(deletes, act(KindDeleteRemote))
			default:
				pl.PendingDeletes = append(pl.PendingDeletes, p)
			}
		case l.Problem != "":
			if hasR && l.SHA == r.SHA { // cannot happen for real refusals, but be exact
				if b != r.SHA {
					add(act(KindAdopt))
				}
				continue
			}
			if hasR && r.SHA != b {
				// The store changed too: keep the refused bytes as a local
				// conflict copy and take the store's version.
				a := act(KindConflict)
				a.Reason = l.Problem
				add(a)
				continue
			}
			if e == nil || e.RefusedSHA != l.SHA {
				a := act(KindRefuse)
				a.Reason = l.Problem
				add(a)
			}
		case !hasR && b == "":
			add(act(KindCreate)) // new local file
		case !hasR && l.SHA == b:
			add(act(KindDeleteLocal)) // deleted in the store, unchanged here
		case !hasR:
			add(act(KindCreate)) // local edit beats remote delete
		case l.SHA == r.SHA:
			if b != r.SHA || (e != nil && e.MemoryID != r.ID) {
				add(act(KindAdopt))
			}
		case b == "":
			add(act(KindConflict)) // both created, different bytes
		case r.SHA == b:
			add(act(KindUpload))
		case l.SHA == b:
			add(act(KindDownload))
		default:
			add(act(KindMerge))
		}
	}
	for i, d := range deletes {
		if i >= in.MaxDeletes {
			pl.PendingDeletes = append(pl.PendingDeletes, d.Path)
			continue
		}
		pl.Actions = append(pl.Actions, d)
	}
	sort.Strings(pl.PendingDeletes)
	return pl
}

// DefaultMaxDeletes is the per-pass delete cap for a manifest of n entries:
// a quarter of them, at least 8 and at most 50.
func DefaultMaxDeletes(n int) int {
	return min(max(n/4, 8), 50)
}
