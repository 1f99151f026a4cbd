package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/sessionrun"
	"github.com/trovehq/trove/syncer"
)

// sessionOpts are session run's flags and command.
type sessionOpts struct {
	refs, instr []string
	root, state string
	interval    time.Duration
	verbose     bool
	args        []string // CMD [ARGS…]
}

func newSessionRunCmd(e *env) *cobra.Command {
	var (
		sf   storeFlags
		o    sessionOpts
		mode string
	)
	cmd := &cobra.Command{
		Use:   "run --store NAME_OR_ID[:ro] [--store …] [--root DIR] -- CMD [ARGS…]",
		Short: "Run a command in a new session with stores synced as directories",
		Long: `sessions run (also trove session run) creates a session with the given stores attached (":ro" for
read-only), lays each out as <root>/<slug> from its mount path, downloads it,
writes the system-prompt note to <root>/MEMORY_STORES.md and TROVE_MEMORY_PROMPT,
and runs CMD with:

  TROVE_API_KEY        the session's own credential (never the workspace key)
  TROVE_SESSION_ID     the session ID
  TROVE_MEMORY_ROOT    the root directory
  TROVE_MEMORY_PROMPT  the note describing the stores

With --mount fuse (the default where FUSE works: on Linux /dev/fuse, and
root or fusermount3; on macOS macFUSE; never on Windows) each directory is a live FUSE mount: every close of a written
file is one version, and other writers' changes appear within a second.
With --mount copy (the default elsewhere) the directories are copies kept by
the sync engine: synced while CMD runs (file changes, and at least every
--interval) and flushed when it exits. Either way the session then ends,
writes are versions attributed to the session, and the exit code is CMD's.

When everything written reached the stores, the root (or, for an existing
--root, what the session created in it) and the sync state are removed.
Otherwise both are kept, and the message on standard error says where.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 {
				return usageError("sessions run: put the command after --, e.g. trove sessions run --store notes -- claude")
			}
			if len(o.refs) == 0 {
				return usageError("sessions run: give at least one --store")
			}
			mnt, err := chooseMounter(mode, e.stderr)
			if _, ok := errors.AsType[*exitError](err); ok {
				return err // FUSE asked for where there is none: exit 1
			} else if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			o.args = args
			return runSession(e, cmd, &sf, o, mnt)
		},
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&o.refs, "store", nil, "store name or ID to attach, :ro for read-only (repeatable)")
	f.StringArrayVar(&o.instr, "instructions", nil, "instructions for the store at the same position (repeatable)")
	f.StringVar(&o.root, "root", "", "directory holding one directory per store (default: a new directory under $TMPDIR)")
	f.StringVar(&o.state, "state", "", "state directory for sync manifests (default $XDG_STATE_HOME/trove/sessions/<session>)")
	f.DurationVar(&o.interval, "interval", syncer.DefaultInterval, "longest time between sync passes while CMD runs")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log every sync action")
	f.StringVar(&mode, "mount", "auto", "how stores appear as directories: fuse (live mount), copy (sync engine), or auto (fuse where it works)")
	return cmd
}

// chooseMounter picks the mounter for --mount: "fuse" and "copy" as named,
// "auto" FUSE where it works (fuseAvailable) and the copy engine
// otherwise. The copy engine's notable passes are reported on stderr.
func chooseMounter(mode string, stderr io.Writer) (sessionrun.Mounter, error) {
	copyMounter := sessionrun.CopyMounter{OnPass: func(ss trove.SessionStore, r *syncer.Report, err error) {
		if err != nil || len(r.Conflicts)+len(r.Errors)+len(r.Quarantined)+len(r.NewUnrepresentable) > 0 || r.Counts[syncer.KindRefuse] > 0 {
			fmt.Fprintf(stderr, "[trove %s] ", ss.Name)
			printReport(stderr, r, err, false)
		}
	}}
	switch mode {
	case "copy":
		return copyMounter, nil
	case "fuse":
		if why := fuseAvailable(); why != "" {
			return nil, &exitError{code: exitFailed, err: fmt.Errorf("sessions run: --mount fuse: FUSE is unavailable here (%s); use --mount copy", why)}
		}
		return sessionrun.FUSEMounter{}, nil
	case "auto", "":
		if fuseAvailable() == "" {
			return sessionrun.FUSEMounter{}, nil
		}
		return copyMounter, nil
	}
	return nil, fmt.Errorf("sessions run: --mount must be auto, fuse or copy, not %q", mode)
}

// cliSession is a session a command created, with what acts as it.
type cliSession struct {
	*trove.Session
	// Token is the session's own credential.
	Token string
	// ServerURL is the server the session lives on, "" for a local
	// database.
	ServerURL string
	// Services act with the session's credential: a client holding Token
	// for a server, the local services otherwise.
	Services trove.Services
	// Principal is the session's: authenticated from Token for a local
	// database; for a server it is not sent (the client carries the token)
	// and only names conflict copies.
	Principal *trove.Principal
	// Ctx is the command's context carrying Principal.
	Ctx context.Context
	// End ends the session with the credential that created it.
	End func(context.Context) error
}

// endOrReport ends the session with a context that survives the command's,
// and reports a failure on stderr.
func (cs *cliSession) endOrReport(ctx context.Context, stderr io.Writer) {
	if err := cs.End(context.WithoutCancel(ctx)); err != nil {
		fmt.Fprintf(stderr, "trove: ending session %s: %s\n", cs.ID, trove.ErrorMessage(err))
	}
}

// startSession opens the services sf chooses, resolves refs
// ("NAME_OR_ID[:ro]"), and creates a session with those stores attached,
// instr[i] (if any) as the instructions of the i-th. The caller ends the
// session (cs.End, which needs the services) and then calls the returned
// function, which closes the services. cmdName prefixes the errors of a
// backend without sessions.
func startSession(e *env, cmd *cobra.Command, sf *storeFlags, cmdName string, refs, instr []string) (*cliSession, func(), error) {
	k, err := openConn(e.ctx, cmd, sf)
	if err != nil {
		return nil, nil, err
	}
	ctx, svc := k.ctx, k.svc
	cleanup := func() { k.close() }
	fail := func(err error) (*cliSession, func(), error) {
		cleanup()
		return nil, nil, err
	}
	sessions, ok := svc.(trove.SessionService)
	if !ok {
		return fail(fmt.Errorf("%s: this backend cannot create sessions", cmdName))
	}
	attach, err := attachParams(ctx, svc, refs, instr)
	if err != nil {
		return fail(err)
	}
	sess, token, err := sessions.CreateSession(ctx, trove.CreateSessionParams{Stores: attach})
	if err != nil {
		return fail(err)
	}
	cs := &cliSession{Session: sess, Token: token, Services: svc}
	// The creator's principal ends the session; the context given to End
	// brings only cancellation and deadlines.
	endP := trove.PrincipalFrom(ctx)
	cs.End = func(ctx context.Context) error {
		if endP != nil {
			ctx = trove.WithPrincipal(ctx, endP)
		}
		_, err := sessions.EndSession(ctx, sess.ID)
		return err
	}
	fail = func(err error) (*cliSession, func(), error) {
		cs.endOrReport(ctx, e.stderr)
		cleanup()
		return nil, nil, err
	}
	if sf.t.remote() {
		cs.Services = httpapi.NewClient(sf.t.url, token)
		cs.ServerURL = sf.t.url
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

// attachParams resolves refs ("NAME_OR_ID[:ro]") to the stores a new
// session attaches, instr[i] (if any) as the instructions of the i-th.
func attachParams(ctx context.Context, svc trove.Services, refs, instr []string) ([]trove.AttachStoreParams, error) {
	names := make([]string, len(refs))
	access := make([]trove.Access, len(refs))
	for i, r := range refs {
		ref, ro, err := parseStoreRef(r)
		if err != nil {
			return nil, err
		}
		names[i], access[i] = ref, trove.AccessReadWrite
		if ro {
			access[i] = trove.AccessReadOnly
		}
	}
	stores, _, err := resolveStores(ctx, svc, names)
	if err != nil {
		return nil, err
	}
	attach := make([]trove.AttachStoreParams, len(stores))
	for i, st := range stores {
		attach[i] = trove.AttachStoreParams{StoreID: st.ID, Access: access[i]}
		if i < len(instr) {
			attach[i].Instructions = instr[i]
		}
	}
	return attach, nil
}

func runSession(e *env, cmd *cobra.Command, sf *storeFlags, o sessionOpts, mnt sessionrun.Mounter) error {
	sess, closeSvc, err := startSession(e, cmd, sf, "sessions run", o.refs, o.instr)
	if err != nil {
		return err
	}
	defer closeSvc()
	state := o.state
	if state == "" {
		state = filepath.Join(stateHome(), "trove", "sessions", sess.ID)
	}
	err = sessionrun.Run(e.ctx, sessionrun.Config{
		Session: sess.Session, Token: sess.Token, ServerURL: sess.ServerURL, Services: sess.Services, Principal: sess.Principal, End: sess.End,
		Mounter: mnt, Root: o.root, StateDir: state, Interval: o.interval, Logger: cliLogger(e.stderr, o.verbose),
		Command: o.args, Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr,
	})
	if xe, ok := errors.AsType[*sessionrun.ExitError](err); ok {
		return &exitError{code: xe.Code, err: xe.Err}
	}
	return err
}
