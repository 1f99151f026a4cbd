package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
)

func newKeysCmd(e *env) *cobra.Command {
	var data, dbURL string
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke API keys",
		Args:  cobra.NoArgs,
		RunE:  helpRun,
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
			if err := requireLocalDB(data, dbURL); err != nil {
				return err
			}
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
		Use:   "revoke ID_OR_NAME",
		Short: "Revoke an API key, given by ID or name; running servers refuse it within their --auth-cache (2s by default)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireLocalDB(data, dbURL); err != nil {
				return err
			}
			svc, closeDB, err := openLocal(e.ctx, data, dbURL, true)
			if err != nil {
				return err
			}
			defer closeDB()
			keys, err := svc.ListKeys(e.ctx, "")
			if err != nil {
				return err
			}
			k, err := findKey(keys, args[0])
			if err != nil {
				return err
			}
			if err := svc.RevokeKey(e.ctx, k.ID); err != nil {
				return err
			}
			if k.Name != "" {
				fmt.Fprintf(e.stdout, "revoked %s (%s)\n", k.ID, k.Name)
			} else {
				fmt.Fprintf(e.stdout, "revoked %s\n", k.ID)
			}
			return nil
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// findKey returns the key with ID ref, else the one key named ref:
// ENOTFOUND naming the keys there are when none is, EINVALID with their IDs
// when several are.
func findKey(keys []trove.APIKey, ref string) (*trove.APIKey, error) {
	var named []trove.APIKey
	for i, k := range keys {
		if k.ID == ref {
			return &keys[i], nil
		}
		if k.Name == ref {
			named = append(named, k)
		}
	}
	switch len(named) {
	case 1:
		return &named[0], nil
	case 0:
		var names []string
		for _, k := range keys {
			n := k.ID
			if k.Name != "" {
				n += " (" + k.Name + ")"
			}
			names = append(names, n)
		}
		if len(names) == 0 {
			return nil, trove.Errorf(trove.ENOTFOUND, "no API key with ID or name %q: the database has no keys", ref)
		}
		return nil, trove.Errorf(trove.ENOTFOUND, "no API key with ID or name %q; the keys are %s (see trove keys list)", ref, strings.Join(names, ", "))
	}
	ids := make([]string, len(named))
	for i, k := range named {
		ids[i] = k.ID
	}
	return nil, trove.Errorf(trove.EINVALID, "%d API keys are named %q; pass one of their IDs: %s", len(named), ref, strings.Join(ids, ", "))
}

// requireLocalDB refuses a SQLite data directory without a database, so that
// a command never creates an empty database beside the one the server uses.
func requireLocalDB(data, dbURL string) error {
	if dbURL != "" {
		return nil
	}
	path := filepath.Join(data, "trove.db")
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no database at %s: keys live in the server's database; pass the --data (or --database) that trove serve uses", path)
	}
	return nil
}
