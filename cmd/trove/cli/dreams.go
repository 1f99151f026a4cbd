package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/dreamdiff"
	"github.com/trovehq/trove/httpapi"
)

func newDreamsCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	cmd := c.group("dreams", "Consolidate a store from sessions' transcripts: create, show, list, cancel, archive dreams and review their change sets",
		"A dream reads one memory store and the transcripts of 1 to 100 sessions, and writes a consolidated store: duplicates merged, contradictions resolved in favour of the newest evidence. By default the output is a new store and the input is left alone; review it with trove dreams diff, then point your sessions at it. The server runs dreams with the Anthropic API key it was started with (docs/dreams.md).")
	cmd.AddCommand(c.dreamsCreateCmd(), c.dreamsGetCmd(), c.dreamsListCmd(),
		c.dreamChangeCmd("cancel", "Cancel a pending or running dream (its output keeps what was written)", trove.DreamService.CancelDream),
		c.dreamChangeCmd("archive", "Archive a completed, failed or canceled dream (its output store stays)", trove.DreamService.ArchiveDream),
		c.dreamsDiffCmd())
	return cmd
}

// dreamsCreateFlags are dreams create's flags.
type dreamsCreateFlags struct {
	storeRef, model, instructions string
	sessionIDs                    []string
	inPlace                       bool
	wait                          time.Duration
}

func (c *clientCmd) dreamsCreateCmd() *cobra.Command {
	var f dreamsCreateFlags
	cmd := &cobra.Command{
		Use:   "create --store STORE --session SESSION [--session …] [--model MODEL] [--instructions TEXT] [--in-place] [--wait DURATION]",
		Short: "Queue a dream; it starts pending and the server runs it (--wait: until it ends)",
		Long: `create queues a dream; the server runs it with its Anthropic API key. When the
server says it has none (trove serve without --anthropic-api-key or
ANTHROPIC_API_KEY), create warns on standard error: the dream will fail with
model_not_configured. With --wait it then waits up to that long for the dream
to end, like trove dreams get --wait, and exits 1 if it failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.storeRef == "" || len(f.sessionIDs) == 0 {
				return commandUsageError(cmd, "dreams create: give --store and at least one --session")
			}
			return c.withStore(cmd, f.storeRef, func(k *conn, st *trove.Store) error {
				ds, err := k.dreams()
				if err != nil {
					return err
				}
				p := trove.CreateDreamParams{StoreID: st.ID, SessionIDs: f.sessionIDs, Model: f.model, Instructions: f.instructions}
				if f.inPlace {
					p.OutputBehavior, p.OutputStoreID = trove.OutputUpdateExisting, st.ID
				}
				d, err := ds.CreateDream(k.ctx, p)
				if err != nil {
					return err
				}
				c.warnNoModel(k, d)
				if f.wait <= 0 {
					return c.showDream(d)
				}
				return c.waitDream(k, ds, d.ID, f.wait, true)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.storeRef, "store", "", "the input store (name or ID)")
	fl.StringArrayVar(&f.sessionIDs, "session", nil, "an input session ID (sesn_…); repeat for more (1 to 100)")
	fl.StringVar(&f.model, "model", trove.ModelFromEnv(trove.DreamModelEnv, trove.DefaultDreamModel), "the model that runs the dream (env "+trove.DreamModelEnv+")")
	fl.StringVar(&f.instructions, "instructions", "", "guidance for the dream, up to 4,096 characters")
	fl.BoolVar(&f.inPlace, "in-place", false, "consolidate the input store itself (update_existing) instead of a new store")
	fl.DurationVar(&f.wait, "wait", 0, "wait up to this long for the dream to end; exit 1 if it failed or has not ended")
	return cmd
}

// warnNoModel warns on stderr when the target is a server that runs dreams
// without a model key (its /healthz says so): d will fail.
func (c *clientCmd) warnNoModel(k *conn, d *trove.Dream) {
	if !k.t.remote() || serverDreamRunner(k.ctx, k.t.url) != httpapi.DreamRunnerNoModel {
		return
	}
	fmt.Fprintf(c.e.stderr, "trove: warning: the server %s has no Anthropic API key, so dream %s will fail with model_not_configured; restart trove serve with --anthropic-api-key or ANTHROPIC_API_KEY (docs/dreams.md)\n", k.t.url, d.ID)
}

// serverDreamRunner is the "dreams" field of the server's /healthz, or ""
// when it has none or does not answer.
func serverDreamRunner(ctx context.Context, base string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return ""
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	var h struct {
		Dreams string `json:"dreams"`
	}
	if json.NewDecoder(io.LimitReader(res.Body, 1<<16)).Decode(&h) != nil {
		return ""
	}
	return h.Dreams
}

// waitDream polls the dream id until it ends or wait passes, then shows
// it. Not ended by then is an error; with failIfFailed, so is a dream that
// failed.
func (c *clientCmd) waitDream(k *conn, ds trove.DreamService, id string, wait time.Duration, failIfFailed bool) error {
	deadline := time.Now().Add(wait)
	for {
		d, err := ds.GetDream(k.ctx, id)
		if err != nil {
			return notFoundDream(err, id)
		}
		if d.Status.Terminal() {
			if err := c.showDream(d); err != nil {
				return err
			}
			if failIfFailed && d.Status == trove.DreamFailed {
				return fmt.Errorf("dream %s failed: %s", d.ID, dreamErrorText(d))
			}
			return nil
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
}

func (c *clientCmd) dreamsGetCmd() *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "get DREAM [--wait DURATION]",
		Short: "Show a dream: status, output store, usage, error",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withDream(cmd, func(k *conn, ds trove.DreamService) error {
				return c.waitDream(k, ds, args[0], wait, false)
			})
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the dream to end (completed, failed or canceled); an error if it has not")
	return cmd
}

func (c *clientCmd) dreamsListCmd() *cobra.Command {
	var statuses []string
	var archived bool
	cmd := &cobra.Command{
		Use:     "list [--status STATUS …] [--archived]",
		Aliases: []string{"ls"},
		Short:   "List dreams, newest first",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withDream(cmd, func(k *conn, ds trove.DreamService) error {
				p := trove.ListDreamsParams{Limit: 100, IncludeArchived: archived}
				for _, s := range statuses {
					p.Statuses = append(p.Statuses, trove.DreamStatus(s))
				}
				all, err := trove.AllItems(k.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.Dream], error) {
					p.Cursor = cursor
					return ds.ListDreams(ctx, p)
				})
				if err != nil {
					return err
				}
				return c.dreamTable(all)
			})
		},
	}
	cmd.Flags().StringArrayVar(&statuses, "status", nil, "only dreams with this status (pending, running, completed, failed, canceled); repeatable")
	cmd.Flags().BoolVar(&archived, "archived", false, "include archived dreams")
	return cmd
}

// dreamTable prints dreams as a table, or a page of their JSON.
func (c *clientCmd) dreamTable(all []trove.Dream) error {
	if c.json() {
		return c.printJSON(wirePage(all, func(d trove.Dream) any { return httpapi.WireDream(&d) }))
	}
	rows := make([][]string, len(all))
	for i, d := range all {
		rows[i] = []string{d.ID, string(d.Status), d.InputStoreID, orDash(d.OutputStoreID), fmtTime(d.CreatedAt), fmtTimePtr(d.EndedAt)}
	}
	return c.table([]string{"ID", "STATUS", "INPUT", "OUTPUT", "CREATED", "ENDED"}, rows)
}

// dreamChangeCmd is a subcommand that changes one dream through f and
// shows it.
func (c *clientCmd) dreamChangeCmd(use, short string, f func(ds trove.DreamService, ctx context.Context, id string) (*trove.Dream, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use + " DREAM",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withDream(cmd, func(k *conn, ds trove.DreamService) error {
				d, err := f(ds, k.ctx, args[0])
				if err != nil {
					return notFoundDream(err, args[0])
				}
				return c.showDream(d)
			})
		},
	}
}

func (c *clientCmd) dreamsDiffCmd() *cobra.Command {
	var stat bool
	cmd := &cobra.Command{
		Use:   "diff DREAM [--stat]",
		Short: "Show a dream's change set: the input store against its output, as unified diffs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withDream(cmd, func(k *conn, ds trove.DreamService) error {
				d, err := ds.GetDream(k.ctx, args[0])
				if err != nil {
					return notFoundDream(err, args[0])
				}
				changes, err := dreamdiff.ChangeSet(k.ctx, k.svc, d)
				if err != nil {
					return err
				}
				return c.printChangeSet(d, changes, stat)
			})
		},
	}
	cmd.Flags().BoolVar(&stat, "stat", false, "list the changed paths only")
	return cmd
}

// printChangeSet prints a dream's change set as unified diffs (with stat,
// one line per path), or its JSON.
func (c *clientCmd) printChangeSet(d *trove.Dream, changes []dreamdiff.Change, stat bool) error {
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
}

// withDream is withConn with the target's dream service.
func (c *clientCmd) withDream(cmd *cobra.Command, f func(k *conn, ds trove.DreamService) error) error {
	return c.withConn(cmd, func(k *conn) error {
		ds, err := k.dreams()
		if err != nil {
			return err
		}
		return f(k, ds)
	})
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
	errText := dreamErrorText(d)
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

// dreamErrorText is "type: message" of a dream's error, or "-".
func dreamErrorText(d *trove.Dream) string {
	if d.Error == nil {
		return "-"
	}
	return d.Error.Type + ": " + d.Error.Message
}
