package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
)

// keysCmd is what the keys subcommands share: the local database they act
// on (keys live in the server's database, never through a server).
type keysCmd struct {
	e           *env
	data, dbURL string
}

func newKeysCmd(e *env) *cobra.Command {
	kc := &keysCmd{e: e}
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, list and revoke API keys",
		Args:  cobra.NoArgs,
		RunE:  helpRun,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&kc.data, "data", defaultDataDir(), "data directory (env TROVE_DATA)")
	pf.StringVar(&kc.dbURL, "database", os.Getenv("TROVE_DATABASE"), "PostgreSQL URL; empty for SQLite in --data (env TROVE_DATABASE)")
	cmd.AddCommand(kc.createCmd(), kc.listCmd(), kc.revokeCmd())
	return cmd
}

// withLocal opens the local database, runs f with its service, and closes
// it. With existing, a SQLite database must exist already.
func (kc *keysCmd) withLocal(existing bool, f func(svc *core.Service) error) error {
	if existing {
		if err := requireLocalDB(kc.data, kc.dbURL); err != nil {
			return err
		}
	}
	svc, closeDB, err := openLocal(kc.e.ctx, kc.data, kc.dbURL, true)
	if err != nil {
		return err
	}
	defer closeDB()
	return f(svc)
}

func (kc *keysCmd) createCmd() *cobra.Command {
	var workspace, name string
	cmd := &cobra.Command{
		Use:   "create [NAME] [--workspace ID]",
		Short: "Create an API key (optionally named, as NAME or --name); the secret is printed alone on the last line, once",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := name
			if len(args) == 1 || cmd.Flags().Changed("name") {
				var err error
				if n, err = nameArg(cmd, args, name); err != nil {
					return err
				}
			}
			return kc.withLocal(false, func(svc *core.Service) error {
				k, secret, err := svc.CreateKey(kc.e.ctx, workspace, n)
				if err != nil {
					return err
				}
				fmt.Fprintf(kc.e.stdout, "created API key %s in workspace %s\n%s\n", k.ID, k.WorkspaceID, secret)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&workspace, "workspace", defaultWorkspace, "workspace ID the key acts in")
	cmd.Flags().StringVar(&name, "name", "", "a name to tell keys apart (or give it as NAME)")
	return cmd
}

func (kc *keysCmd) listCmd() *cobra.Command {
	var workspace string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List API keys (never their secrets)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return kc.withLocal(true, func(svc *core.Service) error {
				keys, err := svc.ListKeys(kc.e.ctx, workspace)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(kc.e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tWORKSPACE\tNAME\tHINT\tCREATED\tREVOKED")
				for _, k := range keys {
					fmt.Fprintf(tw, "%s\t%s\t%s\t…%s\t%s\t%s\n", k.ID, k.WorkspaceID, k.Name, k.Hint, fmtTime(k.CreatedAt), fmtTimePtr(k.RevokedAt))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&workspace, "workspace", "", "only keys of this workspace (default: all)")
	return cmd
}

func (kc *keysCmd) revokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID_OR_NAME",
		Short: "Revoke an API key, given by ID or name; running servers refuse it within their --auth-cache (2s by default)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return kc.withLocal(true, func(svc *core.Service) error {
				keys, err := svc.ListKeys(kc.e.ctx, "")
				if err != nil {
					return err
				}
				k, err := findKey(keys, args[0])
				if err != nil {
					return err
				}
				if err := svc.RevokeKey(kc.e.ctx, k.ID); err != nil {
					return err
				}
				if k.Name != "" {
					fmt.Fprintf(kc.e.stdout, "revoked %s (%s)\n", k.ID, k.Name)
				} else {
					fmt.Fprintf(kc.e.stdout, "revoked %s\n", k.ID)
				}
				return nil
			})
		},
	}
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
