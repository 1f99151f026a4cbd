package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

func newStoresCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	cmd := c.group("stores", "List, create, read, update, archive and delete memory stores",
		"A store is given by name or by ID (memstore_…) everywhere.")
	cmd.AddCommand(c.storesListCmd(), c.storesCreateCmd(), c.storesGetCmd(), c.storesUpdateCmd(),
		c.storesArchiveCmd(), c.storesDeleteCmd(), c.forkCmd())
	return cmd
}

func (c *clientCmd) storesListCmd() *cobra.Command {
	var archived bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the workspace's stores, newest first",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withConn(cmd, func(k *conn) error {
				all, err := listAllStores(k.ctx, k.svc, archived)
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(wirePage(all, func(s trove.Store) any { return httpapi.WireStore(&s) }))
				}
				rows := make([][]string, len(all))
				for i, s := range all {
					rows[i] = []string{s.ID, s.Name, fmtTime(s.CreatedAt), fmtTimePtr(s.ArchivedAt), orDash(s.Description)}
				}
				return c.table([]string{"ID", "NAME", "CREATED", "ARCHIVED", "DESCRIPTION"}, rows)
			})
		},
	}
	cmd.Flags().BoolVar(&archived, "archived", false, "include archived stores")
	return cmd
}

func (c *clientCmd) storesCreateCmd() *cobra.Command {
	var name, desc string
	var meta []string
	var allowDup bool
	cmd := &cobra.Command{
		Use:   "create NAME [--description TEXT] [--metadata KEY=VALUE …] [--allow-duplicate-name]",
		Short: "Create a store (the name positional or as --name; refused when a live store already has it)",
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
			return c.withConn(cmd, func(k *conn) error {
				p := trove.CreateStoreParams{Name: n, Description: desc, Metadata: map[string]string{}}
				for key, v := range md {
					p.Metadata[key] = *v
				}
				if err := checkStoreName(k, p.Name, allowDup); err != nil {
					return err
				}
				st, err := k.svc.CreateStore(k.ctx, p)
				if err != nil {
					return err
				}
				return c.showStore(st)
			})
		},
	}
	cmd.Flags().BoolVar(&allowDup, "allow-duplicate-name", false, "create the store although a live store already has this name")
	cmd.Flags().StringVar(&name, "name", "", "the store's name (or give it as NAME)")
	cmd.Flags().StringVar(&desc, "description", "", "what the store holds")
	cmd.Flags().StringArrayVar(&meta, "metadata", nil, "KEY=VALUE metadata (repeatable)")
	return cmd
}

func (c *clientCmd) storesGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get STORE",
		Short: "Show a store",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withStore(cmd, args[0], func(k *conn, st *trove.Store) error { return c.showStore(st) })
		},
	}
}

func (c *clientCmd) storesUpdateCmd() *cobra.Command {
	var newName, newDesc string
	var patch []string
	cmd := &cobra.Command{
		Use:   "update STORE [--name NAME] [--description TEXT] [--metadata KEY=VALUE | KEY= …]",
		Short: "Rename a store, change its description or metadata (KEY= removes a key)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var p trove.UpdateStoreParams
			if cmd.Flags().Changed("name") {
				p.Name = &newName
			}
			if cmd.Flags().Changed("description") {
				p.Description = &newDesc
			}
			md, err := parseMetadata(patch, true)
			if err != nil {
				return err
			}
			if len(md) > 0 {
				p.Metadata = md
			}
			if p.Name == nil && p.Description == nil && p.Metadata == nil {
				return commandUsageError(cmd, "stores update: nothing to change: give --name, --description or --metadata")
			}
			return c.withStore(cmd, args[0], func(k *conn, st *trove.Store) error {
				st, err := k.svc.UpdateStore(k.ctx, st.ID, p)
				if err != nil {
					return err
				}
				return c.showStore(st)
			})
		},
	}
	cmd.Flags().StringVar(&newName, "name", "", "new name")
	cmd.Flags().StringVar(&newDesc, "description", "", "new description")
	cmd.Flags().StringArrayVar(&patch, "metadata", nil, "KEY=VALUE sets a key, KEY= removes it (repeatable)")
	return cmd
}

func (c *clientCmd) storesArchiveCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "archive STORE --yes",
		Short: "Archive a store: its memories stay readable, nothing can be written (one-way; asks first)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withStore(cmd, args[0], func(k *conn, st *trove.Store) error {
				if err := confirm(c.e, cmd, yes, fmt.Sprintf("archiving store %q (%s) is one-way: nothing can be written to it afterwards", st.Name, st.ID)); err != nil {
					return err
				}
				st, err := k.svc.ArchiveStore(k.ctx, st.ID)
				if err != nil {
					return err
				}
				return c.showStore(st)
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "confirm the archiving (needed without a terminal)")
	return cmd
}

func (c *clientCmd) storesDeleteCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete STORE --yes",
		Short: "Delete a store with all its memories and versions (cannot be undone; asks first)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withStore(cmd, args[0], func(k *conn, st *trove.Store) error {
				if err := confirm(c.e, cmd, yes, fmt.Sprintf("deleting store %q (%s) removes every memory and version in it for good", st.Name, st.ID)); err != nil {
					return err
				}
				if err := k.svc.DeleteStore(k.ctx, st.ID); err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(httpapi.WireDeleted(st.ID, "memory_store_deleted"))
				}
				fmt.Fprintf(c.e.stdout, "deleted store %s (%s)\n", st.ID, st.Name)
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "confirm the deletion (needed without a terminal)")
	return cmd
}

// forkCmd is stores fork: a new store from another as of a moment.
func (c *clientCmd) forkCmd() *cobra.Command {
	var desc, asOf string
	var allowDup bool
	cmd := &cobra.Command{
		Use:   "fork STORE NAME [--as-of MOMENT] [--description TEXT] [--allow-duplicate-name]",
		Short: "Create a store holding another store's memories, now or as of a moment",
		Long: `fork creates the store NAME with a copy of every memory of STORE as it was
at --as-of (5m, 2h ago, 2026-11-30, 2026-11-30 12:00 in the local zone, an RFC
3339 time, a version ID or a version number; default now), in one
transaction. Each copied memory's first version names the version it came from
(its origin). Memories whose version then was redacted are not copied. Later
writes to either store do not affect the other.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			at, err := parseMoment(c.e.stderr, "--as-of", asOf)
			if err != nil {
				return err
			}
			return c.withStore(cmd, args[0], func(k *conn, st *trove.Store) error {
				h, err := k.history()
				if err != nil {
					return err
				}
				if err := checkStoreName(k, args[1], allowDup); err != nil {
					return err
				}
				r, err := h.ForkStore(k.ctx, st.ID, trove.ForkStoreParams{Name: args[1], Description: desc, AsOf: at})
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(httpapi.WireForkResult(r))
				}
				fmt.Fprintf(c.e.stdout, "forked store %q (%s) as of version %d into %q (%s): %d %s copied\n",
					st.Name, st.ID, r.Seq, r.Store.Name, r.Store.ID, r.Copied, plural(r.Copied, "memory", "memories"))
				for _, id := range r.Skipped {
					fmt.Fprintf(c.e.stdout, "  not copied: memory %s (its version then is redacted)\n", id)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&asOf, "as-of", "", "fork the store as it was at this moment (default now)")
	cmd.Flags().StringVar(&desc, "description", "", "what the new store holds")
	cmd.Flags().BoolVar(&allowDup, "allow-duplicate-name", false, "fork although a live store already has the name NAME")
	return cmd
}

// checkStoreName refuses (exit 4) a store name that a live store of the
// workspace already has, unless allow (trove.CheckStoreNameFree).
func checkStoreName(k *conn, name string, allow bool) error {
	if allow {
		return nil
	}
	err := trove.CheckStoreNameFree(k.ctx, k.svc, name)
	if trove.IsStoreNameTaken(err) {
		return &exitError{code: exitConflict, err: fmt.Errorf("%s, or pass --allow-duplicate-name to have two", trove.ErrorMessage(err))}
	}
	return err
}

// showStore prints a store as fields, or its JSON.
func (c *clientCmd) showStore(st *trove.Store) error {
	if c.json() {
		return c.printJSON(httpapi.WireStore(st))
	}
	var md []string
	for _, key := range slices.Sorted(maps.Keys(st.Metadata)) {
		md = append(md, key+"="+st.Metadata[key])
	}
	return c.fields("id", st.ID, "name", st.Name, "description", orDash(st.Description),
		"metadata", orDash(strings.Join(md, ", ")), "created", fmtTime(st.CreatedAt),
		"updated", fmtTime(st.UpdatedAt), "archived", fmtTimePtr(st.ArchivedAt))
}

// parseMetadata parses KEY=VALUE flags; with removals, KEY= maps KEY to nil
// (a merge-patch removal).
func parseMetadata(kvs []string, removals bool) (map[string]*string, error) {
	md := map[string]*string{}
	for _, kv := range kvs {
		key, v, ok := strings.Cut(kv, "=")
		if !ok || key == "" {
			return nil, usageError("--metadata takes KEY=VALUE, got %q", kv)
		}
		if v == "" && removals {
			md[key] = nil
			continue
		}
		md[key] = &v
	}
	return md, nil
}
