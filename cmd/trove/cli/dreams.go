package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/dream"
	"github.com/trovehq/trove/httpapi"
)

func newDreamsCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	cmd := c.group("dreams", "Consolidate a store from sessions' transcripts: create, show, list, cancel, archive dreams and review their change sets",
		"A dream reads one memory store and the transcripts of 1 to 100 sessions, and writes a consolidated store: duplicates merged, contradictions resolved in favour of the newest evidence. By default the output is a new store and the input is left alone; review it with trove dreams diff, then point your sessions at it. The server runs dreams with the Anthropic API key it was started with (docs/dreams.md).")

	var storeRef, model, instructions string
	var sessionIDs []string
	var inPlace bool
	create := &cobra.Command{
		Use:   "create --store STORE --session SESSION [--session …] [--model MODEL] [--instructions TEXT] [--in-place]",
		Short: "Queue a dream; it starts pending and the server runs it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if storeRef == "" || len(sessionIDs) == 0 {
				return &exitError{code: exitUsage, err: withUsage(cmd, "dreams create: give --store and at least one --session")}
			}
			k, st, err := c.openStore(cmd, storeRef)
			if err != nil {
				return err
			}
			defer k.close()
			ds, err := k.dreams()
			if err != nil {
				return err
			}
			p := trove.CreateDreamParams{StoreID: st.ID, SessionIDs: sessionIDs, Model: model, Instructions: instructions}
			if inPlace {
				p.OutputBehavior, p.OutputStoreID = trove.OutputUpdateExisting, st.ID
			}
			d, err := ds.CreateDream(k.ctx, p)
			if err != nil {
				return err
			}
			return c.showDream(d)
		},
	}
	create.Flags().StringVar(&storeRef, "store", "", "the input store (name or ID)")
	create.Flags().StringArrayVar(&sessionIDs, "session", nil, "an input session ID (sesn_…); repeat for more (1 to 100)")
	create.Flags().StringVar(&model, "model", trove.ModelFromEnv(trove.DreamModelEnv, trove.DefaultDreamModel), "the model that runs the dream (env "+trove.DreamModelEnv+")")
	create.Flags().StringVar(&instructions, "instructions", "", "guidance for the dream, up to 4,096 characters")
	create.Flags().BoolVar(&inPlace, "in-place", false, "consolidate the input store itself (update_existing) instead of a new store")

	var wait time.Duration
	get := &cobra.Command{
		Use:   "get DREAM [--wait DURATION]",
		Short: "Show a dream: status, output store, usage, error",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withDream(cmd, func(k *conn, ds trove.DreamService) error {
				deadline := time.Now().Add(wait)
				for {
					d, err := ds.GetDream(k.ctx, args[0])
					if err != nil {
						return notFoundDream(err, args[0])
					}
					if wait <= 0 || d.Status.Terminal() {
						return c.showDream(d)
					}
					if time.Now().After(deadline) {
						c.showDream(d)
						return fmt.Errorf("dream %s is still %s after --wait %s", d.ID, d.Status, wait)
					}
					select {
					case <-k.ctx.Done():
						return k.ctx.Err()
					case <-time.After(200 * time.Millisecond):
					}
				}
			})
		},
	}
	get.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the dream to end (completed, failed or canceled); an error if it has not")

	var statuses []string
	var archived bool
	list := &cobra.Command{
		Use:   "list [--status STATUS …] [--archived]",
		Short: "List dreams, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withDream(cmd, func(k *conn, ds trove.DreamService) error {
				p := trove.ListDreamsParams{Limit: 100, IncludeArchived: archived}
				for _, s := range statuses {
					p.Statuses = append(p.Statuses, trove.DreamStatus(s))
				}
				var all []trove.Dream
				for {
					page, err := ds.ListDreams(k.ctx, p)
					if err != nil {
						return err
					}
					all = append(all, page.Data...)
					if page.NextPage == "" {
						break
					}
					p.Cursor = page.NextPage
				}
				if c.json() {
					return c.printJSON(wirePage(all, func(d trove.Dream) any { return httpapi.WireDream(&d) }))
				}
				rows := make([][]string, len(all))
				for i, d := range all {
					rows[i] = []string{d.ID, string(d.Status), d.InputStoreID, orDash(d.OutputStoreID), fmtTime(d.CreatedAt), fmtTimePtr(d.EndedAt)}
				}
				return c.table([]string{"ID", "STATUS", "INPUT", "OUTPUT", "CREATED", "ENDED"}, rows)
			})
		},
	}
	list.Flags().StringArrayVar(&statuses, "status", nil, "only dreams with this status (pending, running, completed, failed, canceled); repeatable")
	list.Flags().BoolVar(&archived, "archived", false, "include archived dreams")

	change := func(use, short string, f func(ds trove.DreamService, k *conn, id string) (*trove.Dream, error)) *cobra.Command {
		return &cobra.Command{
			Use:   use + " DREAM",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return c.withDream(cmd, func(k *conn, ds trove.DreamService) error {
					d, err := f(ds, k, args[0])
					if err != nil {
						return notFoundDream(err, args[0])
					}
					return c.showDream(d)
				})
			},
		}
	}
	cancel := change("cancel", "Cancel a pending or running dream (its output keeps what was written)",
		func(ds trove.DreamService, k *conn, id string) (*trove.Dream, error) {
			return ds.CancelDream(k.ctx, id)
		})
	archive := change("archive", "Archive a completed, failed or canceled dream (its output store stays)",
		func(ds trove.DreamService, k *conn, id string) (*trove.Dream, error) {
			return ds.ArchiveDream(k.ctx, id)
		})

	var stat bool
	diff := &cobra.Command{
		Use:   "diff DREAM [--stat]",
		Short: "Show a dream's change set: the input store against its output, as unified diffs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withDream(cmd, func(k *conn, ds trove.DreamService) error {
				d, err := ds.GetDream(k.ctx, args[0])
				if err != nil {
					return notFoundDream(err, args[0])
				}
				changes, err := dream.ChangeSet(k.ctx, k.svc, d)
				if err != nil {
					return err
				}
				if c.json() {
					out := make([]map[string]any, len(changes))
					for i, ch := range changes {
						out[i] = map[string]any{"path": ch.Path, "old": ch.Old, "new": ch.New}
					}
					return c.printJSON(map[string]any{"dream_id": d.ID, "changes": out})
				}
				if d.OutputStoreID == "" {
					fmt.Fprintf(c.e.stdout, "dream %s is %s and has no output store yet\n", d.ID, d.Status)
					return nil
				}
				for _, ch := range changes {
					kind, old, new := "modified", "", ""
					switch {
					case ch.Old == nil:
						kind, new = "added", *ch.New
					case ch.New == nil:
						kind, old = "removed", *ch.Old
					default:
						old, new = *ch.Old, *ch.New
					}
					if stat {
						fmt.Fprintf(c.e.stdout, "%-8s %s\n", kind, ch.Path)
						continue
					}
					oldLabel, newLabel := "input"+ch.Path, "output"+ch.Path
					if ch.Old == nil {
						oldLabel = "/dev/null"
					}
					if ch.New == nil {
						newLabel = "/dev/null"
					}
					fmt.Fprint(c.e.stdout, unifiedDiff(oldLabel, newLabel, old, new))
				}
				if len(changes) == 0 {
					fmt.Fprintf(c.e.stdout, "dream %s changed nothing\n", d.ID)
				}
				return nil
			})
		},
	}
	diff.Flags().BoolVar(&stat, "stat", false, "list the changed paths only")

	cmd.AddCommand(create, get, list, cancel, archive, diff)
	return cmd
}

// withDream opens the target and runs f with its dream service.
func (c *clientCmd) withDream(cmd *cobra.Command, f func(k *conn, ds trove.DreamService) error) error {
	k, err := c.open(cmd)
	if err != nil {
		return err
	}
	defer k.close()
	ds, err := k.dreams()
	if err != nil {
		return err
	}
	return f(k, ds)
}

// notFoundDream names the dream in a not-found error.
func notFoundDream(err error, id string) error {
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return trove.Errorf(trove.ENOTFOUND, "no dream %s (see trove dreams list)", id)
	}
	return err
}

// showDream prints one dream.
func (c *clientCmd) showDream(d *trove.Dream) error {
	if c.json() {
		return c.printJSON(httpapi.WireDream(d))
	}
	errText := "-"
	if d.Error != nil {
		errText = d.Error.Type + ": " + d.Error.Message
	}
	u := d.Usage
	return c.fields(
		"id", d.ID,
		"status", string(d.Status),
		"input store", d.InputStoreID,
		"sessions", strings.Join(d.SessionIDs, ", "),
		"output", d.OutputBehavior+" "+orDash(d.OutputStoreID),
		"model", d.Model,
		"session", orDash(d.SessionID),
		"usage", fmt.Sprintf("input %s, output %s, cache read %s, cache creation %s",
			strconv.FormatInt(u.InputTokens, 10), strconv.FormatInt(u.OutputTokens, 10),
			strconv.FormatInt(u.CacheReadInputTokens, 10), strconv.FormatInt(u.CacheCreationInputTokens, 10)),
		"error", errText,
		"created", fmtTime(d.CreatedAt),
		"ended", fmtTimePtr(d.EndedAt),
		"archived", fmtTimePtr(d.ArchivedAt),
	)
}
