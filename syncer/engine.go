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
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
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

// listRemote lists every memory of the store: sha only, or, when the
// manifest is empty (a first download, where every memory is likely to be
// pulled), with contents. Into an empty directory (streamDownloads) each
// page's memories are written while the next page is fetched; otherwise
// the contents are kept for the round's downloads (up to prefetchBudget
// bytes; the rest is fetched as usual).
func (e *Engine) listRemote(ctx context.Context, scan *Scan) (map[string]RemoteFile, error) {
	e.pre = nil
	view := trove.ViewBasic
	var each func(*trove.Memory)
	wait := func() {}
	if len(e.man.Entries) == 0 {
		view = trove.ViewFull
		if len(scan.Files) == 0 && len(scan.Blocked) == 0 && len(scan.Skipped) == 0 {
			each, wait = e.streamDownloads(ctx, scan)
		} else {
			held := 0
			e.pre = map[string]*trove.Memory{}
			each = func(m *trove.Memory) {
				if m.Content != nil && held+m.SizeBytes <= prefetchBudget {
					c := *m
					e.pre[m.ID] = &c
					held += m.SizeBytes
				}
			}
		}
	}
	all, err := e.tree.ReloadView(ctx, view, each) // the index holds this snapshot, no more
	wait()
	if err != nil {
		return nil, err
	}
	out := make(map[string]RemoteFile, len(all))
	for i := range all {
		m := &all[i]
		out[m.Path] = RemoteFile{ID: m.ID, SHA: m.SHA256, Size: m.SizeBytes}
	}
	return out, nil
}

// streamDownloads is the first download into an empty directory, in step
// with the listing: with no manifest entry and no local file, the plan of
// every listed memory (but those round leaves out: unrepresentable paths,
// temp-file names) is one download, so each is written as its page
// arrives, streamWriters at a time (up to streamBuffer listed memories
// wait for a writer, so the next page is fetched while the disk catches
// up), and recorded as agreed (manifest entry) and as seen by the scan (so the round's plan finds nothing left to
// do for it). A memory whose write fails is left to the round's plan, which
// retries it as a download and reports what fails again. send gives a
// memory to the writers; wait returns once every write is done.
func (e *Engine) streamDownloads(ctx context.Context, scan *Scan) (send func(*trove.Memory), wait func()) {
	work := make(chan *trove.Memory, streamBuffer)
	var wg sync.WaitGroup
	kick, stopFlush := func() {}, func() {}
	if !syncEachFile {
		kick, stopFlush = e.flushBehind()
	}
	for range streamWriters {
		wg.Go(func() {
			for m := range work {
				if ctx.Err() != nil || m.Content == nil {
					continue
				}
				b := []byte(*m.Content)
				key, err := e.writeLocal(m.Path, b, "")
				if err != nil {
					continue
				}
				e.agree(m.Path, m.ID, m.SHA256, nil, &key)
				kick()
				e.amu.Lock()
				en := e.man.Entries[m.Path]
				scan.Files[m.Path] = LocalFile{SHA: m.SHA256, Size: int64(len(b)), Stat: key, HashedAt: en.HashedAt}
				e.rep.count(KindDownload)
				e.amu.Unlock()
			}
		})
	}
	send = func(m *trove.Memory) {
		if storetree.LocalProblem(m.Path) != "" || isTempName(path.Base(m.Path)) {
			return
		}
		work <- m
	}
	return send, func() { close(work); wg.Wait(); stopFlush() }
}

// flushBehind flushes the synced directory's file system in the background
// while a first download writes, one flush after another as long as kick
// reports new writes, so that the flush persist makes before the manifest
// names the files (the one that makes them durable) finds little left to
// write: the disk works while the listing is fetched. stop ends the loop
// and waits for its last flush. Errors are left to persist's flush.
func (e *Engine) flushBehind() (kick, stop func()) {
	wrote := make(chan struct{}, 1)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-wrote:
			}
			_ = syncFS(e.o.Dir)
		}
	}()
	kick = func() {
		select {
		case wrote <- struct{}{}:
		default:
		}
	}
	return kick, func() { close(done); <-finished }
}

// prefetch fetches the contents the round's downloads need: with a full
// listing when there are many, else one GetMemory each, a few at a time.
func (e *Engine) prefetch(ctx context.Context, acts []Action) {
	need := map[string]bool{}
	for _, a := range acts {
		if (a.Kind == KindDownload || a.Kind == KindRestore) && a.MemoryID != "" && a.RemoteSHA != "" {
			need[a.MemoryID] = true
		}
	}
	got := map[string]*trove.Memory{}
	defer func() { e.pre = got }()
	held := 0                  // content bytes held in memory
	for id, m := range e.pre { // kept by the listing
		if need[id] {
			got[id] = m
			held += m.SizeBytes
			delete(need, id)
		}
	}
	if len(need) == 0 {
		return
	}
	if len(need) > 64 && len(need)*4 > len(e.remote) {
		// Past the budget the listing stops; the rest is fetched one by
		// one. A failed listing leaves the downloads to fetch one by one.
		_ = e.tree.Walk(ctx, trove.ViewFull, func(m *trove.Memory) bool {
			if need[m.ID] {
				got[m.ID] = m
				held += m.SizeBytes
			}
			return held <= prefetchBudget
		})
		return
	}
	ids := make(chan string)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range fetchConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				mu.Lock()
				over := held > prefetchBudget
				mu.Unlock()
				if over {
					continue // fetched at apply time
				}
				m, err := e.tree.Get(ctx, id, trove.ViewFull)
				if err == nil {
					mu.Lock()
					got[id] = m
					held += m.SizeBytes
					mu.Unlock()
				}
			}
		}()
	}
	for id := range need {
		ids <- id
	}
	close(ids)
	wg.Wait()
}

// fetch returns the memory's current content (prefetched or fetched now);
// errRace when the memory is gone or changed meanwhile.
func (e *Engine) fetch(ctx context.Context, id string) (*trove.Memory, error) {
	e.amu.Lock()
	m := e.pre[id]
	delete(e.pre, id)
	e.amu.Unlock()
	if m != nil && m.Content != nil {
		return m, nil
	}
	m, err := e.tree.Get(ctx, id, trove.ViewFull)
	if isRace(err) {
		return nil, errRace
	}
	if err != nil {
		return nil, err
	}
	if m.Content == nil {
		return nil, trove.Errorf(trove.EINTERNAL, "store returned no content for %s", id)
	}
	return m, nil
}

var rel = storetree.Rel

// readExpect reads the local file at p and checks it still hashes to sha;
// errRace otherwise.
func (e *Engine) readExpect(p, sha string) ([]byte, error) {
	b, _, err := readLocal(e.root, rel(p))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errRace
		}
		return nil, err
	}
	if hashBytes(b) != sha {
		return nil, errRace
	}
	return b, nil
}

func (e *Engine) hasDir(d string) bool {
	e.amu.Lock()
	defer e.amu.Unlock()
	return e.dirs[d]
}

// dirRoot returns a handle on directory d (relative to the synced
// directory, "." for itself), opened once per round, so that writing a
// file there does not re-walk its path in every call (os.Root opens each
// component per operation). A directory the round removes loses its
// handle (dropDirRoot); closeDirRoots ends the round's handles.
func (e *Engine) dirRoot(d string) (*os.Root, error) {
	if d == "." {
		return e.root, nil
	}
	e.amu.Lock()
	r := e.droots[d]
	e.amu.Unlock()
	if r != nil {
		return r, nil
	}
	r, err := e.root.OpenRoot(d)
	if err != nil {
		return nil, err
	}
	e.amu.Lock()
	defer e.amu.Unlock()
	if old := e.droots[d]; old != nil {
		r.Close()
		return old, nil
	}
	if e.droots == nil {
		e.droots = map[string]*os.Root{}
	}
	e.droots[d] = r
	return r, nil
}

// dropDirRoot closes the handle on directory d, if any.
func (e *Engine) dropDirRoot(d string) {
	e.amu.Lock()
	defer e.amu.Unlock()
	e.closeDirFileLocked(d)
	if r := e.droots[d]; r != nil {
		r.Close()
		delete(e.droots, d)
	}
}

// closeDirRoots closes every directory handle of the round.
func (e *Engine) closeDirRoots() {
	e.amu.Lock()
	defer e.amu.Unlock()
	e.closeDirFilesLocked()
	for _, r := range e.droots {
		r.Close()
	}
	e.droots = nil
}

// writeLocal atomically replaces the file at p with b, provided the file
// still holds expectSHA ("" : provided it is still absent). It returns the
// new file's stat key, or errRace when the local file changed. A new file
// (expectSHA "") is written unnamed and linked into place where the system
// can (createNew); otherwise, and for a replacement, through a temp file
// and a rename.
func (e *Engine) writeLocal(p string, b []byte, expectSHA string) (StatKey, error) {
	r := rel(p)
	dir := path.Dir(r)
	if dir != "." && !e.hasDir(dir) {
		if err := e.root.MkdirAll(dir, 0o755); err != nil {
			return StatKey{}, fmt.Errorf("cannot create directory %s: %w", dir, err)
		}
		e.amu.Lock()
		e.dirs[dir] = true
		e.amu.Unlock()
	}
	d, err := e.dirRoot(dir)
	if err != nil {
		return StatKey{}, err
	}
	name := path.Base(r)
	if expectSHA == "" {
		if key, ok, err := e.createNew(dir, name, b); ok {
			if err == nil {
				e.amu.Lock()
				e.wrote = true
				e.amu.Unlock()
			}
			return key, err
		}
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := tempPrefix + hex.EncodeToString(rnd[:]) + tempSuffix
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return StatKey{}, err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		d.Remove(tmp)
		return StatKey{}, err
	}
	if syncEachFile {
		if err := f.Sync(); err != nil {
			f.Close()
			d.Remove(tmp)
			return StatKey{}, err
		}
	}
	if err := f.Close(); err != nil {
		d.Remove(tmp)
		return StatKey{}, err
	}
	// Re-check the target just before replacing it: never overwrite bytes
	// the planner did not see.
	if expectSHA == "" {
		if _, err := d.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
			d.Remove(tmp)
			return StatKey{}, errRace
		}
	} else if _, err := e.readExpect(p, expectSHA); err != nil {
		d.Remove(tmp)
		return StatKey{}, err
	}
	if err := d.Rename(tmp, name); err != nil {
		d.Remove(tmp)
		return StatKey{}, err
	}
	e.amu.Lock()
	e.wrote = true
	e.amu.Unlock()
	fi, err := d.Lstat(name)
	if err != nil {
		return StatKey{}, err
	}
	return statKey(fi), nil
}

// agree records that p holds sha on both sides, bound to memory id.
// key is the local file's stat when it held sha, hashed at hashedAt (unix ns;
// 0 means now); nil leaves the stat cache alone.
func (e *Engine) agree(p, id, sha string, content []byte, key *StatKey, hashedAt ...int64) {
	if content != nil {
		if err := e.objs.put(sha, content); err != nil {
			e.log.Warn("cannot keep the base object", "path", p, "err", err)
		}
	}
	e.amu.Lock()
	defer e.amu.Unlock()
	en := e.entry(p)
	en.MemoryID, en.BaseSHA = id, sha
	en.AbsentSince = time.Time{}
	en.RefusedSHA, en.RefusedReason = "", ""
	if key != nil {
		en.Stat, en.LocalSHA, en.HashedAt = *key, sha, time.Now().UnixNano()
		if len(hashedAt) > 0 && hashedAt[0] != 0 {
			en.HashedAt = hashedAt[0]
		}
	}
	e.dirty = true
}

// agreeScanned is agree for the local file at p holding b as this round's
// scan saw it.
func (e *Engine) agreeScanned(p, id, sha string, b []byte) {
	f := e.scan.Files[p]
	e.agree(p, id, sha, b, &f.Stat, f.HashedAt)
}

func isRace(err error) bool {
	switch trove.ErrorCode(err) {
	case trove.EPRECONDITION, trove.ENOTFOUND:
		return true
	}
	return false
}

func (e *Engine) apply(ctx context.Context, a Action) error {
	switch a.Kind {
	case KindMarkAbsent:
		en := e.entry(a.Path)
		en.AbsentSince = a.Since
		e.dirty = true
		return nil
	case KindForget:
		delete(e.man.Entries, a.Path)
		e.dirty = true
		return nil
	case KindRefuse:
		en := e.entry(a.Path)
		en.RefusedSHA, en.RefusedReason = a.LocalSHA, a.Reason
		e.dirty = true
		e.log.Warn("file not synced: the store cannot accept it; it stays local", "path", a.Path, "reason", a.Reason)
		return nil
	case KindAdopt:
		b, err := e.readExpect(a.Path, a.LocalSHA)
		if err != nil {
			return err
		}
		e.agreeScanned(a.Path, a.MemoryID, a.LocalSHA, b)
		return nil
	case KindDownload:
		return e.download(ctx, a)
	case KindUpload:
		b, err := e.readExpect(a.Path, a.LocalSHA)
		if err != nil {
			return err
		}
		s := string(b)
		m, err := e.tree.Update(ctx, a.MemoryID, trove.UpdateMemoryParams{Content: &s, PreconditionSHA256: a.RemoteSHA})
		if isRace(err) {
			return errRace
		}
		if err != nil {
			return err
		}
		e.agreeScanned(a.Path, m.ID, m.SHA256, b)
		return nil
	case KindCreate:
		b, err := e.readExpect(a.Path, a.LocalSHA)
		if err != nil {
			return err
		}
		m, err := e.tree.Create(ctx, a.Path, string(b))
		if err != nil {
			var te *trove.Error
			if errors.As(err, &te) && te.Code == trove.EPATHCONFLICT && (te.ConflictingPath == "" || te.ConflictingPath == a.Path) {
				return errRace // created concurrently: re-plan as both-created
			}
			return err
		}
		e.agreeScanned(a.Path, m.ID, m.SHA256, b)
		return nil
	case KindDeleteLocal:
		return e.deleteLocal(a)
	case KindDeleteRemote:
		if _, err := e.root.Lstat(rel(a.Path)); !errors.Is(err, fs.ErrNotExist) {
			return errRace // came back
		}
		err := e.tree.Delete(ctx, a.MemoryID, a.BaseSHA)
		switch trove.ErrorCode(err) {
		case "", trove.ENOTFOUND:
		case trove.EPRECONDITION:
			return errRace // changed remotely: the next round restores it
		default:
			return err
		}
		delete(e.man.Entries, a.Path)
		e.dirty = true
		return nil
	case KindRename:
		if _, err := e.root.Lstat(rel(a.Path)); !errors.Is(err, fs.ErrNotExist) {
			return errRace
		}
		b, err := e.readExpect(a.To, a.LocalSHA)
		if err != nil {
			return err
		}
		to := a.To
		m, err := e.tree.Update(ctx, a.MemoryID, trove.UpdateMemoryParams{Path: &to, PreconditionSHA256: a.BaseSHA})
		if isRace(err) || trove.ErrorCode(err) == trove.EPATHCONFLICT {
			return errRace
		}
		if err != nil {
			return err
		}
		delete(e.man.Entries, a.Path)
		e.agreeScanned(a.To, m.ID, m.SHA256, b)
		return nil
	case KindMerge:
		return e.merge(ctx, a)
	case KindConflict:
		b, err := e.readExpect(a.Path, a.LocalSHA)
		if err != nil {
			return err
		}
		m, err := e.fetch(ctx, a.MemoryID)
		if err != nil {
			return err
		}
		return e.conflict(ctx, a, b, m)
	case KindRestore:
		return e.restore(ctx, a)
	}
	return fmt.Errorf("unknown action %q", a.Kind)
}

func (e *Engine) removeEmptyParents(p string) {
	for d := path.Dir(rel(p)); d != "." && d != "/"; d = path.Dir(d) {
		if e.root.Remove(d) != nil { // fails unless empty
			return
		}
		e.dropDirRoot(d)
		e.amu.Lock()
		delete(e.dirs, d)
		e.amu.Unlock()
	}
}

// merge handles a change on both sides.
func (e *Engine) merge(ctx context.Context, a Action) error {
	local, err := e.readExpect(a.Path, a.LocalSHA)
	if err != nil {
		return err
	}
	m, err := e.fetch(ctx, a.MemoryID)
	if err != nil {
		return err
	}
	remote := []byte(*m.Content)
	if base, ok := e.base(ctx, m.ID, a.BaseSHA); ok {
		if merged, clean := Merge3(base, local, remote); clean && contentProblem(merged, e.o.Limits) == "" {
			s := string(merged)
			nm, err := e.tree.Update(ctx, m.ID, trove.UpdateMemoryParams{Content: &s, PreconditionSHA256: m.SHA256})
			if isRace(err) {
				return errRace
			}
			if err != nil {
				return err
			}
			key, err := e.writeLocal(a.Path, merged, a.LocalSHA)
			if err != nil {
				// The store has the merge; the local file moved on. The next
				// round merges again against the new remote.
				return err
			}
			e.agree(a.Path, nm.ID, nm.SHA256, merged, &key)
			e.rep.Merged = append(e.rep.Merged, a.Path)
			e.log.Info("merged concurrent changes", "path", a.Path)
			return nil
		}
	}
	return e.conflict(ctx, a, local, m)
}

// baseVersionPages bounds how many pages of a memory's history (newest
// first) base reads looking for the base.
const baseVersionPages = 5

// base returns the bytes both sides last agreed on for memory id (sha):
// the base object when one was kept (what this engine uploaded), else the
// memory's version holding them in the store's history (what it
// downloaded). false when neither has them (redacted, pruned, older than
// baseVersionPages pages): the merge becomes a conflict copy.
func (e *Engine) base(ctx context.Context, id, sha string) ([]byte, bool) {
	if b, ok := e.objs.get(sha); ok {
		return b, true
	}
	if sha == "" {
		return nil, false
	}
	cursor := ""
	for range baseVersionPages {
		pg, err := e.o.Services.ListVersions(ctx, e.o.StoreID, trove.ListVersionsParams{MemoryID: id, View: trove.ViewFull, Limit: e.o.Limits.MaxFullPageSize, Cursor: cursor})
		if err != nil {
			return nil, false
		}
		for _, v := range pg.Data {
			if v.SHA256 != nil && *v.SHA256 == sha && v.Content != nil {
				if b := []byte(*v.Content); hashBytes(b) == sha {
					return b, true
				}
			}
		}
		if pg.NextPage == "" {
			return nil, false
		}
		cursor = pg.NextPage
	}
	return nil, false
}

// conflict keeps the store's version m at a.Path and saves the local bytes
// as a conflict copy, locally first (so they survive a crash) and then in
// the store.
func (e *Engine) conflict(ctx context.Context, a Action, local []byte, m *trove.Memory) error {
	copyPath, localHas, remoteHas := e.existingCopy(a.Path, a.LocalSHA)
	if copyPath == "" {
		copyPath = storetree.ConflictName(a.Path, e.tag(), e.o.Now(), func(p string) bool { return e.taken[p] })
	}
	e.taken[copyPath] = true
	c := Conflict{Path: a.Path, CopyPath: copyPath}
	var key StatKey
	if !localHas {
		k, err := e.writeLocal(copyPath, local, "")
		if err != nil {
			return fmt.Errorf("cannot save the conflict copy %s: %w", copyPath, err)
		}
		key = k
	}
	ce := e.entry(copyPath)
	if !localHas {
		ce.Stat, ce.LocalSHA, ce.HashedAt = key, a.LocalSHA, time.Now().UnixNano()
	}
	e.dirty = true
	if remoteHas {
		c.InStore = true
		r := e.remote[copyPath]
		e.agree(copyPath, r.ID, r.SHA, local, nil)
	} else if prob := contentProblem(local, e.o.Limits); prob != "" {
		ce.RefusedSHA, ce.RefusedReason = a.LocalSHA, prob
	} else {
		cm, err := e.tree.Create(ctx, copyPath, string(local))
		if err == nil {
			c.InStore = true
			e.agree(copyPath, cm.ID, cm.SHA256, local, nil)
		} else {
			// Kept locally; the next pass retries it as a new local file.
			e.rep.Errors = append(e.rep.Errors, Problem{Path: copyPath, Reason: "conflict copy kept locally only: " + errText(err)})
		}
	}
	remote := []byte(*m.Content)
	k, err := e.writeLocal(a.Path, remote, a.LocalSHA)
	if err != nil {
		return err
	}
	e.agree(a.Path, m.ID, m.SHA256, remote, &k)
	e.rep.Conflicts = append(e.rep.Conflicts, c)
	e.log.Warn("sync conflict: the store's version was kept; the local version was saved as a conflict copy", "path", a.Path, "copy", copyPath, "copy_in_store", c.InStore)
	return nil
}

// existingCopy finds a conflict copy of p already holding sha (from an
// interrupted earlier pass), locally or in the store.
func (e *Engine) existingCopy(p, sha string) (string, bool, bool) {
	var cands []string
	for q, f := range e.scan.Files {
		if f.SHA == sha && storetree.IsConflictCopyOf(p, q) {
			cands = append(cands, q)
		}
	}
	for q, r := range e.remote {
		if r.SHA == sha && storetree.IsConflictCopyOf(p, q) {
			cands = append(cands, q)
		}
	}
	if len(cands) == 0 {
		return "", false, false
	}
	sort.Strings(cands)
	q := cands[0]
	lf, lok := e.scan.Files[q]
	rf, rok := e.remote[q]
	return q, lok && lf.SHA == sha, rok && rf.SHA == sha
}

func (e *Engine) tag() string {
	id := strings.TrimPrefix(e.o.SessionID, trove.PrefixSession)
	if id == "" {
		return "local"
	}
	if len(id) > 8 {
		id = id[:8]
	}
	return id
}

// restore (read-only stores) moves the local bytes to quarantine and puts the
// store's version back.
func (e *Engine) restore(ctx context.Context, a Action) error {
	local, err := e.readExpect(a.Path, a.LocalSHA)
	if err != nil {
		return err
	}
	qdir := filepath.Join(e.o.StateDir, QuarantineDir, e.o.Now().UTC().Format("20060102T150405Z"))
	first := filepath.Join(qdir, filepath.FromSlash(rel(a.Path)))
	qpath := first
	for i := 2; ; i++ { // never overwrite an earlier quarantined copy
		if _, err := os.Lstat(qpath); errors.Is(err, fs.ErrNotExist) {
			break
		}
		qpath = first + "." + strconv.Itoa(i)
	}
	if err := os.MkdirAll(filepath.Dir(qpath), 0o755); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Dir(qpath), filepath.Base(qpath), local, true); err != nil {
		return fmt.Errorf("cannot quarantine %s: %w", a.Path, err)
	}
	e.rep.Quarantined = append(e.rep.Quarantined, Problem{Path: a.Path, Reason: a.Reason + " (local bytes saved at " + qpath + ")"})
	e.log.Warn("read-only store: local change moved to quarantine", "path", a.Path, "quarantine", qpath)
	if a.RemoteSHA == "" {
		return e.deleteLocal(a)
	}
	return e.download(ctx, a)
}

// download writes the store's version of a.MemoryID at a.Path, provided the
// local file still holds a.LocalSHA, and records the agreement.
func (e *Engine) download(ctx context.Context, a Action) error {
	m, err := e.fetch(ctx, a.MemoryID)
	if err != nil {
		return err
	}
	content := []byte(*m.Content)
	key, err := e.writeLocal(a.Path, content, a.LocalSHA)
	if err != nil {
		return err
	}
	// No base object: the store holds these bytes as a version, where a
	// later merge finds them (base); a download of many memories makes
	// one file per memory, not two.
	e.agree(a.Path, m.ID, m.SHA256, nil, &key)
	return nil
}

// deleteLocal removes the local file at a.Path, provided it still holds
// a.LocalSHA, with the parents it leaves empty, and forgets the path.
func (e *Engine) deleteLocal(a Action) error {
	if _, err := e.readExpect(a.Path, a.LocalSHA); err != nil {
		return err
	}
	if err := e.root.Remove(rel(a.Path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	e.wrote = true
	e.removeEmptyParents(a.Path)
	delete(e.man.Entries, a.Path)
	e.dirty = true
	return nil
}
