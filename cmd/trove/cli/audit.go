package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

func newAuditCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	cmd := c.group("audit", "Check that a store's history has not been altered",
		`Every memory version carries a hash chaining it to the previous version of
its store (over its IDs, path, content hash, operation, author, time and
number). audit verify recomputes the chain.`)
	verify := &cobra.Command{
		Use:   "verify STORE",
		Short: "Recompute a store's hash chain and report the first break",
		Long: `verify recomputes every version's hashes in the order of the store's history
and reports the first version where they do not hold, and what differs (exit
1). Versions deleted by retention leave gaps, which are listed; the check
restarts after each. The head printed is the chain's newest hash: keep it
elsewhere to detect a rewrite of the whole history later.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withStore(cmd, args[0], func(k *conn, st *trove.Store) error {
				h, err := k.history()
				if err != nil {
					return err
				}
				rep, err := h.VerifyStore(k.ctx, st.ID)
				if err != nil {
					return err
				}
				if c.json() {
					if err := c.printJSON(httpapi.WireAuditReport(rep)); err != nil {
						return err
					}
				} else {
					w := c.e.stdout
					fmt.Fprintf(w, "store %q (%s): %d %s checked, newest %d\n", st.Name, st.ID, rep.Verified, plural(rep.Verified, "version", "versions"), rep.HeadSeq)
					if rep.Redacted > 0 {
						fmt.Fprintf(w, "  %d redacted (their recorded hashes are kept and checked in the chain)\n", rep.Redacted)
					}
					if rep.Unchained > 0 {
						fmt.Fprintf(w, "  %d written before the hash chain existed (not covered)\n", rep.Unchained)
					}
					for _, g := range rep.Gaps {
						fmt.Fprintf(w, "  versions %d to %d absent (deleted by retention); the chain is checked again from the next one\n", g[0], g[1])
					}
					if rep.OK {
						fmt.Fprintf(w, "ok: the history is intact; head %s\n", orDash(rep.Head))
					}
				}
				if !rep.OK {
					return fmt.Errorf("the history of store %q is broken at version %s (number %d): %s", st.Name, rep.Break.VersionID, rep.Break.Seq, rep.Break.Problem)
				}
				return nil
			})
		},
	}
	cmd.AddCommand(verify)
	return cmd
}
