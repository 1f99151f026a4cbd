package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/sessionrun"
	"github.com/trovehq/trove/syncer"
)

// syncFlags are sync's flags.
type syncFlags struct {
	sf              storeFlags
	store, dir      string
	state           string
	interval, grace time.Duration
	once, verbose   bool
	maxDel          int
}

func newSyncCmd(e *env) *cobra.Command {
	var o syncFlags
	cmd := &cobra.Command{
		Use:   "sync --store NAME_OR_ID[:ro] --dir DIR",
		Short: "Keep a local directory and a memory store in sync",
		Long: `sync keeps DIR and a memory store in sync, without ever losing data.

Changes made on one side reach the other. When a file changed on both sides,
a clean line merge is pushed when possible; otherwise the store keeps its
version and the local bytes are saved next to it as
<name>.conflict-local-<UTC time><ext>, locally and in the store. A local
delete reaches the store only after the file stayed gone for 30 s (at most a
few deletes per pass). Files the store cannot accept (over 100 kB, not UTF-8,
illegal paths) stay local and are reported. Memories whose path cannot be a
local file (a name over 255 bytes) stay in the store only and are reported;
--once then exits with status 1. With ":ro" nothing is uploaded and local
changes are moved to the state directory's quarantine. Conflicts, refusals
and such paths are also appended to SYNC_NOTICES.md in the state directory.

The store is on the server or database every client command uses (see
trove status): --url or --data, TROVE_URL or TROVE_DATA, or trove login. The last agreed state lives in --state (outside DIR): keep it
to resume after a crash without re-uploading or duplicating anything.

Runs until SIGINT/SIGTERM, then makes a final pass. --once makes one pass
(deletes are not delayed) and exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.store == "" || o.dir == "" {
				return usageError("sync: --store and --dir are required")
			}
			ref, readOnly, err := parseStoreRef(o.store)
			if err != nil {
				return err
			}
			return withStore(e.ctx, cmd, &o.sf, ref, writeStore, func(k *conn, st *trove.Store) error {
				return runSync(e, k, st, &o, readOnly)
			})
		},
	}
	o.sf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&o.store, "store", "", "store name or ID; append :ro to never upload (read-only)")
	f.StringVar(&o.dir, "dir", "", "the local directory to sync (created if missing)")
	f.StringVar(&o.state, "state", "", "state directory for the manifest and base copies, outside --dir (default $XDG_STATE_HOME/trove/sync/<store>-<dir hash>)")
	f.DurationVar(&o.interval, "interval", syncer.DefaultInterval, "longest time between passes while the store's change feed or file watching is unavailable (store and file changes trigger passes at once); negative: only on changes")
	f.BoolVar(&o.once, "once", false, "make one pass and exit")
	f.DurationVar(&o.grace, "delete-grace", syncer.DefaultDeleteGrace, "how long a deleted local file must stay gone before its memory is deleted")
	f.IntVar(&o.maxDel, "max-deletes", 0, "memories deleted per pass at most (0: a quarter of the files, 8 to 50; negative: never delete from the store)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log every action")
	return cmd
}

// runSync syncs o.dir with the store st of k: one pass with o.once, else
// until the command's context ends.
func runSync(e *env, k *conn, st *trove.Store, o *syncFlags, readOnly bool) error {
	absDir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	state := o.state
	if state == "" {
		state = defaultSyncState(st.ID, absDir)
	}
	notices := sessionrun.NewNotices(filepath.Join(state, sessionrun.NoticesName))
	report := func(r *syncer.Report, err error, always bool) {
		printReport(e.stderr, r, err, always)
		notices.Pass(st.Name, r)
	}
	eng, err := syncer.New(syncer.Options{
		Services: k.svc, StoreID: st.ID, Dir: absDir, StateDir: state, ReadOnly: readOnly,
		Interval: o.interval, Logger: cliLogger(e.stderr, o.verbose),
		DeleteGrace: o.grace, MaxDeletes: o.maxDel,
		OnPass: func(r *syncer.Report, err error) { report(r, err, false) },
	})
	if err != nil {
		return err
	}
	defer eng.Close()
	mode := trove.AccessReadWrite
	if readOnly {
		mode = trove.AccessReadOnly
	}
	fmt.Fprintf(e.stderr, "syncing %s with store %q (%s, %s); state in %s\n", absDir, st.Name, st.ID, mode, state)
	if o.once {
		rep, err := eng.Flush(k.ctx)
		report(rep, err, true)
		if err == nil && rep != nil && len(rep.Unrepresentable) > 0 {
			return &exitError{code: exitFailed, err: fmt.Errorf("sync: %d store paths cannot be local files and were not synced (listed in %s)", len(rep.Unrepresentable), notices.Path())}
		}
		return err
	}
	if err := eng.Run(k.ctx); err != nil && k.ctx.Err() == nil {
		return err
	}
	return nil
}

// parseStoreRef splits "NAME_OR_ID[:ro|:rw]".
func parseStoreRef(s string) (ref string, readOnly bool, err error) {
	ref = s
	if i := strings.LastIndex(s, ":"); i >= 0 {
		switch s[i+1:] {
		case "ro":
			ref, readOnly = s[:i], true
		case "rw":
			ref = s[:i]
		}
	}
	if ref == "" {
		return "", false, &exitError{code: exitUsage, err: fmt.Errorf("empty store name in %q", s)}
	}
	return ref, readOnly, nil
}

// defaultSyncState is $XDG_STATE_HOME/trove/sync/<store>-<hash of dir>, or
// ~/.local/state/… when XDG_STATE_HOME is unset.
func defaultSyncState(storeID, absDir string) string {
	h := sha256.Sum256([]byte(absDir))
	return filepath.Join(stateHome(), "trove", "sync", storeID+"-"+hex.EncodeToString(h[:4]))
}

func stateHome() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return d
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state")
	}
	return os.TempDir()
}

func cliLogger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// printReport writes a one-line summary of a pass that did something (or
// always, with always), then its conflicts, refusals and failures.
func printReport(w io.Writer, r *syncer.Report, err error, always bool) {
	if err != nil {
		fmt.Fprintf(w, "sync failed: %s\n", trove.ErrorMessage(err))
	}
	if r == nil {
		return
	}
	var parts []string
	for k, n := range r.Counts {
		if n > 0 && k != syncer.KindMarkAbsent {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	sort.Strings(parts)
	if len(r.PendingDeletes) > 0 {
		parts = append(parts, count(len(r.PendingDeletes), "delete", "deletes")+" waiting")
	}
	did := len(parts) > 0
	if did || always {
		if !did {
			parts = []string{"nothing to do"}
		}
		fmt.Fprintf(w, "sync: %s\n", strings.Join(parts, ", "))
	}
	for _, c := range r.Conflicts {
		where := "locally only"
		if c.InStore {
			where = "locally and in the store"
		}
		fmt.Fprintf(w, "conflict: %s changed on both sides; the store's version was kept, yours is saved as %s (%s)\n", c.Path, c.CopyPath, where)
	}
	if did || always {
		for _, p := range r.Refused {
			fmt.Fprintf(w, "not synced: %s: %s (kept locally)\n", p.Path, p.Reason)
		}
	}
	if always {
		for _, p := range r.Skipped {
			fmt.Fprintf(w, "skipped: %s: %s\n", p.Path, p.Reason)
		}
	}
	for _, p := range r.Quarantined {
		fmt.Fprintf(w, "restored: %s: %s\n", p.Path, p.Reason)
	}
	unrep := r.NewUnrepresentable
	if always {
		unrep = r.Unrepresentable
	}
	for _, p := range unrep {
		fmt.Fprintf(w, "not synced here: %s: %s (kept in the store)\n", p.Path, p.Reason)
	}
	for _, p := range r.Errors {
		fmt.Fprintf(w, "will retry: %s: %s\n", p.Path, p.Reason)
	}
}
