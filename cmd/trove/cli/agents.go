package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

func (k *conn) agents() (trove.AgentService, error) {
	as, ok := k.svc.(trove.AgentService)
	if !ok {
		return nil, fmt.Errorf("this target has no agents")
	}
	return as, nil
}

// withAgents is withConn with the target's agent service.
func (c *clientCmd) withAgents(cmd *cobra.Command, f func(k *conn, as trove.AgentService) error) error {
	return c.withConn(cmd, func(k *conn) error {
		as, err := k.agents()
		if err != nil {
			return err
		}
		return f(k, as)
	})
}

// agentToolFlags are the tool flags of agents create and update.
type agentToolFlags struct {
	toolset bool
	disable []string
	ask     bool
	custom  []string
}

func (f *agentToolFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.toolset, "toolset", false, "give the agent the agent toolset (bash, edit, read, write, glob, grep), run by the environment's worker")
	fl.StringArrayVar(&f.disable, "disable", nil, "with --toolset: a toolset tool to turn off (repeatable)")
	fl.BoolVar(&f.ask, "ask", false, "with --toolset: every tool call waits for the user's confirmation (always_ask)")
	fl.StringArrayVar(&f.custom, "custom-tool", nil, `a custom tool as JSON {"name":…,"description":…,"input_schema":{…}} or @FILE (repeatable)`)
}

func (f *agentToolFlags) set() bool { return f.toolset || len(f.custom) > 0 }

func (f *agentToolFlags) tools() ([]trove.AgentToolParams, error) {
	var out []trove.AgentToolParams
	if f.toolset {
		t := trove.AgentToolParams{Type: trove.ToolAgentToolset}
		if f.ask {
			t.DefaultPolicy = trove.PolicyAlwaysAsk
		}
		off := false
		for _, name := range f.disable {
			t.Configs = append(t.Configs, trove.ToolConfigParams{Name: name, Enabled: &off})
		}
		out = append(out, t)
	} else if len(f.disable) > 0 || f.ask {
		return nil, usageError("--disable and --ask need --toolset")
	}
	for _, spec := range f.custom {
		raw := []byte(spec)
		if path, ok := strings.CutPrefix(spec, "@"); ok {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("--custom-tool: %w", err)
			}
			raw = b
		}
		var ct struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ct); err != nil {
			return nil, usageError("--custom-tool takes a JSON object with name, description and input_schema: %v", err)
		}
		out = append(out, trove.AgentToolParams{Type: trove.ToolCustom, Name: ct.Name, Description: ct.Description, InputSchema: ct.InputSchema})
	}
	return out, nil
}

func newAgentsCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	cmd := c.group("agents", "Create, show, list, update, archive agents and list their versions",
		"An agent is a versioned configuration (model, system prompt, tools, metadata) that Managed Agents sessions run. Every update makes a new version; sessions can pin one. Trove runs the agent toolset in a self-hosted environment's worker (trove environments) and custom tools in the client; MCP servers, skills and callable agents are refused.")
	cmd.AddCommand(c.agentsCreateCmd(), c.agentsGetCmd(), c.agentsListCmd(), c.agentsUpdateCmd(), c.agentsArchiveCmd(), c.agentsVersionsCmd())
	return cmd
}

// agentFields are the flags of agents create and update.
type agentFields struct {
	name, model, system, description string
	meta                             []string
	tools                            agentToolFlags
}

func (c *clientCmd) agentsCreateCmd() *cobra.Command {
	var f agentFields
	cmd := &cobra.Command{
		Use:   "create NAME --model MODEL [--system TEXT] [--toolset] [--custom-tool JSON …]",
		Short: "Create an agent (version 1; the name positional or as --name)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args, f.name)
			if err != nil {
				return err
			}
			if f.model == "" {
				return commandUsageError(cmd, "agents create: give --model")
			}
			tools, err := f.tools.tools()
			if err != nil {
				return err
			}
			md, err := parseMetadata(f.meta, false)
			if err != nil {
				return err
			}
			p := trove.CreateAgentParams{Name: name, Model: trove.AgentModelParams{ID: f.model}, System: f.system, Description: f.description, Tools: tools}
			if len(md) > 0 {
				p.Metadata = map[string]string{}
				for k, v := range md {
					p.Metadata[k] = *v
				}
			}
			return c.withAgents(cmd, func(k *conn, as trove.AgentService) error {
				a, err := as.CreateAgent(k.ctx, p)
				if err != nil {
					return err
				}
				return c.showAgent(a)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "the agent's name (or give it as NAME)")
	fl.StringVar(&f.model, "model", "", "the model ID, e.g. claude-sonnet-4-6")
	fl.StringVar(&f.system, "system", "", "the system prompt")
	fl.StringVar(&f.description, "description", "", "what the agent does")
	fl.StringArrayVar(&f.meta, "metadata", nil, "KEY=VALUE metadata (repeatable)")
	f.tools.register(cmd)
	return cmd
}

func (c *clientCmd) agentsGetCmd() *cobra.Command {
	var version int64
	cmd := &cobra.Command{
		Use:   "get AGENT [--version N]",
		Short: "Show an agent, at its current version or --version",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withAgents(cmd, func(k *conn, as trove.AgentService) error {
				a, err := as.GetAgent(k.ctx, args[0], version)
				if err != nil {
					return err
				}
				return c.showAgent(a)
			})
		},
	}
	cmd.Flags().Int64Var(&version, "version", 0, "the version to show (default: current)")
	return cmd
}

func (c *clientCmd) agentsListCmd() *cobra.Command {
	var archived bool
	cmd := &cobra.Command{
		Use:     "list [--archived]",
		Aliases: []string{"ls"},
		Short:   "List agents, newest first",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withAgents(cmd, func(k *conn, as trove.AgentService) error {
				all, err := trove.AllItems(k.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.Agent], error) {
					return as.ListAgents(ctx, trove.ListAgentsParams{Limit: 100, IncludeArchived: archived, Cursor: cursor})
				})
				if err != nil {
					return err
				}
				return c.agentTable(all)
			})
		},
	}
	cmd.Flags().BoolVar(&archived, "archived", false, "include archived agents")
	return cmd
}

func (c *clientCmd) agentsUpdateCmd() *cobra.Command {
	var f agentFields
	var ifVersion int64
	cmd := &cobra.Command{
		Use:   "update AGENT [--if-version N] [--name NAME] [--model MODEL] [--system TEXT] [--toolset …] [--metadata KEY=VALUE | KEY= …]",
		Short: "Change an agent: a new version (KEY= removes a metadata key; tool flags replace all tools)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.update(cmd)
			if err != nil {
				return err
			}
			p.Version = ifVersion
			return c.withAgents(cmd, func(k *conn, as trove.AgentService) error {
				a, err := as.UpdateAgent(k.ctx, args[0], *p)
				if err != nil {
					return err
				}
				return c.showAgent(a)
			})
		},
	}
	fl := cmd.Flags()
	fl.Int64Var(&ifVersion, "if-version", 0, "refuse unless the agent is still at this version")
	fl.StringVar(&f.name, "name", "", "a new name")
	fl.StringVar(&f.model, "model", "", "a new model ID")
	fl.StringVar(&f.system, "system", "", "a new system prompt (\"\" clears it)")
	fl.StringVar(&f.description, "description", "", "a new description (\"\" clears it)")
	fl.StringArrayVar(&f.meta, "metadata", nil, "KEY=VALUE sets a key, KEY= removes it (repeatable)")
	f.tools.register(cmd)
	return cmd
}

// update returns the change the flags given to cmd ask for; none is a
// usage error.
func (f *agentFields) update(cmd *cobra.Command) (*trove.UpdateAgentParams, error) {
	var p trove.UpdateAgentParams
	fl := cmd.Flags()
	if fl.Changed("name") {
		p.Name = &f.name
	}
	if fl.Changed("model") {
		p.Model = &trove.AgentModelParams{ID: f.model}
	}
	if fl.Changed("system") {
		p.System = &f.system
	}
	if fl.Changed("description") {
		p.Description = &f.description
	}
	if f.tools.set() {
		tools, err := f.tools.tools()
		if err != nil {
			return nil, err
		}
		p.Tools = &tools
	}
	md, err := parseMetadata(f.meta, true)
	if err != nil {
		return nil, err
	}
	if len(md) > 0 {
		p.Metadata = md
	}
	if p.Name == nil && p.Model == nil && p.System == nil && p.Description == nil && p.Tools == nil && p.Metadata == nil {
		return nil, commandUsageError(cmd, "agents update: nothing to change")
	}
	return &p, nil
}

func (c *clientCmd) agentsArchiveCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "archive AGENT --yes",
		Short: "Archive an agent (one-way; asks first): new sessions cannot use it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withAgents(cmd, func(k *conn, as trove.AgentService) error {
				a, err := as.GetAgent(k.ctx, args[0], 0)
				if err != nil {
					return err
				}
				if err := confirm(c.e, cmd, yes, fmt.Sprintf("archiving agent %q (%s) is one-way: no new session can use it", a.Name, a.ID)); err != nil {
					return err
				}
				if a, err = as.ArchiveAgent(k.ctx, a.ID); err != nil {
					return err
				}
				return c.showAgent(a)
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "confirm the archiving (needed without a terminal)")
	return cmd
}

func (c *clientCmd) agentsVersionsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "versions AGENT",
		Short: "List an agent's versions, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withAgents(cmd, func(k *conn, as trove.AgentService) error {
				all, err := trove.AllItems(k.ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.Agent], error) {
					return as.ListAgentVersions(ctx, args[0], trove.ListAgentVersionsParams{Limit: 100, Cursor: cursor})
				})
				if err != nil {
					return err
				}
				return c.agentTable(all)
			})
		},
	}
}

func (c *clientCmd) agentTable(all []trove.Agent) error {
	if c.json() {
		return c.printJSON(wirePage(all, func(a trove.Agent) any { return httpapi.WireAgent(&a) }))
	}
	rows := make([][]string, len(all))
	for i, a := range all {
		rows[i] = []string{a.ID, strconv.FormatInt(a.Version, 10), a.Name, a.Model.ID, toolNames(&a), fmtTime(a.UpdatedAt), fmtTimePtr(a.ArchivedAt)}
	}
	return c.table([]string{"ID", "VERSION", "NAME", "MODEL", "TOOLS", "UPDATED", "ARCHIVED"}, rows)
}

func toolNames(a *trove.Agent) string {
	var names []string
	for _, t := range a.EnabledTools() {
		names = append(names, t.Name)
	}
	for _, t := range a.CustomTools() {
		names = append(names, t.Name+" (custom)")
	}
	return orDash(strings.Join(names, ", "))
}

func (c *clientCmd) showAgent(a *trove.Agent) error {
	if c.json() {
		return c.printJSON(httpapi.WireAgent(a))
	}
	var md []string
	for k, v := range a.Metadata {
		md = append(md, k+"="+v)
	}
	slices.Sort(md)
	return c.fields(
		"id", a.ID,
		"version", strconv.FormatInt(a.Version, 10),
		"name", a.Name,
		"model", a.Model.ID,
		"description", orDash(a.Description),
		"system", orDash(a.System),
		"tools", toolNames(a),
		"metadata", orDash(strings.Join(md, ", ")),
		"created", fmtTime(a.CreatedAt),
		"updated", fmtTime(a.UpdatedAt),
		"archived", fmtTimePtr(a.ArchivedAt),
	)
}
