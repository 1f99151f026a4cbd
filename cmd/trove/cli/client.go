package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// clientCmd is what the client command groups (stores, memories, versions,
// sessions…) share: the target flags, -o, and the open connection. Every
// command works through trove.Services (and the other service
// interfaces), so it acts alike on a server and on a local database.
type clientCmd struct {
	e   *env
	sf  storeFlags
	out output
}

// group returns the parent command of a group, with the shared flags.
func (c *clientCmd) group(use, short, long string) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long + "\n\n" + targetRule + "\n\n" + exitCodesHelp, Args: cobra.NoArgs, RunE: helpRun}
	c.sf.registerPersistent(cmd)
	c.out.register(cmd.PersistentFlags())
	return cmd
}

// withConn checks -o, opens the target, runs f, and closes the target.
func (c *clientCmd) withConn(cmd *cobra.Command, f func(k *conn) error) error {
	if err := c.out.check(); err != nil {
		return err
	}
	return withConn(c.e.ctx, cmd, &c.sf, f)
}

// withStore is withConn with the store ref resolved for reading (archived
// stores included; see resolveStore).
func (c *clientCmd) withStore(cmd *cobra.Command, ref string, f func(k *conn, st *trove.Store) error) error {
	return c.withStoreFor(cmd, ref, readStore, f)
}

// withStoreFor is withConn with the store ref resolved for use.
func (c *clientCmd) withStoreFor(cmd *cobra.Command, ref string, use storeUse, f func(k *conn, st *trove.Store) error) error {
	return c.withConn(cmd, func(k *conn) error {
		st, err := k.store(ref, use)
		if err != nil {
			return err
		}
		return f(k, st)
	})
}

// json reports whether -o json was asked for.
func (c *clientCmd) json() bool { return c.out.json() }

// printJSON writes v as indented JSON.
func (c *clientCmd) printJSON(v any) error { return writeJSON(c.e.stdout, v) }

// table writes a header and rows, aligned.
func (c *clientCmd) table(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(c.e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// fields writes "name: value" lines, aligned.
func (c *clientCmd) fields(kv ...string) error {
	tw := tabwriter.NewWriter(c.e.stdout, 0, 4, 1, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], kv[i+1])
	}
	return tw.Flush()
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return fmtTime(*t)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// wirePage renders items as a page of the API's shapes with no next page
// (the CLI lists everything).
func wirePage[T any](items []T, conv func(T) any) any {
	data := make([]any, len(items))
	for i, it := range items {
		data[i] = conv(it)
	}
	return httpapi.WirePage(data, "")
}

// helpRun is the RunE of a command group: its help. Being runnable, the
// group gets its Args checked, so a mistyped subcommand is a usage error
// ("unknown command") rather than help and success.
func helpRun(cmd *cobra.Command, args []string) error { return cmd.Help() }

// parseMoment reads a moment flag or argument as trove.ParseMoment does
// in the local zone (a version ID, a version number, "now", a duration ago,
// a date, a local date and time or an RFC 3339 time), as a usage error when
// it is none of them. A time is echoed to w in UTC with how long ago it is
// ("as of 2026-12-02T02:52:50Z (2h ago)"), so that the user sees which
// moment was read.
func parseMoment(w io.Writer, flag, s string) (trove.Moment, error) {
	now := time.Now()
	m, err := trove.ParseMoment(s, now, time.Local)
	if err != nil {
		return m, usageError("%s: %s", flag, trove.ErrorMessage(err))
	}
	if m.Time != nil {
		label := map[string]string{"--as-of": "as of", "--since": "since", "FROM": "from", "TO": "to"}[flag]
		if label == "" {
			label = flag
		}
		fmt.Fprintf(w, "%s %s (%s)\n", label, m.Time.Format(time.RFC3339), ago(*m.Time, now))
	}
	return m, nil
}

// ago says how long before now t is, in its two largest units ("2h ago",
// "1d7h ago", "5m ago", "in 3m" for a time to come).
func ago(t, now time.Time) string {
	d := now.Sub(t).Round(time.Second)
	future := d < 0
	if future {
		d = -d
	}
	var parts []string
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}} {
		if n := d / u.d; n > 0 && len(parts) < 2 {
			parts = append(parts, strconv.FormatInt(int64(n), 10)+u.name)
			d -= n * u.d
		} else if len(parts) > 0 {
			break
		}
	}
	switch {
	case len(parts) == 0:
		return "now"
	case future:
		return "in " + strings.Join(parts, "")
	}
	return strings.Join(parts, "") + " ago"
}
