package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
)

// newSessionEventsCmd is trove sessions events: a session's transcript.
func newSessionEventsCmd(c *clientCmd) *cobra.Command {
	return &cobra.Command{
		Use:   "events SESSION",
		Short: "Show a session's transcript (its event log), oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withConn(cmd, func(k *conn) error {
				es, ok := k.svc.(trove.EventService)
				if !ok {
					return fmt.Errorf("this target has no session transcripts")
				}
				all, err := trove.AllItems(k.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.SessionEvent], error) {
					return es.ListEvents(ctx, args[0], trove.ListEventsParams{Limit: 100, Cursor: cursor})
				})
				if trove.ErrorCode(err) == trove.ENOTFOUND {
					return trove.Errorf(trove.ENOTFOUND, "no session %s (see trove sessions list)", args[0])
				}
				if err != nil {
					return err
				}
				if c.json() {
					data := make([]any, len(all))
					for i, e := range all {
						m := map[string]any{}
						_ = json.Unmarshal([]byte(e.Body), &m)
						m["id"], m["type"], m["processed_at"] = e.ID, e.Type, fmtTime(e.ProcessedAt)
						data[i] = m
					}
					return c.printJSON(map[string]any{"data": data, "next_page": nil})
				}
				rows := make([][]string, len(all))
				for i, e := range all {
					rows[i] = []string{fmtTime(e.ProcessedAt), e.Type, truncateText(e.Body, 120)}
				}
				return c.table([]string{"TIME", "TYPE", "EVENT"}, rows)
			})
		},
	}
}

// truncateText cuts s to n runes, marking the cut.
func truncateText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
