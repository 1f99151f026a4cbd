package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

func newSessionsCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	cmd := c.group("sessions", "List, create, show and end sessions (stores attached to an agent run)",
		"A session attaches stores to one agent run and has its own credential; writes made with it are attributed to the session. trove session run creates one around a command.")

	var storeRef string
	list := &cobra.Command{
		Use:   "list [--store STORE]",
		Short: "List sessions, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := c.open(cmd)
			if err != nil {
				return err
			}
			defer k.close()
			ss, err := k.sessions()
			if err != nil {
				return err
			}
			p := trove.ListSessionsParams{Limit: 100}
			if storeRef != "" {
				st, err := k.store(storeRef)
				if err != nil {
					return err
				}
				p.StoreID = st.ID
			}
			var all []trove.Session
			for {
				page, err := ss.ListSessions(k.ctx, p)
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
				return c.printJSON(wirePage(all, func(s trove.Session) any { return httpapi.WireSession(&s, "") }))
			}
			rows := make([][]string, len(all))
			for i, s := range all {
				rows[i] = []string{s.ID, storesText(s.Stores), fmtTime(s.CreatedAt), fmtTimePtr(s.EndedAt)}
			}
			return c.table([]string{"ID", "STORES", "CREATED", "ENDED"}, rows)
		},
	}
	list.Flags().StringVar(&storeRef, "store", "", "only sessions with this store attached")

	var refs, instr []string
	create := &cobra.Command{
		Use:   "create --store STORE[:ro] [--store …] [--instructions TEXT …]",
		Short: "Create a session; its credential is printed alone on the last line, once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(refs) == 0 {
				return &exitError{code: exitUsage, err: withUsage(cmd, "sessions create: give at least one --store")}
			}
			k, err := c.open(cmd)
			if err != nil {
				return err
			}
			defer k.close()
			ss, err := k.sessions()
			if err != nil {
				return err
			}
			var attach []trove.AttachStoreParams
			for i, r := range refs {
				ref, ro, err := parseStoreRef(r)
				if err != nil {
					return err
				}
				st, err := k.store(ref)
				if err != nil {
					return err
				}
				a := trove.AttachStoreParams{StoreID: st.ID, Access: trove.AccessReadWrite}
				if ro {
					a.Access = trove.AccessReadOnly
				}
				if i < len(instr) {
					a.Instructions = instr[i]
				}
				attach = append(attach, a)
			}
			s, token, err := ss.CreateSession(k.ctx, trove.CreateSessionParams{Stores: attach})
			if err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(httpapi.WireSession(s, token))
			}
			if err := c.showSession(s); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "credential (shown once; end the session to revoke it):\n%s\n", token)
			return nil
		},
	}
	create.Flags().StringArrayVar(&refs, "store", nil, "store name or ID to attach, :ro for read-only (repeatable)")
	create.Flags().StringArrayVar(&instr, "instructions", nil, "instructions for the store at the same position (repeatable)")

	one := func(use, short string, do func(k *conn, ss trove.SessionService, id string) (*trove.Session, error)) *cobra.Command {
		return &cobra.Command{
			Use:   use + " SESSION",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				k, err := c.open(cmd)
				if err != nil {
					return err
				}
				defer k.close()
				ss, err := k.sessions()
				if err != nil {
					return err
				}
				s, err := do(k, ss, args[0])
				if trove.ErrorCode(err) == trove.ENOTFOUND {
					err = trove.Errorf(trove.ENOTFOUND, "no session %s (see trove sessions list)", args[0])
				}
				if err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(httpapi.WireSession(s, ""))
				}
				return c.showSession(s)
			},
		}
	}
	get := one("get", "Show a session and its stores", func(k *conn, ss trove.SessionService, id string) (*trove.Session, error) {
		return ss.GetSession(k.ctx, id)
	})
	end := one("end", "End a session: its credential stops working (idempotent)", func(k *conn, ss trove.SessionService, id string) (*trove.Session, error) {
		return ss.EndSession(k.ctx, id)
	})
	cmd.AddCommand(list, create, get, end, newSessionEventsCmd(c))
	return cmd
}

// storesText names a session's stores with their access.
func storesText(ss []trove.SessionStore) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.Name
		if s.Access == trove.AccessReadOnly {
			parts[i] += ":ro"
		}
	}
	return strings.Join(parts, ", ")
}

// showSession prints a session's fields and one line per store.
func (c *clientCmd) showSession(s *trove.Session) error {
	if err := c.fields("id", s.ID, "created", fmtTime(s.CreatedAt), "ended", fmtTimePtr(s.EndedAt)); err != nil {
		return err
	}
	rows := make([][]string, len(s.Stores))
	for i, st := range s.Stores {
		rows[i] = []string{st.StoreID, st.Name, string(st.Access), st.MountPath}
	}
	return c.table([]string{"STORE", "NAME", "ACCESS", "MOUNT PATH"}, rows)
}
