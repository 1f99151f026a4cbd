package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

func newSessionsCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	cmd := c.group("sessions", "List, create, show and end sessions (stores attached to an agent run); run a command in one",
		"A session attaches stores to one agent run and has its own credential; writes made with it are attributed to the session. trove sessions run creates one around a command.")
	cmd.Aliases = []string{"session"}
	cmd.AddCommand(c.sessionsListCmd(), c.sessionsCreateCmd(), c.sessionsGetCmd(), c.sessionsEndCmd(),
		c.sessionsArchiveCmd(), c.sessionsDeleteCmd(), newSessionEventsCmd(c), newSessionChatCmd(c), newSessionRunCmd(e))
	return cmd
}

func (c *clientCmd) sessionsListCmd() *cobra.Command {
	var storeRef string
	cmd := &cobra.Command{
		Use:     "list [--store STORE]",
		Aliases: []string{"ls"},
		Short:   "List sessions, newest first",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withSessions(cmd, func(k *conn, ss trove.SessionService) error {
				p := trove.ListSessionsParams{Limit: 100}
				if storeRef != "" {
					st, err := k.store(storeRef, readStore)
					if err != nil {
						return err
					}
					p.StoreID = st.ID
				}
				all, err := trove.AllItems(k.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.Session], error) {
					p.Cursor = cursor
					return ss.ListSessions(ctx, p)
				})
				if err != nil {
					return err
				}
				return c.sessionTable(all)
			})
		},
	}
	cmd.Flags().StringVar(&storeRef, "store", "", "only sessions with this store attached")
	return cmd
}

// sessionTable prints sessions as a table, or a page of their JSON.
func (c *clientCmd) sessionTable(all []trove.Session) error {
	if c.json() {
		return c.printJSON(wirePage(all, func(s trove.Session) any { return httpapi.WireSession(&s, "") }))
	}
	rows := make([][]string, len(all))
	for i, s := range all {
		rows[i] = []string{s.ID, storesText(s.Stores), fmtTime(s.CreatedAt), fmtTimePtr(s.EndedAt), statusText(&s)}
	}
	return c.table([]string{"ID", "STORES", "CREATED", "ENDED", "STATUS"}, rows)
}

// withSessions is withConn with the target's session service.
func (c *clientCmd) withSessions(cmd *cobra.Command, f func(k *conn, ss trove.SessionService) error) error {
	return c.withConn(cmd, func(k *conn) error {
		ss, err := k.sessions()
		if err != nil {
			return err
		}
		return f(k, ss)
	})
}

// sessionsCreateFlags are sessions create's flags.
type sessionsCreateFlags struct {
	refs, instr             []string
	agentRef, envRef, title string
}

func (c *clientCmd) sessionsCreateCmd() *cobra.Command {
	var f sessionsCreateFlags
	cmd := &cobra.Command{
		Use:   "create [--agent AGENT[@VERSION] --environment ENV [--title TEXT]] --store STORE[:ro] [--store …] [--instructions TEXT …]",
		Short: "Create a session; its credential is printed alone on the last line, once",
		Long: "Without --agent: an agent-less session for an agent you run (trove sessions run, trove mount); its credential is printed once.\n" +
			"With --agent and --environment: a Managed Agents session that Trove's agent loop runs, its tools run by the environment's worker (trove worker); talk to it with trove sessions chat.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case f.agentRef == "" && len(f.refs) == 0:
				return commandUsageError(cmd, "sessions create: give at least one --store (or --agent and --environment)")
			case (f.agentRef == "") != (f.envRef == ""):
				return commandUsageError(cmd, "sessions create: --agent and --environment go together")
			case f.agentRef == "" && f.title != "":
				return commandUsageError(cmd, "sessions create: --title needs --agent")
			}
			return c.withSessions(cmd, func(k *conn, ss trove.SessionService) error { return c.createSession(k, ss, &f) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.agentRef, "agent", "", "the agent ID the session runs, agent_…@VERSION to pin a version (default: its latest)")
	fl.StringVar(&f.envRef, "environment", "", "the environment ID (env_…) whose workers run the agent's tools")
	fl.StringVar(&f.title, "title", "", "the session's title")
	fl.StringArrayVar(&f.refs, "store", nil, "store name or ID to attach, :ro for read-only (repeatable)")
	fl.StringArrayVar(&f.instr, "instructions", nil, "instructions for the store at the same position (repeatable)")
	return cmd
}

// createSession creates the session f describes and prints it, with its
// credential when it is the creator's to see.
func (c *clientCmd) createSession(k *conn, ss trove.SessionService, f *sessionsCreateFlags) error {
	var attach []trove.AttachStoreParams
	for i, r := range f.refs {
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
		if i < len(f.instr) {
			a.Instructions = f.instr[i]
		}
		attach = append(attach, a)
	}
	p := trove.CreateSessionParams{Stores: attach}
	if f.agentRef != "" {
		ref, err := parseAgentRef(f.agentRef)
		if err != nil {
			return err
		}
		p.Agent, p.EnvironmentID, p.Title = ref, f.envRef, f.title
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
		fmt.Fprintf(c.e.stdout, "credential (shown once; end the session to revoke it):\n%s\n", token)
	}
	return nil
}

// sessionCmd is a subcommand acting on one session (SESSION) through do and
// printing the session it returns.
func (c *clientCmd) sessionCmd(use, short string, do func(k *conn, ss trove.SessionService, id string) (*trove.Session, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use + " SESSION",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withSessions(cmd, func(k *conn, ss trove.SessionService) error {
				s, err := do(k, ss, args[0])
				if err != nil {
					return notFoundSession(err, args[0])
				}
				if c.json() {
					return c.printJSON(httpapi.WireSession(s, ""))
				}
				return c.showSession(s)
			})
		},
	}
}

// notFoundSession names the session in a not-found error.
func notFoundSession(err error, id string) error {
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return trove.Errorf(trove.ENOTFOUND, "no session %s (see trove sessions list)", id)
	}
	return err
}

func (c *clientCmd) sessionsGetCmd() *cobra.Command {
	return c.sessionCmd("get", "Show a session and its stores", func(k *conn, ss trove.SessionService, id string) (*trove.Session, error) {
		return ss.GetSession(k.ctx, id)
	})
}

func (c *clientCmd) sessionsEndCmd() *cobra.Command {
	return c.sessionCmd("end", "End a session: its credential stops working (idempotent)", func(k *conn, ss trove.SessionService, id string) (*trove.Session, error) {
		return ss.EndSession(k.ctx, id)
	})
}

// managedSessions returns ss as a ManagedSessionService, or an error naming
// what the target cannot do.
func managedSessions(ss trove.SessionService, what string) (trove.ManagedSessionService, error) {
	ms, ok := ss.(trove.ManagedSessionService)
	if !ok {
		return nil, fmt.Errorf("this target cannot %s sessions", what)
	}
	return ms, nil
}

func (c *clientCmd) sessionsArchiveCmd() *cobra.Command {
	return c.sessionCmd("archive", "Archive a session: it ends (a managed session is terminated) and is left out of lists", func(k *conn, ss trove.SessionService, id string) (*trove.Session, error) {
		ms, err := managedSessions(ss, "archive")
		if err != nil {
			return nil, err
		}
		return ms.ArchiveSession(k.ctx, id)
	})
}

func (c *clientCmd) sessionsDeleteCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete SESSION --yes",
		Short: "Delete a session and its transcript (the versions it wrote stay, attributed to it; asks first)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withSessions(cmd, func(k *conn, ss trove.SessionService) error {
				ms, err := managedSessions(ss, "delete")
				if err != nil {
					return err
				}
				if _, err := ss.GetSession(k.ctx, args[0]); err != nil {
					return notFoundSession(err, args[0])
				}
				if err := confirm(c.e, cmd, yes, "deleting session "+args[0]+" removes its transcript for good"); err != nil {
					return err
				}
				if err := ms.DeleteSession(k.ctx, args[0]); err != nil {
					return notFoundSession(err, args[0])
				}
				if c.json() {
					return c.printJSON(map[string]string{"type": "session_deleted", "id": args[0]})
				}
				fmt.Fprintf(c.e.stdout, "deleted %s\n", args[0])
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "confirm the deletion (needed without a terminal)")
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
