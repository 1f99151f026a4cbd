package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/syncer"
)

func init() { register(newSessionCmd) }

// mounter makes one attached store available as a directory for the length
// of a session. The copy engine (syncer) is the portable implementation; a
// FUSE mount can replace it where the kernel allows, behind this seam.
type mounter interface {
	// Mount prepares spec.Dir with the store's contents (it returns only
	// once the agent can read them) and returns the running mount.
	Mount(ctx context.Context, spec mountSpec) (mount, error)
}

// mount is a store made available by a mounter.
type mount interface {
	// Run keeps the directory and the store in sync until ctx is done, then
	// flushes (bounded) and returns.
	Run(ctx context.Context) error
	// Close releases the mount's resources after Run returned.
	Close() error
}

// mountSpec is what a mounter needs for one attached store. Services act
// with the session's credential.
type mountSpec struct {
	Store     trove.SessionStore
	Dir       string
	StateDir  string
	SessionID string
	Services  trove.Services
	Interval  time.Duration
	Logger    *slog.Logger
}

// copyMounter mounts by copying: download, then the sync engine.
type copyMounter struct {
	stderr io.Writer
}

// noticesName is the file under the session root where sync notices the
// agent should know about (conflict copies, refused files, restored
// read-only files) are appended. It is outside every store directory, so it
// is never synced.
const noticesName = "SYNC_NOTICES.md"

var noticesMu sync.Mutex

// appendNotice appends the notable parts of a pass's report to root's
// notices file.
func appendNotice(root, store string, r *syncer.Report) {
	if r == nil {
		return
	}
	var b strings.Builder
	for _, c := range r.Conflicts {
		fmt.Fprintf(&b, "- [%s] %s changed in the store while you edited it: the store's version is at %s, yours was saved as %s\n", store, c.Path, c.Path, c.CopyPath)
	}
	if r.Counts[syncer.KindRefuse] > 0 { // newly refused this pass
		for _, p := range r.Refused {
			fmt.Fprintf(&b, "- [%s] %s is not saved to the store: %s\n", store, p.Path, p.Reason)
		}
	}
	for _, p := range r.Quarantined {
		fmt.Fprintf(&b, "- [%s] %s: %s\n", store, p.Path, p.Reason)
	}
	for _, p := range r.NewUnrepresentable {
		fmt.Fprintf(&b, "- [%s] %s is in the store but not synced here: %s\n", store, p.Path, p.Reason)
	}
	appendNoticeText(root, b.String())
}

// appendRefusal appends to root's notices file a change a live mount of
// store refused (the agent's shell may have ignored the error of close).
func appendRefusal(root, store, path, reason string) {
	appendNoticeText(root, fmt.Sprintf("- [%s] %s is not saved to the store: %s\n", store, path, reason))
}

// appendNoticeText appends text to root's notices file (best effort).
func appendNoticeText(root, text string) {
	if text == "" {
		return
	}
	noticesMu.Lock()
	defer noticesMu.Unlock()
	f, err := os.OpenFile(filepath.Join(root, noticesName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteString(text)
}

type copyMount struct{ eng *syncer.Engine }

func (m copyMount) Run(ctx context.Context) error { return m.eng.Run(ctx) }
func (m copyMount) Close() error                  { return m.eng.Close() }

func (c copyMounter) Mount(ctx context.Context, s mountSpec) (mount, error) {
	name := s.Store.Name
	eng, err := syncer.New(syncer.Options{
		Services: s.Services, StoreID: s.Store.StoreID, Dir: s.Dir, StateDir: s.StateDir,
		ReadOnly: s.Store.Access == trove.AccessReadOnly, SessionID: s.SessionID,
		Interval: s.Interval, Logger: s.Logger.With("mount", s.Dir),
		OnPass: func(r *syncer.Report, err error) {
			appendNotice(filepath.Dir(s.Dir), name, r)
			if c.stderr != nil && (err != nil || len(r.Conflicts)+len(r.Errors)+len(r.Quarantined)+len(r.NewUnrepresentable) > 0 || r.Counts[syncer.KindRefuse] > 0) {
				fmt.Fprintf(c.stderr, "[trove %s] ", name)
				printReport(c.stderr, r, err, false)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	rep, err := eng.Sync(ctx)
	if err != nil {
		eng.Close()
		return nil, fmt.Errorf("downloading store %q into %s: %w", name, s.Dir, err)
	}
	if len(rep.Errors) > 0 {
		eng.Close()
		return nil, fmt.Errorf("downloading store %q into %s: %s: %s", name, s.Dir, rep.Errors[0].Path, rep.Errors[0].Reason)
	}
	return copyMount{eng}, nil
}

func newSessionCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Run agents in sessions with memory stores attached",
	}
	cmd.AddCommand(newSessionRunCmd(e))
	return cmd
}

func newSessionRunCmd(e *env) *cobra.Command {
	var (
		sf       storeFlags
		refs     []string
		instr    []string
		root     string
		state    string
		interval time.Duration
		verbose  bool
		mode     string
	)
	cmd := &cobra.Command{
		Use:   "run --store NAME_OR_ID[:ro] [--store …] [--root DIR] -- CMD [ARGS…]",
		Short: "Run a command in a new session with stores synced as directories",
		Long: `session run creates a session with the given stores attached (":ro" for
read-only), lays each out as <root>/<slug> from its mount path, downloads it,
writes the system-prompt note to <root>/MEMORY_STORES.md and TROVE_MEMORY_PROMPT,
and runs CMD with:

  TROVE_API_KEY        the session's own credential (never the workspace key)
  TROVE_SESSION_ID     the session ID
  TROVE_MEMORY_ROOT    the root directory
  TROVE_MEMORY_PROMPT  the note describing the stores

With --mount fuse (the default where FUSE works: /dev/fuse, and root or
fusermount3) each directory is a live FUSE mount: every close of a written
file is one version, and other writers' changes appear within a second.
With --mount copy (the default elsewhere) the directories are copies kept by
the sync engine: synced while CMD runs (file changes, and at least every
--interval) and flushed when it exits. Either way the session then ends,
writes are versions attributed to the session, and the exit code is CMD's.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 {
				return &exitError{code: 2, err: errors.New("session run: put the command after --, e.g. trove session run --store notes -- claude")}
			}
			if len(refs) == 0 {
				return &exitError{code: 2, err: errors.New("session run: give at least one --store")}
			}
			mnt, err := chooseMounter(mode, e.stderr)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			return runSession(e, cmd, &sf, refs, instr, root, state, interval, verbose, args, mnt)
		},
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&refs, "store", nil, "store name or ID to attach, :ro for read-only (repeatable)")
	f.StringArrayVar(&instr, "instructions", nil, "instructions for the store at the same position (repeatable)")
	f.StringVar(&root, "root", "", "directory holding one directory per store (default: a new directory under $TMPDIR)")
	f.StringVar(&state, "state", "", "state directory for sync manifests (default $XDG_STATE_HOME/trove/sessions/<session>)")
	f.DurationVar(&interval, "interval", syncer.DefaultInterval, "longest time between sync passes while CMD runs")
	f.BoolVarP(&verbose, "verbose", "v", false, "log every sync action")
	f.StringVar(&mode, "mount", "auto", "how stores appear as directories: fuse (live mount), copy (sync engine), or auto (fuse where it works)")
	return cmd
}

// chooseMounter picks the mounter for --mount: "fuse" and "copy" as named,
// "auto" FUSE when fuseAvailable says it works and the copy engine otherwise.
func chooseMounter(mode string, stderr io.Writer) (mounter, error) {
	switch mode {
	case "copy":
		return copyMounter{stderr: stderr}, nil
	case "fuse":
		if why := fuseAvailable(); why != "" {
			return nil, fmt.Errorf("session run: --mount fuse: FUSE is unavailable here (%s); use --mount copy", why)
		}
		return fuseMounter{}, nil
	case "auto", "":
		if fuseAvailable() == "" {
			return fuseMounter{}, nil
		}
		return copyMounter{stderr: stderr}, nil
	}
	return nil, fmt.Errorf("session run: --mount must be auto, fuse or copy, not %q", mode)
}

// cliSession is a session a command created, with what acts as it.
type cliSession struct {
	*trove.Session
	// Token is the session's own credential.
	Token string
	// Services act with the session's credential: a client holding Token
	// for a server, the local services otherwise.
	Services trove.Services
	// Principal is the session's: authenticated from Token for a local
	// database; for a server it is not sent (the client carries the token)
	// and only names conflict copies.
	Principal *trove.Principal
	// Ctx is the command's context carrying Principal.
	Ctx context.Context
}

// startSession opens the services sf chooses, resolves refs
// ("NAME_OR_ID[:ro]"), and creates a session with those stores attached,
// instr[i] (if any) as the instructions of the i-th. The returned function
// ends the session with a context that survives the command's (reporting a
// failure on e.stderr), then closes the services; call it once done. cmdName
// prefixes the errors of a backend without sessions.
func startSession(e *env, cmd *cobra.Command, sf *storeFlags, cmdName string, refs, instr []string) (*cliSession, func(), error) {
	ctx := e.ctx
	svc, p, closeFn, err := sf.openServices(ctx, cmd)
	if err != nil {
		return nil, nil, err
	}
	if p != nil {
		ctx = trove.WithPrincipal(ctx, p)
	}
	cleanup := func() { closeFn() }
	fail := func(err error) (*cliSession, func(), error) {
		cleanup()
		return nil, nil, err
	}
	sessions, ok := svc.(trove.SessionService)
	if !ok {
		return fail(fmt.Errorf("%s: this backend cannot create sessions", cmdName))
	}
	names := make([]string, len(refs))
	access := make([]trove.Access, len(refs))
	for i, r := range refs {
		ref, ro, err := parseStoreRef(r)
		if err != nil {
			return fail(err)
		}
		names[i], access[i] = ref, trove.AccessReadWrite
		if ro {
			access[i] = trove.AccessReadOnly
		}
	}
	stores, _, err := resolveStores(ctx, svc, names)
	if err != nil {
		return fail(err)
	}
	attach := make([]trove.AttachStoreParams, len(stores))
	for i, st := range stores {
		attach[i] = trove.AttachStoreParams{StoreID: st.ID, Access: access[i]}
		if i < len(instr) {
			attach[i].Instructions = instr[i]
		}
	}
	sess, token, err := sessions.CreateSession(ctx, trove.CreateSessionParams{Stores: attach})
	if err != nil {
		return fail(err)
	}
	// The session ends whatever happens, even after the signal that stopped
	// the command.
	endCtx := context.WithoutCancel(ctx)
	cleanup = func() {
		if _, err := sessions.EndSession(endCtx, sess.ID); err != nil {
			fmt.Fprintf(e.stderr, "trove: ending session %s: %s\n", sess.ID, trove.ErrorMessage(err))
		}
		closeFn()
	}
	cs := &cliSession{Session: sess, Token: token, Services: svc}
	if sf.url != "" {
		cs.Services = httpapi.NewClient(strings.TrimRight(sf.url, "/"), token)
		cs.Principal = &trove.Principal{WorkspaceID: sess.WorkspaceID, Actor: trove.Actor{Type: trove.ActorSession, SessionID: sess.ID}}
	} else {
		auth, ok := svc.(trove.Authenticator)
		if !ok {
			return fail(fmt.Errorf("%s: this backend cannot authenticate session tokens", cmdName))
		}
		if cs.Principal, err = auth.Authenticate(ctx, token); err != nil {
			return fail(err)
		}
	}
	cs.Ctx = trove.WithPrincipal(ctx, cs.Principal)
	return cs, cleanup, nil
}

func runSession(e *env, cmd *cobra.Command, sf *storeFlags, refs, instr []string, root, state string, interval time.Duration, verbose bool, args []string, mnt mounter) error {
	sess, end, err := startSession(e, cmd, sf, "session run", refs, instr)
	if err != nil {
		return err
	}
	defer end()

	if root == "" {
		root = filepath.Join(os.TempDir(), "trove-"+sess.ID)
	}
	if root, err = filepath.Abs(root); err != nil {
		return err
	}
	if state == "" {
		state = filepath.Join(stateHome(), "trove", "sessions", sess.ID)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("session run: cannot create %s: %w", root, err)
	}
	log := cliLogger(e.stderr, verbose)
	var mounts []mount
	defer func() {
		for _, m := range mounts {
			m.Close()
		}
	}()
	var dirs []string
	for _, ss := range sess.Stores {
		dir := filepath.Join(root, path.Base(ss.MountPath))
		if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
			return fmt.Errorf("session run: %s already exists and is not empty; remove it or choose another --root", dir)
		}
		m, err := mnt.Mount(sess.Ctx, mountSpec{
			Store: ss, Dir: dir, StateDir: filepath.Join(state, ss.StoreID), SessionID: sess.ID,
			Services: sess.Services, Interval: interval, Logger: log,
		})
		if err != nil {
			return err
		}
		mounts = append(mounts, m)
		dirs = append(dirs, dir)
	}
	_, live := mnt.(fuseMounter)
	note := memoryNote(sess.Stores, dirs, trove.DefaultLimits().MaxContentBytes, live)
	if err := writeFileAtomic(filepath.Join(root, "MEMORY_STORES.md"), []byte(note), 0o644); err != nil {
		return fmt.Errorf("session run: writing the memory note: %w", err)
	}
	fmt.Fprintf(e.stderr, "trove: session %s: %d store(s) under %s\n", sess.ID, len(mounts), root)

	// Keep the stores in sync while CMD runs.
	runCtx, stopSync := context.WithCancel(sess.Ctx)
	var wg sync.WaitGroup
	for i, m := range mounts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Run(runCtx); err != nil {
				ss := sess.Stores[i]
				fmt.Fprintf(e.stderr, "trove: the last sync of %s failed (%s); its unsynced changes stay on disk. Resume with:\n  trove sync --store %s --dir %s --state %s --once\n",
					dirs[i], trove.ErrorMessage(err), ss.StoreID, dirs[i], filepath.Join(state, ss.StoreID))
			}
		}()
	}
	child := exec.CommandContext(e.ctx, args[0], args[1:]...)
	child.Stdin, child.Stdout, child.Stderr = e.stdin, e.stdout, e.stderr
	child.Env = sessionEnv(os.Environ(), sess.Token, sess.ID, root, note)
	child.Cancel = func() error { return child.Process.Signal(syscall.SIGTERM) }
	child.WaitDelay = 10 * time.Second
	runErr := child.Run()
	stopSync()
	wg.Wait() // final flush of every mount

	var xe *exec.ExitError
	switch {
	case runErr == nil:
		return nil
	case errors.As(runErr, &xe):
		code := xe.ExitCode()
		if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return &exitError{code: code, err: fmt.Errorf("%s exited with status %d", args[0], code)}
	default:
		return &exitError{code: 127, err: fmt.Errorf("cannot run %s: %w", args[0], runErr)}
	}
}

// sessionEnv is env with the session's variables set and any workspace
// credential removed.
func sessionEnv(env []string, token, sessionID, root, note string) []string {
	out := make([]string, 0, len(env)+4)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "TROVE_API_KEY", "TROVE_SESSION_ID", "TROVE_MEMORY_ROOT", "TROVE_MEMORY_PROMPT":
			continue
		}
		out = append(out, kv)
	}
	return append(out,
		"TROVE_API_KEY="+token,
		"TROVE_SESSION_ID="+sessionID,
		"TROVE_MEMORY_ROOT="+root,
		"TROVE_MEMORY_PROMPT="+note,
	)
}

// memoryNote renders the system-prompt note (sync spec §9.8) from the
// snapshotted attach fields, deterministically. live: the directories are
// FUSE mounts (fuseMounter), where the store refuses writes at close rather
// than at a later sync pass.
func memoryNote(stores []trove.SessionStore, dirs []string, maxBytes int, live bool) string {
	var b strings.Builder
	b.WriteString("# Memory\n")
	b.WriteString("Persistent memory stores are mounted as directories. Their contents survive\n")
	b.WriteString("this session. Read them before starting; record durable learnings there.\n")
	for i, s := range stores {
		fmt.Fprintf(&b, "- %q at %s/ (%s)\n", s.Name, dirs[i], s.Access)
		if s.Description != "" {
			fmt.Fprintf(&b, "  Description: %s\n", oneLine(s.Description))
		}
		if s.Instructions != "" {
			fmt.Fprintf(&b, "  Instructions: %s\n", oneLine(s.Instructions))
		}
	}
	parent := filepath.Dir(dirs[0])
	notices := filepath.Join(parent, noticesName)
	if live {
		fmt.Fprintf(&b, "Only files under a store directory are saved; other paths under %s/\n", parent)
		b.WriteString("are not. Each close of a written file saves it at once. Read-only stores refuse\n")
		b.WriteString("writes (EROFS).")
		fmt.Fprintf(&b, " Files must be UTF-8 text of at most %d kB (%d bytes): a refused\n", maxBytes/1024, maxBytes)
		b.WriteString("write (EFBIG: too large, EILSEQ: not UTF-8) fails at close or fsync and leaves\n")
		b.WriteString("the store unchanged (a refused new file disappears). Shells ignore errors of close,\n")
		b.WriteString("so check the result of close, or run `sync FILE` after writing: it fails for a\n")
		b.WriteString("refused file. If another writer changed a file since you opened it, close fails\n")
		b.WriteString("(ESTALE): the store keeps the other version and yours is saved next to it as\n")
		fmt.Fprintf(&b, "<name>.conflict-….md. Refusals are listed in %s.\n", notices)
		return b.String()
	}
	fmt.Fprintf(&b, "Only files under a store directory are saved; other paths under %s/\n", parent)
	b.WriteString("are not synced. Read-only stores are restored if changed.")
	fmt.Fprintf(&b, " Files must be UTF-8 text up to %d KB.\n", maxBytes/1024)
	b.WriteString("If a sync conflict occurs, the store keeps the other version and yours is saved\n")
	b.WriteString("next to it as <name>.conflict-….md.")
	fmt.Fprintf(&b, " Such events are listed in %s.\n", notices)
	return b.String()
}

// oneLine indents the continuation lines of a field so it stays under its
// bullet.
func oneLine(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
	return strings.ReplaceAll(s, "\n", "\n    ")
}
