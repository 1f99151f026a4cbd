package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

func (c *clientCmd) withWebhooks(cmd *cobra.Command, f func(k *conn, ws trove.WebhookService) error) error {
	return c.withConn(cmd, func(k *conn) error {
		ws, ok := k.svc.(trove.WebhookService)
		if !ok {
			return fmt.Errorf("this target has no webhooks")
		}
		return f(k, ws)
	})
}

func newWebhooksCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	cmd := c.group("webhooks", "Create, list, delete webhook endpoints, re-key them and read their delivery log",
		"A webhook endpoint receives the workspace's events (memory stores, sessions, agents, environments, and Trove's trove.memory.* for every memory change) as signed Standard Webhooks messages; see docs/webhooks.md.")
	cmd.AddCommand(c.webhooksCreateCmd(), c.webhooksListCmd(), c.webhooksDeleteCmd(), c.webhooksRekeyCmd(), c.webhooksDeliveriesCmd())
	return cmd
}

// webhooksCreateCmd is webhooks create.
func (c *clientCmd) webhooksCreateCmd() *cobra.Command {
	var name, description string
	var events []string
	create := &cobra.Command{
		Use:   "create ENDPOINT_URL --event TYPE [--event TYPE …] [--name NAME] [--description TEXT]",
		Short: "Create an endpoint; prints its signing secret once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(events) == 0 {
				return &exitError{code: exitUsage, err: withUsage(cmd, "webhooks create: give at least one --event (e.g. memory_store.created, trove.memory.updated)")}
			}
			return c.withWebhooks(cmd, func(k *conn, ws trove.WebhookService) error {
				h, secret, err := ws.CreateWebhook(k.ctx, trove.CreateWebhookParams{URL: args[0], EnabledEvents: events, Name: name, Description: description})
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(httpapi.WireWebhook(h, secret))
				}
				return c.fields("id", h.ID, "url", h.URL, "events", strings.Join(h.EnabledEvents, ", "),
					"signing secret", secret+"  (shown once: keep it)")
			})
		},
	}
	create.Flags().StringArrayVar(&events, "event", nil, "an event type to deliver (repeatable)")
	create.Flags().StringVar(&name, "name", "", "a short label")
	create.Flags().StringVar(&description, "description", "", "notes")
	return create
}

// webhooksListCmd is webhooks list.
func (c *clientCmd) webhooksListCmd() *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "List the workspace's endpoints, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withWebhooks(cmd, func(k *conn, ws trove.WebhookService) error {
				page, err := ws.ListWebhooks(k.ctx, trove.ListWebhooksParams{Limit: trove.MaxWebhooksPerWorkspace})
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(wirePage(page.Data, func(h trove.Webhook) any { return httpapi.WireWebhook(&h, "") }))
				}
				rows := make([][]string, len(page.Data))
				for i, h := range page.Data {
					rows[i] = []string{h.ID, h.URL, string(h.State), strings.Join(h.EnabledEvents, ","), fmtTime(h.CreatedAt)}
				}
				return c.table([]string{"ID", "URL", "STATE", "EVENTS", "CREATED"}, rows)
			})
		},
	}
	return list
}

// webhooksDeleteCmd is webhooks delete.
func (c *clientCmd) webhooksDeleteCmd() *cobra.Command {
	del := &cobra.Command{
		Use:   "delete WEBHOOK",
		Short: "Delete an endpoint with its queued deliveries",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withWebhooks(cmd, func(k *conn, ws trove.WebhookService) error {
				if err := ws.DeleteWebhook(k.ctx, args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(c.e.stdout, "deleted %s\n", args[0])
				return err
			})
		},
	}
	return del
}

// webhooksRekeyCmd is webhooks regenerate-secret.
func (c *clientCmd) webhooksRekeyCmd() *cobra.Command {
	rekey := &cobra.Command{
		Use:   "regenerate-secret WEBHOOK",
		Short: "Replace an endpoint's signing secret (the old one stops at once); prints the new one",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withWebhooks(cmd, func(k *conn, ws trove.WebhookService) error {
				secret, err := ws.RegenerateWebhookSecret(k.ctx, args[0])
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(c.e.stdout, secret)
				return err
			})
		},
	}
	return rekey
}

// webhooksDeliveriesCmd is webhooks deliveries.
func (c *clientCmd) webhooksDeliveriesCmd() *cobra.Command {
	var limit int
	deliveries := &cobra.Command{
		Use:   "deliveries WEBHOOK [--limit N]",
		Short: "Show an endpoint's most recent deliveries: status, attempts, last error",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > 100 {
				return &exitError{code: exitUsage, err: withUsage(cmd, "webhooks deliveries: --limit must be 1 to 100")}
			}
			return c.withWebhooks(cmd, func(k *conn, ws trove.WebhookService) error {
				page, err := ws.ListWebhookDeliveries(k.ctx, args[0], trove.ListDeliveriesParams{Limit: limit})
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(wirePage(page.Data, func(d trove.WebhookDelivery) any { return httpapi.WireDeliveryOf(&d) }))
				}
				rows := make([][]string, len(page.Data))
				for i, d := range page.Data {
					status := ""
					if d.LastStatus != 0 {
						status = strconv.Itoa(d.LastStatus)
					}
					rows[i] = []string{d.EventID, d.EventType, string(d.Status), strconv.Itoa(d.Attempts), fmtTime(d.CreatedAt), orDash(status), orDash(d.LastError)}
				}
				return c.table([]string{"EVENT", "TYPE", "STATUS", "ATTEMPTS", "QUEUED", "LAST HTTP", "LAST ERROR"}, rows)
			})
		},
	}
	deliveries.Flags().IntVar(&limit, "limit", 20, "how many deliveries, newest first (1-100)")
	return deliveries
}
