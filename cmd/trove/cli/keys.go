package cli

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newKeysCmd(e *env) *cobra.Command {
	var data, dbURL string
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke API keys",
		Args:  cobra.NoArgs,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&data, "data", defaultDataDir(), "data directory (env TROVE_DATA)")
	pf.StringVar(&dbURL, "database", os.Getenv("TROVE_DATABASE"), "PostgreSQL URL; empty for SQLite in --data (env TROVE_DATABASE)")

	var workspace, name string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API key; the secret is printed alone on the last line, once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, closeDB, err := openLocal(e.ctx, data, dbURL, true)
			if err != nil {
				return err
			}
			defer closeDB()
			k, secret, err := svc.CreateKey(e.ctx, workspace, name)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "created API key %s in workspace %s\n%s\n", k.ID, k.WorkspaceID, secret)
			return nil
		},
	}
	create.Flags().StringVar(&workspace, "workspace", defaultWorkspace, "workspace ID the key acts in")
	create.Flags().StringVar(&name, "name", "", "a name to tell keys apart")

	var listWorkspace string
	list := &cobra.Command{
		Use:   "list",
		Short: "List API keys (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, closeDB, err := openLocal(e.ctx, data, dbURL, true)
			if err != nil {
				return err
			}
			defer closeDB()
			keys, err := svc.ListKeys(e.ctx, listWorkspace)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tWORKSPACE\tNAME\tHINT\tCREATED\tREVOKED")
			for _, k := range keys {
				revoked := "-"
				if k.RevokedAt != nil {
					revoked = k.RevokedAt.UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t…%s\t%s\t%s\n", k.ID, k.WorkspaceID, k.Name, k.Hint, k.CreatedAt.UTC().Format(time.RFC3339), revoked)
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&listWorkspace, "workspace", "", "only keys of this workspace (default: all)")

	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key; running servers refuse it within their --auth-cache (2s by default)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, closeDB, err := openLocal(e.ctx, data, dbURL, true)
			if err != nil {
				return err
			}
			defer closeDB()
			if err := svc.RevokeKey(e.ctx, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "revoked %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}
