package cli

import (
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

func (c *clientCmd) withAgents(cmd *cobra.Command, f func(k *conn, as trove.AgentService) error) error {
	k, err := c.open(cmd)
	if err != nil {
		return err
	}
	defer k.close()
	as, err := k.agents()
	if err != nil {
		return err
	}
	return f(k, as)
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

	var name, model, system, description string
	var meta []string
	var tf agentToolFlags
	create := &cobra.Command{
		Use:   "create --name NAME --model MODEL [--system TEXT] [--toolset] [--custom-tool JSON …]",
		Short: "Create an agent (version 1)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" || model == "" {
				return &exitError{code: exitUsage, err: withUsage(cmd, "agents create: give --name and --model")}
			}
			tools, err := tf.tools()
			if err != nil {
				return err
			}
			md, err := parseMetadata(meta, false)
			if err != nil {
				return err
			}
			return c.withAgents(cmd, func(k *conn, as trove.AgentService) error {
				p := trove.CreateAgentParams{Name: name, Model: trove.AgentModelParams{ID: model}, System: system, Description: description, Tools: tools}
				if len(md) > 0 {
					p.Metadata = map[string]string{}
					for k, v := range md {
						p.Metadata[k] = *v
					}
				}
				a, err := as.CreateAgent(k.ctx, p)
				if err != nil {
					return err
				}
				return c.showAgent(a)
			})
		},
	}
	create.Flags().StringVar(&name, "name", "", "the agent's name")
	create.Flags().StringVar(&model, "model", "", "the model ID, e.g. claude-sonnet-4-6")
	create.Flags().StringVar(&system, "system", "", "the system prompt")
	create.Flags().StringVar(&description, "description", "", "what the agent does")
	create.Flags().StringArrayVar(&meta, "metadata", nil, "KEY=VALUE metadata (repeatable)")
	tf.register(create)

	var version int64
	get := &cobra.Command{
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
	get.Flags().Int64Var(&version, "version", 0, "the version to show (default: current)")

	var archived bool
	list := &cobra.Command{
		Use:   "list [--archived]",
		Short: "List agents, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withAgents(cmd, func(k *conn, as trove.AgentService) error {
				var all []trove.Agent
				p := trove.ListAgentsParams{Limit: 100, IncludeArchived: archived}
				for {
					page, err := as.ListAgents(k.ctx, p)
					if err != nil {
						return err
					}
					all = append(all, page.Data...)
					if p.Cursor = page.NextPage; p.Cursor == "" {
						break
					}
				}
				return c.agentTable(all)
			})
		},
	}
	list.Flags().BoolVar(&archived, "archived", false, "include archived agents")

	var uName, uModel, uSystem, uDescription string
	var uMeta []string
	var ifVersion int64
	var utf agentToolFlags
	update := &cobra.Command{
		Use:   "update AGENT [--if-version N] [--name NAME] [--model MODEL] [--system TEXT] [--toolset …] [--metadata KEY=VALUE | KEY= …]",
		Short: "Change an agent: a new version (KEY= removes a metadata key; tool flags replace all tools)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var p trove.UpdateAgentParams
			fl := cmd.Flags()
			p.Version = ifVersion
			if fl.Changed("name") {
				p.Name = &uName
			}
			if fl.Changed("model") {
				p.Model = &trove.AgentModelParams{ID: uModel}
			}
			if fl.Changed("system") {
				p.System = &uSystem
			}
			if fl.Changed("description") {
				p.Description = &uDescription
			}
			if utf.set() {
				tools, err := utf.tools()
				if err != nil {
					return err
				}
				p.Tools = &tools
			}
			md, err := parseMetadata(uMeta, true)
			if err != nil {
				return err
			}
			if len(md) > 0 {
				p.Metadata = md
			}
			if p.Name == nil && p.Model == nil && p.System == nil && p.Description == nil && p.Tools == nil && p.Metadata == nil {
				return &exitError{code: exitUsage, err: withUsage(cmd, "agents update: nothing to change")}
			}
			return c.withAgents(cmd, func(k *conn, as trove.AgentService) error {
				a, err := as.UpdateAgent(k.ctx, args[0], p)
				if err != nil {
					return err
				}
				return c.showAgent(a)
			})
		},
	}
	update.Flags().Int64Var(&ifVersion, "if-version", 0, "refuse unless the agent is still at this version")
	update.Flags().StringVar(&uName, "name", "", "a new name")
	update.Flags().StringVar(&uModel, "model", "", "a new model ID")
	update.Flags().StringVar(&uSystem, "system", "", "a new system prompt (\"\" clears it)")
	update.Flags().StringVar(&uDescription, "description", "", "a new description (\"\" clears it)")
	update.Flags().StringArrayVar(&uMeta, "metadata", nil, "KEY=VALUE sets a key, KEY= removes it (repeatable)")
	utf.register(update)

	archive := &cobra.Command{
		Use:   "archive AGENT",
		Short: "Archive an agent (one-way): new sessions cannot use it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withAgents(cmd, func(k *conn, as trove.AgentService) error {
				a, err := as.ArchiveAgent(k.ctx, args[0])
				if err != nil {
					return err
				}
				return c.showAgent(a)
			})
		},
	}

	versions := &cobra.Command{
		Use:   "versions AGENT",
		Short: "List an agent's versions, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withAgents(cmd, func(k *conn, as trove.AgentService) error {
				var all []trove.Agent
				p := trove.ListAgentVersionsParams{Limit: 100}
				for {
					page, err := as.ListAgentVersions(k.ctx, args[0], p)
					if err != nil {
						return err
					}
					all = append(all, page.Data...)
					if p.Cursor = page.NextPage; p.Cursor == "" {
						break
					}
				}
				return c.agentTable(all)
			})
		},
	}
	cmd.AddCommand(create, get, list, update, archive, versions)
	return cmd
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
