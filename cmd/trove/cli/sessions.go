package cli

import (
	"fmt"
	"strconv"
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
				st, err := k.store(storeRef, readStore)
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
				rows[i] = []string{s.ID, storesText(s.Stores), fmtTime(s.CreatedAt), fmtTimePtr(s.EndedAt), statusText(&s)}
			}
			return c.table([]string{"ID", "STORES", "CREATED", "ENDED", "STATUS"}, rows)
		},
	}
	list.Flags().StringVar(&storeRef, "store", "", "only sessions with this store attached")

	var refs, instr []string
	var agentRef, envRef, title string
	create := &cobra.Command{
		Use:   "create [--agent AGENT[@VERSION] --environment ENV [--title TEXT]] --store STORE[:ro] [--store …] [--instructions TEXT …]",
		Short: "Create a session; its credential is printed alone on the last line, once",
		Long: "Without --agent: an agent-less session for an agent you run (trove session run, trove mount); its credential is printed once.\n" +
			"With --agent and --environment: a Managed Agents session that Trove's agent loop runs, its tools run by the environment's worker (trove worker); talk to it with trove sessions chat.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if agentRef == "" && len(refs) == 0 {
				return &exitError{code: exitUsage, err: withUsage(cmd, "sessions create: give at least one --store (or --agent and --environment)")}
			}
			if (agentRef == "") != (envRef == "") {
				return &exitError{code: exitUsage, err: withUsage(cmd, "sessions create: --agent and --environment go together")}
			}
			if agentRef == "" && title != "" {
				return &exitError{code: exitUsage, err: withUsage(cmd, "sessions create: --title needs --agent")}
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
				st, err := k.store(ref, readStore)
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
			p := trove.CreateSessionParams{Stores: attach}
			if agentRef != "" {
				ref, err := parseAgentRef(agentRef)
				if err != nil {
					return err
				}
				p.Agent, p.EnvironmentID, p.Title = ref, envRef, title
			}
			s, token, err := ss.CreateSession(k.ctx, p)
			if err != nil {
				return err
			}
			if p.Agent != nil {
				// A managed session's credential goes to its environment's
				// workers with their work, never to the creator.
				token = ""
			}
			if c.json() {
				return c.printJSON(httpapi.WireSession(s, token))
			}
			if err := c.showSession(s); err != nil {
				return err
			}
			if token != "" {
				fmt.Fprintf(e.stdout, "credential (shown once; end the session to revoke it):\n%s\n", token)
			}
			return nil
		},
	}
	create.Flags().StringVar(&agentRef, "agent", "", "the agent ID the session runs, agent_…@VERSION to pin a version (default: its latest)")
	create.Flags().StringVar(&envRef, "environment", "", "the environment ID (env_…) whose workers run the agent's tools")
	create.Flags().StringVar(&title, "title", "", "the session's title")
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
	managed := func(use, short string, do func(k *conn, ms trove.ManagedSessionService, id string) (*trove.Session, error)) *cobra.Command {
		return one(use, short, func(k *conn, ss trove.SessionService, id string) (*trove.Session, error) {
			ms, ok := ss.(trove.ManagedSessionService)
			if !ok {
				return nil, fmt.Errorf("this target cannot %s sessions", use)
			}
			return do(k, ms, id)
		})
	}
	archive := managed("archive", "Archive a session: it ends (a managed session is terminated) and is left out of lists", func(k *conn, ms trove.ManagedSessionService, id string) (*trove.Session, error) {
		return ms.ArchiveSession(k.ctx, id)
	})
	del := &cobra.Command{
		Use:   "delete SESSION",
		Short: "Delete a session and its transcript (the versions it wrote stay, attributed to it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := c.open(cmd)
			if err != nil {
				return err
			}
			defer k.close()
			ms, ok := k.svc.(trove.ManagedSessionService)
			if !ok {
				return fmt.Errorf("this target cannot delete sessions")
			}
			if err := ms.DeleteSession(k.ctx, args[0]); err != nil {
				if trove.ErrorCode(err) == trove.ENOTFOUND {
					return trove.Errorf(trove.ENOTFOUND, "no session %s (see trove sessions list)", args[0])
				}
				return err
			}
			if c.json() {
				return c.printJSON(map[string]string{"type": "session_deleted", "id": args[0]})
			}
			fmt.Fprintf(e.stdout, "deleted %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(list, create, get, end, archive, del, newSessionEventsCmd(c), newSessionChatCmd(c))
	return cmd
}

// parseAgentRef reads AGENT or AGENT@VERSION.
func parseAgentRef(s string) (*trove.AgentRef, error) {
	id, v, pinned := strings.Cut(s, "@")
	if id == "" {
		return nil, usageError("--agent must be an agent ID, optionally @VERSION, not %q", s)
	}
	ref := &trove.AgentRef{ID: id}
	if pinned {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return nil, usageError("--agent %q: the version after @ must be an integer >= 1", s)
		}
		ref.Version = n
	}
	return ref, nil
}

// statusText is a session's status, "archived" added when it is.
func statusText(s *trove.Session) string {
	st := string(s.Status)
	if st == "" {
		st = string(trove.SessionIdle)
	}
	if s.ArchivedAt != nil {
		st += " (archived)"
	}
	return st
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
	kv := []string{"id", s.ID, "created", fmtTime(s.CreatedAt), "ended", fmtTimePtr(s.EndedAt), "status", statusText(s)}
	if s.Title != "" {
		kv = append(kv, "title", s.Title)
	}
	if m := s.Managed; m != nil {
		kv = append(kv, "agent", m.AgentID+"@"+strconv.FormatInt(m.AgentVersion, 10), "environment", m.EnvironmentID)
	}
	if err := c.fields(kv...); err != nil {
		return err
	}
	rows := make([][]string, len(s.Stores))
	for i, st := range s.Stores {
		rows[i] = []string{st.StoreID, st.Name, string(st.Access), st.MountPath}
	}
	return c.table([]string{"STORE", "NAME", "ACCESS", "MOUNT PATH"}, rows)
}
