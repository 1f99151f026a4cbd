// Package syncer keeps one local directory and one memory store in sync
// without ever losing data.
//
// The engine compares, per path, the last state both sides agreed on (the
// manifest, kept with the base contents it uploaded in a state directory
// OUTSIDE the synced directory; the bases it downloaded are read back from
// the memory's version history when a merge needs them), the local directory (a scan with a stat cache) and the
// store (a sha-only listing). A pure planner (PlanSync) turns the three into
// actions following one decision table; an executor applies them with
// content_sha256 preconditions and re-plans when another writer won a race.
//
// What it guarantees:
//   - A change made on one side only is carried to the other.
//   - When both sides changed a file differently, a clean line-based
//     three-way merge is pushed when one exists; otherwise the store keeps its
//     version and the local bytes become a conflict copy
//     "<dir>/<stem>.conflict-<session8|local>-<yyyymmddThhmmssZ><ext>",
//     created in the store and locally. Local bytes are never dropped.
//   - An edit beats a delete on either side. A local delete reaches the store
//     only after the file stayed gone for the grace period, with at most
//     MaxDeletes per pass, and never when the whole directory was wiped.
//   - A file moved to a new path with unchanged content becomes a path
//     update: the memory keeps its id and history.
//   - Files the store can never accept (too large, not UTF-8, illegal path)
//     stay local, untouched, and are reported.
//   - Memories whose path cannot be a local file (a name over 255 bytes,
//     storetree.LocalProblem) stay in the store, untouched, and are reported
//     (Report.Unrepresentable); they are never skipped silently. Conflict
//     copies get names that always fit (storetree.ConflictName), so every
//     conflict converges.
//   - On a read-only store nothing is uploaded; local changes are moved to a
//     quarantine directory in the state directory and the store's version is
//     restored.
//   - The manifest only records states that were agreed, and is replaced
//     atomically after local writes are flushed (one syncfs on Linux, not an
//     fsync per file), so a crash at any point is settled by the next pass
//     without duplicates or loss. A first download into an empty directory
//     lists the store once with contents and writes each page while the
//     next is fetched; the file system is flushed in the background while
//     it writes (flushBehind), so the flush before the manifest finds
//     little left, and the manifest's own bytes ride on that flush.
//
// The engine talks to the store only through trove.Services, so it works
// against a local core.Service or a remote httpapi.Client unchanged.
package syncer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storetree"
)

// QuarantineDir is the directory under Options.StateDir where the engine
// moves, with a time-stamped subdirectory per pass, the local bytes of a
// read-only store that it restores. Nothing in it reaches the store.
const QuarantineDir = "quarantine"

// Defaults of Options.
const (
	DefaultInterval     = 15 * time.Second
	DefaultDeleteGrace  = 30 * time.Second
	DefaultDebounce     = 500 * time.Millisecond
	DefaultStatTrust    = 2 * time.Second
	DefaultFinalTimeout = 30 * time.Second
	maxRounds           = 4
	fetchConcurrency    = 8
	applyConcurrency    = 8
	prefetchBudget      = 64 << 20 // content bytes prefetched per round
	streamWriters       = 4        // writers of a first download (streamDownloads)
	streamBuffer        = 256      // listed memories waiting for a writer (streamDownloads)
)

// Options configure an Engine. Services, StoreID, Dir and StateDir are
// required.
type Options struct {
	// Services reaches the store; the ctx passed to the engine's methods
	// carries the principal (trove.WithPrincipal) when Services is local.
	Services trove.Services
	StoreID  string
	// Dir is the synced directory; StateDir holds the manifest, base objects
	// and quarantine. StateDir must not be inside Dir.
	Dir      string
	StateDir string
	// ReadOnly: never write to the store; restore local tampering.
	ReadOnly bool
	// SessionID names conflict copies ("<first 8 chars>"); "" gives "local".
	SessionID string
	// Interval between periodic passes in Run (0: DefaultInterval).
	Interval time.Duration
	// Debounce after a file system event before a pass (0: DefaultDebounce).
	Debounce time.Duration
	// DeleteGrace: how long a local file must stay gone before the memory
	// is deleted (0: DefaultDeleteGrace; negative: no wait).
	DeleteGrace time.Duration
	// MaxDeletes per pass (0: DefaultMaxDeletes of the manifest size;
	// negative: never delete remotely).
	MaxDeletes int
	// StatTrust: a cached hash is reused only if taken at least this long
	// after the file's last mtime/ctime (0: DefaultStatTrust).
	StatTrust time.Duration
	// FinalTimeout bounds the last pass of Run (0: DefaultFinalTimeout).
	FinalTimeout time.Duration
	// NoWatch disables fsnotify in Run (periodic passes only).
	NoWatch bool
	// NoFeed makes Run ignore the store's change feed (trove.ChangeService)
	// and pull remote changes on the Interval only.
	NoFeed bool
	// Limits are the store's limits (zero: trove.DefaultLimits()).
	Limits trove.Limits
	// Now is the clock for grace periods and conflict names (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// OnPass, when set, is called after every pass of Run with its report.
	OnPass func(*Report, error)
}

// Conflict is one conflict copy made by a pass.
type Conflict struct {
	Path     string `json:"path"`      // the path whose store version was kept
	CopyPath string `json:"copy_path"` // where the local bytes were saved
	InStore  bool   `json:"in_store"`  // the copy was also created in the store
}

// Report is what one Sync did.
type Report struct {
	Rounds    int
	Counts    map[Kind]int
	Merged    []string
	Conflicts []Conflict
	// Refused lists local files the store can never accept (kept locally).
	Refused []Problem
	// Skipped lists local entries not synced (symlinks, special files).
	Skipped []Problem
	// Quarantined lists local bytes moved out of a read-only store's
	// directory, with where they were saved.
	Quarantined []Problem
	// Unrepresentable lists the store paths that cannot be local files
	// (storetree.LocalProblem): they are not synced and stay in the store
	// only. Every pass lists all of them.
	Unrepresentable []Problem
	// NewUnrepresentable is the part of Unrepresentable this Engine had not
	// reported in an earlier pass (what logs and notices should tell once).
	NewUnrepresentable []Problem
	// Errors lists per-path failures left for the next pass.
	Errors         []Problem
	PendingDeletes []string
	Wiped          bool
	// Hashed counts files read by the scans; Listed counts remote memories.
	Hashed int
	Listed int
}

func (r *Report) count(k Kind) { r.Counts[k]++ }

// Engine syncs one directory with one store. Its methods are safe for
// concurrent use; passes are serialised.
type Engine struct {
	o    Options
	mu   sync.Mutex // one pass at a time
	root *os.Root
	tree *storetree.Tree // the store's side
	man  *Manifest
	objs objects
	log  *slog.Logger

	// per-round state
	scan   *Scan
	remote map[string]RemoteFile
	taken  map[string]bool
	rep    *Report
	told   map[string]bool          // unrepresentable store paths already reported
	amu    sync.Mutex               // guards man.Entries, rep, pre, wrote, dirty during parallel actions
	pre    map[string]*trove.Memory // contents prefetched for downloads
	dirs   map[string]bool          // directories known to exist this round
	droots map[string]*os.Root      // handles on directories written this round (dirRoot)
	dfiles map[string]*os.File      // the same directories open as files (dirFile)
	wrote  bool                     // local files written since the last flush
	dirty  bool
}

// New opens (or starts) the manifest in StateDir for Dir and StoreID. It
// creates Dir and StateDir if needed. Returns EINVALID for missing options,
// a StateDir inside Dir (or Dir inside StateDir), or a StateDir that belongs
// to another store or directory.
func New(o Options) (*Engine, error) {
	if o.Services == nil || o.StoreID == "" || o.Dir == "" || o.StateDir == "" {
		return nil, trove.Errorf(trove.EINVALID, "syncer: Services, StoreID, Dir and StateDir are required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, trove.Errorf(trove.EINVALID, "syncer: bad directory %q", o.Dir)
	}
	state, err := filepath.Abs(o.StateDir)
	if err != nil {
		return nil, trove.Errorf(trove.EINVALID, "syncer: bad state directory %q", o.StateDir)
	}
	if state == dir || strings.HasPrefix(state, dir+string(filepath.Separator)) {
		return nil, trove.Errorf(trove.EINVALID, "syncer: the state directory %s must be outside the synced directory %s", state, dir)
	}
	if strings.HasPrefix(dir, state+string(filepath.Separator)) {
		return nil, trove.Errorf(trove.EINVALID, "syncer: the synced directory %s must not be inside the state directory %s", dir, state)
	}
	o.Dir, o.StateDir = dir, state
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Debounce == 0 {
		o.Debounce = DefaultDebounce
	}
	if o.DeleteGrace == 0 {
		o.DeleteGrace = DefaultDeleteGrace
	}
	if o.StatTrust == 0 {
		o.StatTrust = DefaultStatTrust
	}
	if o.FinalTimeout == 0 {
		o.FinalTimeout = DefaultFinalTimeout
	}
	if o.Limits.MaxContentBytes == 0 {
		o.Limits = trove.DefaultLimits()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{dir, state, filepath.Join(state, "objects")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, &trove.Error{Code: trove.EINVALID, Message: fmt.Sprintf("syncer: cannot create %s", d), Err: err}
		}
	}
	man, err := loadManifest(state, o.StoreID, dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(state, "manifest.json")); errors.Is(err, fs.ErrNotExist) {
		if err := man.save(state); err != nil { // claim the state directory for this pair
			return nil, err
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, &trove.Error{Code: trove.EINVALID, Message: fmt.Sprintf("syncer: cannot open %s", dir), Err: err}
	}
	return &Engine{o: o, root: root, tree: storetree.New(o.Services, o.StoreID, o.Limits), man: man, objs: objects{filepath.Join(state, "objects")}, log: o.Logger.With("store", o.StoreID, "dir", dir)}, nil
}

// Close releases the directory handle. It does not run a final pass (Run
// does).
func (e *Engine) Close() error { return e.root.Close() }

// Dir returns the synced directory.
func (e *Engine) Dir() string { return e.o.Dir }

// Sync runs one pass: scan, list, plan, apply; it re-plans (up to a few
// rounds) when a precondition race or a concurrent local change was met.
// Per-path failures are in the report; the error is non-nil only when the
// pass could not run (directory gone, store unreachable, manifest unwritable).
func (e *Engine) Sync(ctx context.Context) (*Report, error) { return e.sync(ctx, false) }

// Flush is Sync for the last pass before stopping: the delete grace period
// is waived (after a live re-check that each file is still gone).
func (e *Engine) Flush(ctx context.Context) (*Report, error) { return e.sync(ctx, true) }

func (e *Engine) sync(ctx context.Context, final bool) (*Report, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rep := &Report{Counts: map[Kind]int{}}
	e.rep = rep
	defer func() { e.rep = nil; e.scan = nil; e.remote = nil; e.taken = nil }()
	fi, err := os.Stat(e.o.Dir)
	if err != nil {
		return rep, &trove.Error{Code: trove.EINVALID, Message: fmt.Sprintf("synced directory %s is missing; nothing was synced", e.o.Dir), Err: err}
	}
	if cur, err := e.root.Stat("."); err != nil || !os.SameFile(fi, cur) {
		// The directory was replaced: follow the path, not the old inode.
		root, err := os.OpenRoot(e.o.Dir)
		if err != nil {
			return rep, &trove.Error{Code: trove.EINVALID, Message: fmt.Sprintf("cannot open %s", e.o.Dir), Err: err}
		}
		e.root.Close()
		e.root = root
	}
	for round := 0; round < maxRounds; round++ {
		rep.Rounds++
		raced, err := e.round(ctx, final)
		if serr := e.persist(); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			return rep, err
		}
		if !raced {
			break
		}
	}
	e.collectProblems()
	return rep, nil
}

// errRace marks an action that lost a race (precondition, concurrent local
// change); the path is re-planned in the next round.
var errRace = errors.New("state changed during the pass")

func (e *Engine) round(ctx context.Context, final bool) (bool, error) {
	sc := &scanner{root: e.root, limits: e.o.Limits, trust: e.o.StatTrust, cache: e.man.Entries}
	scan, err := sc.scan()
	if err != nil {
		return false, &trove.Error{Code: trove.EINVALID, Message: fmt.Sprintf("cannot scan %s", e.o.Dir), Err: err}
	}
	e.rep.Hashed += scan.Hashed
	for _, tmp := range scan.Temps {
		// Left by a write a crash interrupted before its rename. A temp
		// file never holds the only copy of any bytes (a download's are in
		// the store; a conflict copy's are still in the file it copies),
		// so removing it loses nothing.
		_ = e.root.Remove(tmp)
	}
	e.dirs = map[string]bool{}
	defer e.closeDirRoots()
	remote, err := e.listRemote(ctx, scan)
	if err != nil {
		return false, err
	}
	e.rep.Listed = len(remote)
	e.rep.Unrepresentable = nil
	for p := range remote {
		if why := storetree.LocalProblem(p); why != "" {
			// Never materialised, so never planned either: it would look
			// deleted locally. Reported, never skipped silently.
			delete(remote, p)
			e.rep.Unrepresentable = append(e.rep.Unrepresentable, Problem{Path: p, Reason: why})
		}
	}
	entries := e.man.Entries
	for p := range remote {
		if isTempName(path.Base(p)) {
			// Never materialised (the scanner skips such names), so it must
			// not be planned either: it would look deleted locally.
			delete(remote, p)
			scan.Skipped = append(scan.Skipped, Problem{Path: p, Reason: "store path uses the sync engine's temp-file name; not synced"})
		}
	}
	if len(scan.Blocked) > 0 {
		// Paths the scan could not see are left alone on both sides.
		entries = make(map[string]*Entry, len(e.man.Entries))
		for p, en := range e.man.Entries {
			if !scan.blocked(p) {
				entries[p] = en
			}
		}
		for p := range remote {
			if scan.blocked(p) {
				delete(remote, p)
			}
		}
	}
	e.rep.Skipped = scan.Skipped
	e.scan, e.remote = scan, remote
	e.taken = map[string]bool{}
	for p := range scan.Files {
		e.taken[p] = true
	}
	for p := range remote {
		e.taken[p] = true
	}
	// Stat cache.
	for p, f := range scan.Files {
		if !f.Fresh {
			continue
		}
		en := e.entry(p)
		en.Stat, en.LocalSHA, en.HashedAt = f.Stat, f.SHA, f.HashedAt
		e.dirty = true
	}
	maxDel := e.o.MaxDeletes
	if maxDel == 0 {
		maxDel = DefaultMaxDeletes(len(e.man.Entries))
	}
	grace := max(e.o.DeleteGrace, 0)
	plan := PlanSync(PlanInput{
		Entries: entries, Local: scan.Files, Remote: remote, Now: e.o.Now(),
		ReadOnly: e.o.ReadOnly, DeleteGrace: grace, MaxDeletes: maxDel, Final: final,
	})
	e.rep.PendingDeletes = plan.PendingDeletes
	e.rep.Wiped = plan.Wiped
	if plan.Wiped {
		e.log.Warn("the synced directory is empty while the store is not: restoring it instead of deleting every memory")
	}
	e.prefetch(ctx, plan.Actions)
	var (
		raced  bool
		fatal  error
		resMu  sync.Mutex
		par    []Action
		serial []Action
	)
	for _, a := range plan.Actions {
		switch a.Kind {
		case KindUpload, KindCreate, KindDownload, KindAdopt:
			par = append(par, a) // independent per path
		default:
			serial = append(serial, a)
		}
	}
	do := func(a Action) {
		err := e.apply(ctx, a)
		resMu.Lock()
		defer resMu.Unlock()
		switch {
		case err == nil:
			e.rep.count(a.Kind)
			e.log.Debug("sync action", "kind", a.Kind, "path", a.Path, "to", a.To)
		case errors.Is(err, errRace):
			raced = true
			e.log.Info("sync race, re-planning", "kind", a.Kind, "path", a.Path)
		default:
			e.rep.Errors = append(e.rep.Errors, Problem{Path: a.Path, Reason: fmt.Sprintf("%s: %s", a.Kind, errText(err))})
			e.log.Warn("sync action failed", "kind", a.Kind, "path", a.Path, "err", err)
			if trove.ErrorCode(err) == trove.EUNAVAILABLE && fatal == nil {
				fatal = err
			}
		}
	}
	stopped := func() bool {
		resMu.Lock()
		defer resMu.Unlock()
		return fatal != nil || ctx.Err() != nil
	}
	work := make(chan Action)
	var wg sync.WaitGroup
	for range applyConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range work {
				if !stopped() {
					do(a)
				}
			}
		}()
	}
	for _, a := range par {
		work <- a
	}
	close(work)
	wg.Wait()
	for _, a := range serial {
		if stopped() {
			break
		}
		do(a)
	}
	e.pre = nil
	if fatal == nil {
		fatal = ctx.Err()
	}
	return raced, fatal
}

func errText(err error) string {
	var te *trove.Error
	if errors.As(err, &te) {
		return te.Message
	}
	return err.Error()
}

// persist flushes local writes to disk, then saves the manifest, so the
// manifest never names a local state that a power loss could undo. The
// manifest's new bytes are written before the flush, so that when the state
// directory shares the synced directory's file system the one flush makes
// them durable too and only the rename is left after it.
func (e *Engine) persist() error {
	var staged *stagedManifest
	if e.dirty {
		st, err := e.man.stage(e.o.StateDir)
		if err != nil {
			return err
		}
		staged = st
	}
	flushed := false
	if e.wrote {
		if err := syncFS(e.o.Dir); err != nil {
			if staged != nil {
				staged.abort()
			}
			return &trove.Error{Code: trove.EINTERNAL, Message: "cannot flush the synced directory", Err: err}
		}
		e.wrote = false
		flushed = flushesTogether(e.o.Dir, e.o.StateDir)
	}
	if staged == nil {
		return nil
	}
	if err := staged.commit(flushed); err != nil {
		return err
	}
	e.dirty = false
	keep := map[string]bool{}
	for _, en := range e.man.Entries {
		if en.BaseSHA != "" {
			keep[en.BaseSHA] = true
		}
	}
	e.objs.gc(keep)
	return nil
}

// collectProblems lists refused files that are still present unchanged, and
// logs the unrepresentable store paths not reported before.
func (e *Engine) collectProblems() {
	sort.Slice(e.rep.Unrepresentable, func(i, j int) bool { return e.rep.Unrepresentable[i].Path < e.rep.Unrepresentable[j].Path })
	seen := map[string]bool{}
	for _, p := range e.rep.Unrepresentable {
		seen[p.Path] = true
		if !e.told[p.Path] {
			e.rep.NewUnrepresentable = append(e.rep.NewUnrepresentable, p)
			e.log.Warn("store path not synced: it cannot be a local file; it stays in the store", "path", p.Path, "reason", p.Reason)
		}
	}
	e.told = seen // a path that comes back after it was gone is told again
	var out []Problem
	for p, en := range e.man.Entries {
		if en.RefusedSHA != "" && en.LocalSHA == en.RefusedSHA {
			out = append(out, Problem{Path: p, Reason: en.RefusedReason})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	e.rep.Refused = out
}

func (e *Engine) entry(p string) *Entry {
	en := e.man.Entries[p]
	if en == nil {
		en = &Entry{}
		e.man.Entries[p] = en
	}
	return en
}
