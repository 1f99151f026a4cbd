package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// withEnvironments is withConn with the target's environment service.
func (c *clientCmd) withEnvironments(cmd *cobra.Command, f func(k *conn, es trove.EnvironmentService) error) error {
	return c.withConn(cmd, func(k *conn) error {
		es, ok := k.svc.(trove.EnvironmentService)
		if !ok {
			return fmt.Errorf("this target has no environments")
		}
		return f(k, es)
	})
}

func newEnvironmentsCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	cmd := c.group("environments", "Create, show, list, update, archive, delete self-hosted environments and manage their keys",
		"A self-hosted environment is a work queue: sessions in it are served by workers you run (trove worker, or the SDK's EnvironmentWorker) with the environment's key. Trove runs only self-hosted environments.")
	cmd.AddCommand(c.environmentsCreateCmd(), c.environmentsGetCmd(), c.environmentsListCmd(), c.environmentsUpdateCmd(),
		c.environmentsArchiveCmd(), c.environmentsDeleteCmd(), newEnvironmentKeysCmd(c))
	return cmd
}

func (c *clientCmd) environmentsCreateCmd() *cobra.Command {
	var name, description string
	var meta []string
	cmd := &cobra.Command{
		Use:   "create NAME [--description TEXT] [--metadata KEY=VALUE …]",
		Short: "Create a self-hosted environment (the name positional or as --name)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := nameArg(cmd, args, name)
			if err != nil {
				return err
			}
			md, err := parseMetadata(meta, false)
			if err != nil {
				return err
			}
			p := trove.CreateEnvironmentParams{Name: n}
			if cmd.Flags().Changed("description") {
				p.Description = &description
			}
			if len(md) > 0 {
				p.Metadata = map[string]string{}
				for k, v := range md {
					p.Metadata[k] = *v
				}
			}
			return c.withEnvironments(cmd, func(k *conn, es trove.EnvironmentService) error {
				env, err := es.CreateEnvironment(k.ctx, p)
				if err != nil {
					return err
				}
				return c.showEnvironment(env)
			})
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the environment's name (or give it as NAME)")
	cmd.Flags().StringVar(&description, "description", "", "what the environment is")
	cmd.Flags().StringArrayVar(&meta, "metadata", nil, "KEY=VALUE metadata (repeatable)")
	return cmd
}

// environmentCmd is a subcommand acting on one environment (ENVIRONMENT)
// through do and showing the environment it returns.
func (c *clientCmd) environmentCmd(use, short string, do func(k *conn, es trove.EnvironmentService, id string) (*trove.Environment, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use + " ENVIRONMENT",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withEnvironments(cmd, func(k *conn, es trove.EnvironmentService) error {
				env, err := do(k, es, args[0])
				if err != nil {
					return err
				}
				return c.showEnvironment(env)
			})
		},
	}
}

func (c *clientCmd) environmentsGetCmd() *cobra.Command {
	return c.environmentCmd("get", "Show an environment", func(k *conn, es trove.EnvironmentService, id string) (*trove.Environment, error) {
		return es.GetEnvironment(k.ctx, id)
	})
}

func (c *clientCmd) environmentsListCmd() *cobra.Command {
	var archived bool
	cmd := &cobra.Command{
		Use:     "list [--archived]",
		Aliases: []string{"ls"},
		Short:   "List environments, newest first",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withEnvironments(cmd, func(k *conn, es trove.EnvironmentService) error {
				all, err := trove.AllItems(k.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.Environment], error) {
					return es.ListEnvironments(ctx, trove.ListEnvironmentsParams{Limit: 100, IncludeArchived: archived, Cursor: cursor})
				})
				if err != nil {
					return err
				}
				return c.environmentTable(all)
			})
		},
	}
	cmd.Flags().BoolVar(&archived, "archived", false, "include archived environments")
	return cmd
}

// environmentTable prints environments as a table, or a page of their JSON.
func (c *clientCmd) environmentTable(all []trove.Environment) error {
	if c.json() {
		return c.printJSON(wirePage(all, func(e trove.Environment) any { return httpapi.WireEnvironment(&e) }))
	}
	rows := make([][]string, len(all))
	for i, env := range all {
		rows[i] = []string{env.ID, env.Name, env.Type, fmtTime(env.CreatedAt), fmtTimePtr(env.ArchivedAt)}
	}
	return c.table([]string{"ID", "NAME", "TYPE", "CREATED", "ARCHIVED"}, rows)
}

func (c *clientCmd) environmentsUpdateCmd() *cobra.Command {
	var name, description string
	var meta []string
	cmd := &cobra.Command{
		Use:   "update ENVIRONMENT [--name NAME] [--description TEXT] [--metadata KEY=VALUE | KEY= …]",
		Short: "Rename an environment, change its description or metadata (KEY= removes a key)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var p trove.UpdateEnvironmentParams
			if cmd.Flags().Changed("name") {
				p.Name = &name
			}
			if cmd.Flags().Changed("description") {
				p.Description = &description
			}
			md, err := parseMetadata(meta, true)
			if err != nil {
				return err
			}
			if len(md) > 0 {
				p.Metadata = md
			}
			if p.Name == nil && p.Description == nil && p.Metadata == nil {
				return commandUsageError(cmd, "environments update: nothing to change: give --name, --description or --metadata")
			}
			return c.withEnvironments(cmd, func(k *conn, es trove.EnvironmentService) error {
				env, err := es.UpdateEnvironment(k.ctx, args[0], p)
				if err != nil {
					return err
				}
				return c.showEnvironment(env)
			})
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "a new name")
	cmd.Flags().StringVar(&description, "description", "", "a new description")
	cmd.Flags().StringArrayVar(&meta, "metadata", nil, "KEY=VALUE sets a key, KEY= removes it (repeatable)")
	return cmd
}

func (c *clientCmd) environmentsArchiveCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "archive ENVIRONMENT --yes",
		Short: "Archive an environment (one-way; asks first): no new sessions, no new keys",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withEnvironments(cmd, func(k *conn, es trove.EnvironmentService) error {
				env, err := es.GetEnvironment(k.ctx, args[0])
				if err != nil {
					return err
				}
				if err := confirm(c.e, cmd, yes, fmt.Sprintf("archiving environment %q (%s) is one-way: no new sessions, no new keys", env.Name, env.ID)); err != nil {
					return err
				}
				if env, err = es.ArchiveEnvironment(k.ctx, env.ID); err != nil {
					return err
				}
				return c.showEnvironment(env)
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "confirm the archiving (needed without a terminal)")
	return cmd
}

func (c *clientCmd) environmentsDeleteCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete ENVIRONMENT --yes",
		Short: "Delete an environment with its keys (refused while it has work that is not stopped; asks first)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withEnvironments(cmd, func(k *conn, es trove.EnvironmentService) error {
				env, err := es.GetEnvironment(k.ctx, args[0])
				if err != nil {
					return err
				}
				if err := confirm(c.e, cmd, yes, fmt.Sprintf("deleting environment %q (%s) removes it and its keys for good", env.Name, env.ID)); err != nil {
					return err
				}
				if err := es.DeleteEnvironment(k.ctx, env.ID); err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(httpapi.WireDeleted(env.ID, "environment_deleted"))
				}
				fmt.Fprintf(c.e.stdout, "deleted environment %s\n", env.ID)
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "confirm the deletion (needed without a terminal)")
	return cmd
}

func newEnvironmentKeysCmd(c *clientCmd) *cobra.Command {
	keys := &cobra.Command{Use: "keys", Short: "Mint, list and revoke an environment's keys (its workers' credential)", Args: cobra.NoArgs, RunE: helpRun}
	keys.AddCommand(c.environmentKeysCreateCmd(), c.environmentKeysListCmd(), c.environmentKeysRevokeCmd())
	return keys
}

func (c *clientCmd) environmentKeysCreateCmd() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "create ENVIRONMENT [--name NAME]",
		Short: "Mint an environment key; the secret is printed alone on the last line, once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withEnvironments(cmd, func(k *conn, es trove.EnvironmentService) error {
				key, secret, err := es.CreateEnvironmentKey(k.ctx, args[0], name)
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(httpapi.WireEnvironmentKey(key, secret))
				}
				fmt.Fprintf(c.e.stdout, "created environment key %s for %s\n%s\n", key.ID, key.EnvironmentID, secret)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "a name to tell keys apart")
	return cmd
}

func (c *clientCmd) environmentKeysListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list ENVIRONMENT",
		Aliases: []string{"ls"},
		Short:   "List an environment's keys (never their secrets)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withEnvironments(cmd, func(k *conn, es trove.EnvironmentService) error {
				ks, err := es.ListEnvironmentKeys(k.ctx, args[0])
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(wirePage(ks, func(key trove.EnvironmentKey) any { return httpapi.WireEnvironmentKey(&key, "") }))
				}
				rows := make([][]string, len(ks))
				for i, key := range ks {
					rows[i] = []string{key.ID, orDash(key.Name), "…" + key.Hint, fmtTime(key.CreatedAt), fmtTimePtr(key.RevokedAt)}
				}
				return c.table([]string{"ID", "NAME", "HINT", "CREATED", "REVOKED"}, rows)
			})
		},
	}
}

func (c *clientCmd) environmentKeysRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ENVIRONMENT KEY",
		Short: "Revoke an environment key: its workers stop within seconds",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withEnvironments(cmd, func(k *conn, es trove.EnvironmentService) error {
				key, err := es.RevokeEnvironmentKey(k.ctx, args[0], args[1])
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(httpapi.WireEnvironmentKey(key, ""))
				}
				fmt.Fprintf(c.e.stdout, "revoked environment key %s\n", key.ID)
				return nil
			})
		},
	}
}

func (c *clientCmd) showEnvironment(env *trove.Environment) error {
	if c.json() {
		return c.printJSON(httpapi.WireEnvironment(env))
	}
	var md []string
	for k, v := range env.Metadata {
		md = append(md, k+"="+v)
	}
	slices.Sort(md)
	desc := "-"
	if env.Description != nil {
		desc = *env.Description
	}
	return c.fields(
		"id", env.ID,
		"name", env.Name,
		"type", env.Type,
		"description", desc,
		"metadata", orDash(strings.Join(md, ", ")),
		"created", fmtTime(env.CreatedAt),
		"updated", fmtTime(env.UpdatedAt),
		"archived", fmtTimePtr(env.ArchivedAt),
	)
}
