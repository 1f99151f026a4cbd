package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

func newDiffCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	cmd := c.group("diff STORE FROM [TO]", "Show what changed in a store between two moments",
		`diff compares a store at two moments: FROM, and TO (default: now). A moment
is a duration ago (5m, 2h ago, 3d), a date or a date and time in the local zone
(2026-11-30, 2026-11-30 12:00:00), an RFC 3339 time (2026-11-30T12:00:00Z), a
version ID (memver_…), a version number (the store's history is numbered 1, 2,
3…; see memories history) or "now"; a time is echoed to stderr in UTC. It lists the
memories added, removed, moved and changed, each with a unified diff of its
content; a side that was redacted shows no text. With -o json it prints
{"from_seq", "to_seq", "changes"}.`)
	cmd.Args = cobra.RangeArgs(2, 3)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		from, err := parseMoment(c.e.stderr, "FROM", args[1])
		if err != nil {
			return err
		}
		var to trove.Moment
		if len(args) == 3 {
			if to, err = parseMoment(c.e.stderr, "TO", args[2]); err != nil {
				return err
			}
		}
		return c.withStore(cmd, args[0], func(k *conn, st *trove.Store) error {
			h, err := k.history()
			if err != nil {
				return err
			}
			// The server pages a diff (bounded answers); the command shows it
			// whole.
			var d trove.StoreDiff // the first page's moments, with every page's changes
			changes, err := trove.AllItems(k.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryDiff], error) {
				q := trove.DiffParams{Limit: trove.MaxDiffPageSize, Cursor: cursor}
				if cursor == "" {
					q.From, q.To = from, to // a cursor pins the moments
				}
				pg, err := h.DiffStorePage(ctx, st.ID, q)
				if err != nil {
					return nil, err
				}
				if cursor == "" {
					d.FromSeq, d.ToSeq = pg.FromSeq, pg.ToSeq
				}
				return &trove.Page[trove.MemoryDiff]{Data: pg.Changes, NextPage: pg.NextPage}, nil
			})
			if err != nil {
				return err
			}
			d.Changes = changes
			if c.json() {
				return c.printJSON(httpapi.WireStoreDiff(&d))
			}
			if len(d.Changes) == 0 {
				fmt.Fprintf(c.e.stdout, "no changes in store %q between version %d and version %d\n", st.Name, d.FromSeq, d.ToSeq)
				return nil
			}
			fmt.Fprintf(c.e.stdout, "store %q from version %d to version %d: %d %s\n", st.Name, d.FromSeq, d.ToSeq, len(d.Changes), plural(len(d.Changes), "change", "changes"))
			for _, ch := range d.Changes {
				fmt.Fprintln(c.e.stdout, diffHeadline(ch))
				if ch.Patch != "" {
					fmt.Fprint(c.e.stdout, ch.Patch)
				}
			}
			return nil
		})
	}
	return cmd
}

// diffHeadline is one line naming a change: its kind, paths and memory.
func diffHeadline(ch trove.MemoryDiff) string {
	path := func(v *trove.MemoryVersion) string {
		if v == nil {
			return "-"
		}
		if v.Path == nil {
			return "(redacted)"
		}
		return *v.Path
	}
	var s string
	switch ch.Kind {
	case trove.DiffAdded:
		s = "added   " + path(ch.To)
	case trove.DiffRemoved:
		s = "removed " + path(ch.From)
	case trove.DiffMoved:
		s = "moved   " + path(ch.From) + " -> " + path(ch.To)
	default:
		s = "changed " + path(ch.To)
	}
	s += " (" + ch.MemoryID + ")"
	if ch.Redacted {
		s += ", redacted: no text shown"
	}
	return s
}
