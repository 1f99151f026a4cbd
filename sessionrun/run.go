// Package sessionrun runs a command (an agent) in a Trove session, with the
// session's memory stores as directories.
//
// Run takes a session the caller created, with its credential, and:
//
//  1. lays each attached store out as <Root>/<DirName> and makes it
//     available with the Mounter: a copy kept by the sync engine
//     (CopyMounter, state in <StateDir>/<store ID>) or a live FUSE mount
//     (FUSEMounter);
//  2. writes the system-prompt note (Note) to <Root>/MEMORY_STORES.md;
//  3. runs the command with the session's own token in TROVE_API_KEY (never
//     the caller's credential), TROVE_SESSION_ID, TROVE_MEMORY_ROOT and
//     TROVE_MEMORY_PROMPT (Env);
//  4. when it exits (when ctx ends, it gets SIGTERM, and is killed 10 s
//     later), flushes and closes every mount, so that its last writes are
//     saved too, and ends the session (Config.End, with a context that
//     outlives ctx);
//  5. removes what the session created: the root (or, in a root that
//     existed before, the entries the session created there) and the copy
//     state. It does so only when every mount flushed everything into the
//     store and was released, and the session ended; otherwise it removes
//     nothing and says on Stderr what it kept, where, and why.
//
// What the agent should know about its writes (conflict copies, refused
// files, restored read-only files) is appended to <Root>/SYNC_NOTICES.md
// through one Notices value per session.
package sessionrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/atomicfile"
)

// Config is one session run.
type Config struct {
	// Session is the session the caller created, with its attached stores.
	Session *trove.Session
	// Token is the session's own credential, given to the command.
	Token string
	// Services act with the session's credential: a client holding Token
	// for a server, or local services used with Principal.
	Services trove.Services
	// Principal is the session's principal, put in the context of every
	// service call (nil: the one ctx carries, if any).
	Principal *trove.Principal
	// ServerURL is the server the session lives on ("" for a local
	// database); when set, the command gets EventsURLEnv, where it records
	// its conversation.
	ServerURL string
	// End ends the session. Run calls it exactly once, after every mount
	// was flushed and closed, even when Run fails before the command runs.
	End func(context.Context) error

	// Mounter makes each store a directory: CopyMounter or FUSEMounter.
	Mounter Mounter
	// Root holds one directory per store, the note and the notices
	// ("": <os.TempDir()>/trove-<session ID>). A store directory that
	// exists must be empty.
	Root string
	// StateDir holds the copy state, one directory per store
	// ("": <os.TempDir()>/trove-state-<session ID>).
	StateDir string
	// Interval is the longest time between sync passes of copy mounts
	// (0: syncer.DefaultInterval).
	Interval time.Duration
	// Limits are the store limits the note states (zero: trove.DefaultLimits()).
	Limits trove.Limits
	// Logger receives the mounts' logs (nil: discarded).
	Logger *slog.Logger

	// Command is the program and its arguments.
	Command []string
	// Environ is the command's environment before the session's variables
	// are set (nil: os.Environ()).
	Environ []string
	Stdin   io.Reader
	Stdout  io.Writer
	// Stderr receives the command's standard error and Run's own messages
	// (nil: discarded).
	Stderr io.Writer
}

// ExitError reports that the command failed: it exited with Code (128+N
// when killed by signal N), or could not start (Code 127).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// waitDelay is how long the command has between SIGTERM (ctx ended) and
// being killed.
const waitDelay = 10 * time.Second

// Run runs cfg.Command in cfg.Session (see the package documentation) and
// returns nil when the command exited with status 0, an *ExitError when it
// failed or was stopped by ctx (Code 143 when it then exited with status
// 0), or the error that stopped the session from starting. Failures of
// the final flush, of ending the session and of the cleanup are reported
// on Stderr; they never change the command's result.
func Run(ctx context.Context, cfg Config) error {
	r := &runner{cfg: cfg, stderr: cfg.Stderr}
	if r.stderr == nil {
		r.stderr = io.Discard
	}
	if cfg.Session == nil || cfg.End == nil {
		return errors.New("sessionrun: Config.Session and Config.End are required")
	}
	err := r.setup(ctx)
	var runErr error
	if err == nil {
		runErr = r.run(ctx)
	}
	r.teardown(ctx)
	if err != nil {
		return err
	}
	return runErr
}

type runner struct {
	cfg    Config
	stderr io.Writer
	root   string
	state  string
	sctx   context.Context // ctx with the session's principal

	mounts []Mount
	dirs   []string // dirs[i] is mounts[i]'s directory
	note   string

	// remove lists what the cleanup removes, built while the session
	// creates it; empty lists the entries emptied (directories that
	// existed, empty, before).
	remove []string
	empty  []string

	mu   sync.Mutex
	kept []string // why the cleanup must keep everything
}

// keep records a reason not to remove anything.
func (r *runner) keep(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kept = append(r.kept, why)
}

func (r *runner) setup(ctx context.Context) error {
	cfg := r.cfg
	if len(cfg.Command) == 0 || cfg.Mounter == nil {
		return errors.New("sessionrun: Config.Command and Config.Mounter are required")
	}
	id := cfg.Session.ID
	r.sctx = ctx
	if cfg.Principal != nil {
		r.sctx = trove.WithPrincipal(ctx, cfg.Principal)
	}
	var err error
	if r.root, err = filepath.Abs(orDefault(cfg.Root, filepath.Join(os.TempDir(), "trove-"+id))); err != nil {
		return err
	}
	if r.state, err = filepath.Abs(orDefault(cfg.StateDir, filepath.Join(os.TempDir(), "trove-state-"+id))); err != nil {
		return err
	}
	rootIsNew := !exists(r.root)
	if err := os.MkdirAll(r.root, 0o755); err != nil {
		return fmt.Errorf("session run: cannot create %s: %w", r.root, err)
	}
	// created records p for removal when this session creates it (and
	// the root was not created by the session, which removes everything).
	created := func(p string) {
		if !rootIsNew && !exists(p) {
			r.remove = append(r.remove, p)
		}
	}
	if rootIsNew {
		r.remove = append(r.remove, r.root)
	}
	created(filepath.Join(r.root, NoteName))
	created(filepath.Join(r.root, NoticesName))
	stateIsNew := !exists(r.state)
	if stateIsNew {
		r.remove = append(r.remove, r.state)
	}
	notices := NewNotices(filepath.Join(r.root, NoticesName))
	for _, ss := range cfg.Session.Stores {
		dir := filepath.Join(r.root, DirName(ss))
		if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
			return fmt.Errorf("session run: %s already exists and is not empty; remove it or choose another root", dir)
		} else if err == nil && !rootIsNew {
			r.empty = append(r.empty, dir)
		} else {
			created(dir)
		}
		stateDir := filepath.Join(r.state, ss.StoreID)
		if !stateIsNew && !exists(stateDir) {
			r.remove = append(r.remove, stateDir)
		}
		m, err := cfg.Mounter.Mount(r.sctx, MountSpec{
			Store: ss, Dir: dir, StateDir: stateDir, SessionID: id,
			Services: cfg.Services, Interval: cfg.Interval, Logger: cfg.Logger, Notices: notices,
		})
		if err != nil {
			return err
		}
		r.mounts = append(r.mounts, m)
		r.dirs = append(r.dirs, dir)
	}
	if len(r.mounts) == 0 {
		return errors.New("session run: the session has no stores attached")
	}
	lim := cfg.Limits
	if lim == (trove.Limits{}) {
		lim = trove.DefaultLimits()
	}
	r.note = Note(cfg.Session.Stores, r.dirs, lim.MaxContentBytes, cfg.Mounter.Live())
	if err := atomicfile.WriteFile(filepath.Join(r.root, NoteName), []byte(r.note), 0o644); err != nil {
		return fmt.Errorf("session run: writing the memory note: %w", err)
	}
	fmt.Fprintf(r.stderr, "trove: session %s: %d store(s) under %s\n", id, len(r.mounts), r.root)
	return nil
}

// run keeps the mounts in sync while the command runs, then flushes them.
func (r *runner) run(ctx context.Context) error {
	cfg := r.cfg
	// The mounts outlive ctx: they stop once the command exited (at most
	// waitDelay after ctx ended), so that its last writes are flushed.
	runCtx, stopSync := context.WithCancel(context.WithoutCancel(r.sctx))
	var wg sync.WaitGroup
	for i, m := range r.mounts {
		wg.Go(func() {
			if err := m.Run(runCtx); err != nil {
				fmt.Fprintf(r.stderr, "trove: the final sync of %s failed: %v\n", r.dirs[i], err)
				r.keep(fmt.Sprintf("%s was not fully flushed", r.dirs[i]))
			}
		})
	}
	name := cfg.Command[0]
	child := exec.CommandContext(ctx, name, cfg.Command[1:]...)
	child.Stdin, child.Stdout, child.Stderr = cfg.Stdin, cfg.Stdout, cfg.Stderr
	env := cfg.Environ
	if env == nil {
		env = os.Environ()
	}
	child.Env = Env(env, cfg.Token, cfg.Session.ID, r.root, r.note)
	if cfg.ServerURL != "" {
		child.Env = append(child.Env, EventsURLEnv+"="+EventsURL(cfg.ServerURL, cfg.Session.ID))
	}
	child.Cancel = func() error { return stopChild(child.Process) }
	child.WaitDelay = waitDelay
	runErr := child.Run()
	stopSync()
	wg.Wait() // the final flush of every mount

	var xe *exec.ExitError
	switch {
	case runErr == nil:
		return nil
	case ctx.Err() != nil && errors.Is(runErr, ctx.Err()):
		// It exited with status 0 after SIGTERM.
		code := 128 + int(syscall.SIGTERM)
		return &ExitError{Code: code, Err: fmt.Errorf("%s was stopped: %w", name, ctx.Err())}
	case errors.As(runErr, &xe):
		code := xe.ExitCode()
		if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return &ExitError{Code: code, Err: fmt.Errorf("%s exited with status %d", name, code)}
	default:
		return &ExitError{Code: 127, Err: fmt.Errorf("cannot run %s: %w", name, runErr)}
	}
}

// teardown closes the mounts, ends the session and cleans up.
func (r *runner) teardown(ctx context.Context) {
	for i, m := range r.mounts {
		if err := m.Close(); err != nil {
			fmt.Fprintf(r.stderr, "trove: releasing %s: %v\n", r.dirs[i], err)
			r.keep(fmt.Sprintf("%s was not released", r.dirs[i]))
		}
	}
	id := r.cfg.Session.ID
	// The session ends whatever happens, even after the signal that
	// stopped the command.
	if err := r.cfg.End(context.WithoutCancel(ctx)); err != nil {
		fmt.Fprintf(r.stderr, "trove: ending session %s: %s\n", id, trove.ErrorMessage(err))
		r.keep("the session did not end")
	}
	if r.root == "" { // setup stopped before creating anything
		return
	}
	for _, d := range r.dirs {
		if isMountPoint(d) {
			r.keep(d + " is still mounted")
		}
	}
	if len(r.kept) > 0 {
		where := r.root
		if exists(r.state) {
			where += " and the copy state in " + r.state
		}
		fmt.Fprintf(r.stderr, "trove: session %s: kept %s, because %s\n", id, where, strings.Join(r.kept, "; "))
		return
	}
	var errs []error
	for _, p := range r.remove {
		errs = append(errs, os.RemoveAll(p))
	}
	for _, d := range r.empty {
		errs = append(errs, emptyDir(d))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(r.stderr, "trove: session %s: cleaning up: %v\n", id, err)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// emptyDir removes everything in dir, keeping dir.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}
