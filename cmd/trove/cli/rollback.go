package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

func newRollbackCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	var sessionID, keyID, since string
	var dryRun, force bool
	cmd := c.group("rollback STORE (--session ID [--since MOMENT] | --key ID --since MOMENT) [--dry-run] [--force]",
		"Undo what one session or API key wrote to a store since a moment",
		rollbackLong)
	cmd.Args = cobra.ExactArgs(1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if (sessionID == "") == (keyID == "") {
			return usageError("name exactly one writer to roll back: --session ID or --key ID")
		}
		if since == "" && sessionID == "" {
			return usageError("--since is required with --key: the moment after which the writes are undone")
		}
		var at trove.Moment
		if since != "" {
			var err error
			if at, err = parseMoment(c.e.stderr, "--since", since); err != nil {
				return err
			}
		}
		return c.withStore(cmd, args[0], func(k *conn, st *trove.Store) error {
			h, err := k.history()
			if err != nil {
				return err
			}
			if since == "" {
				// A session wrote nothing before it started: undo all of it.
				if at, err = sessionStart(k, c.e.stderr, sessionID); err != nil {
					return err
				}
			}
			r, err := h.RollbackActor(k.ctx, st.ID, trove.RollbackParams{SessionID: sessionID, APIKeyID: keyID, Since: at, DryRun: dryRun, Force: force})
			if err != nil {
				return err
			}
			return c.reportRollback(st, r, dryRun, force)
		})
	}
	cmd.Flags().StringVar(&sessionID, "session", "", "the session whose writes to undo (sesn_…)")
	cmd.Flags().StringVar(&keyID, "key", "", "the API key whose writes to undo (apikey_…)")
	cmd.Flags().StringVar(&since, "since", "", "undo the writes after this moment (5m, 2h ago, 2026-11-30 12:00, RFC 3339, a version ID or number; default for --session: its start)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show the change set; write nothing")
	cmd.Flags().BoolVar(&force, "force", false, "roll back the rest when some memories conflict, leaving those as they are")
	return cmd
}

// rollbackLong is rollback's help text.
const rollbackLong = `rollback undoes every write one session (--session sesn_…) or API key
(--key apikey_…) made to STORE after --since (5m, 2h ago, 2026-11-30, 2026-11-30
12:00 in the local zone, an RFC 3339 time, a version ID or a version number;
for a session it defaults to the session's start): memories it created are
deleted, memories it deleted are restored (same memory ID), memories it changed
or moved go back to how they were just before its first change. Each undo is a new version by you: history is never
rewritten.

A memory that someone else changed after the session did is a conflict: it is
listed and the whole rollback is refused (exit 4) unless --force, which rolls
back everything else and leaves the conflicting memories as they are.
--dry-run shows the change set without writing anything, and exits as the real
run would (4 when it would be refused).`

// reportRollback prints r and returns the exit error of a rollback
// refused (or that a dry run says would be): exit 4.
func (c *clientCmd) reportRollback(st *trove.Store, r *trove.RollbackResult, dryRun, force bool) error {
	// A dry run exits as the real run would: 4 when it would be
	// refused.
	refused := !r.Applied && len(r.Conflicts) > 0 && (!dryRun || !force)
	if c.json() {
		if err := c.printJSON(httpapi.WireRollbackResult(r)); err != nil {
			return err
		}
	} else {
		c.printRollback(st, r, dryRun)
	}
	switch {
	case refused && dryRun:
		return &exitError{code: exitConflict, err: fmt.Errorf("dry run: the rollback would be refused: %d %s changed by someone else since (--force rolls back the rest)",
			len(r.Conflicts), plural(len(r.Conflicts), "memory was", "memories were"))}
	case refused:
		return &exitError{code: exitConflict, err: fmt.Errorf("rollback refused: %d %s changed by someone else since; nothing was written (--force rolls back the rest)",
			len(r.Conflicts), plural(len(r.Conflicts), "memory was", "memories were"))}
	}
	return nil
}

func (c *clientCmd) printRollback(st *trove.Store, r *trove.RollbackResult, dryRun bool) {
	w := c.e.stdout
	path := func(v *trove.MemoryVersion) string {
		if v == nil || v.Path == nil {
			return "-"
		}
		return *v.Path
	}
	// The totals count every change; the lists hold a page of them.
	n := max(r.ChangesTotal, len(r.Changes))
	switch {
	case len(r.Changes) == 0 && len(r.Conflicts) == 0:
		fmt.Fprintf(w, "nothing to roll back in store %q since version %d\n", st.Name, r.SinceSeq)
		return
	case dryRun:
		fmt.Fprintf(w, "dry run: would roll back %d %s in store %q since version %d\n", n, plural(n, "memory", "memories"), st.Name, r.SinceSeq)
	case r.Applied:
		fmt.Fprintf(w, "rolled back %d %s in store %q since version %d\n", n, plural(n, "memory", "memories"), st.Name, r.SinceSeq)
	default:
		fmt.Fprintf(w, "would roll back %d %s in store %q since version %d, but:\n", n, plural(n, "memory", "memories"), st.Name, r.SinceSeq)
	}
	for _, ch := range r.Changes {
		switch ch.Action {
		case trove.RollbackDelete:
			fmt.Fprintf(w, "  delete  %s (%s)\n", path(ch.Current), ch.MemoryID)
		case trove.RollbackRestore:
			fmt.Fprintf(w, "  restore %s (%s) from version %s\n", path(ch.Target), ch.MemoryID, ch.Target.ID)
		default:
			move := ""
			if path(ch.Current) != path(ch.Target) {
				move = path(ch.Current) + " -> "
			}
			fmt.Fprintf(w, "  revert  %s%s (%s) to version %s\n", move, path(ch.Target), ch.MemoryID, ch.Target.ID)
		}
	}
	for _, cf := range r.Conflicts {
		fmt.Fprintf(w, "  conflict %s (%s): %s\n", orDash(cf.Path), cf.MemoryID, cf.Reason)
	}
}

// sessionStart is the moment a session started, for rollback's --since,
// echoed to w as a moment typed would be.
func sessionStart(k *conn, w io.Writer, sessionID string) (trove.Moment, error) {
	ss, ok := k.svc.(trove.SessionService)
	if !ok {
		return trove.Moment{}, usageError("this target has no sessions: give --since")
	}
	se, err := ss.GetSession(k.ctx, sessionID)
	if err != nil {
		return trove.Moment{}, err
	}
	// Versions written in the same microsecond as the session's creation
	// are not before it: the moment is the microsecond before.
	t := se.CreatedAt.UTC().Truncate(time.Microsecond).Add(-time.Microsecond)
	fmt.Fprintf(w, "since %s, the start of session %s (%s)\n", se.CreatedAt.UTC().Format(time.RFC3339), se.ID, ago(se.CreatedAt, time.Now()))
	return trove.Moment{Time: &t}, nil
}
