package trove

import (
	"context"
	"slices"
	"time"
)

// Agent tool types (AgentTool.Type).
const (
	// ToolAgentToolset is the built-in agent toolset, run by a self-hosted
	// environment's worker (the official SDK's tools/agenttoolset).
	ToolAgentToolset = "agent_toolset_20260401"
	// ToolCustom is a tool the API client runs: the agent's call becomes an
	// agent.custom_tool_use event and the client answers with a
	// user.custom_tool_result event.
	ToolCustom = "custom"
)

// Tool names of the agent toolset, in the order the API lists them.
const (
	ToolBash      = "bash"
	ToolEdit      = "edit"
	ToolRead      = "read"
	ToolWrite     = "write"
	ToolGlob      = "glob"
	ToolGrep      = "grep"
	ToolWebFetch  = "web_fetch"
	ToolWebSearch = "web_search"
)

// ToolsetTools lists every tool name of agent_toolset_20260401.
var ToolsetTools = []string{ToolBash, ToolEdit, ToolRead, ToolWrite, ToolGlob, ToolGrep, ToolWebFetch, ToolWebSearch}

// WorkerTools lists the toolset tools Trove can run: the ones a self-hosted
// worker executes. web_fetch and web_search are hosted server tools that
// Trove does not run: they are always resolved to disabled, and a request
// that enables one is refused.
var WorkerTools = []string{ToolBash, ToolEdit, ToolRead, ToolWrite, ToolGlob, ToolGrep}

// PermissionPolicy says whether a tool call runs at once or waits for the
// user's confirmation.
type PermissionPolicy string

const (
	// PolicyAlwaysAllow runs tool calls without asking (the toolset default).
	PolicyAlwaysAllow PermissionPolicy = "always_allow"
	// PolicyAlwaysAsk pauses the session for a user.tool_confirmation event
	// before each call.
	PolicyAlwaysAsk PermissionPolicy = "always_ask"
)

// DefaultModelSpeed and DefaultModelEffort are what an agent's model config
// resolves to when the request leaves them out.
const (
	DefaultModelSpeed  = "standard"
	DefaultModelEffort = "high"
)

// ModelEfforts are the accepted values of AgentModel.Effort.
var ModelEfforts = []string{"low", "medium", "high", "xhigh", "max"}

// AgentModel is an agent's model configuration, resolved (Speed and Effort
// always set).
type AgentModel struct {
	ID     string // e.g. "claude-sonnet-4-6"; any non-empty model ID is accepted
	Speed  string // "standard" (Trove does not offer "fast")
	Effort string // one of ModelEfforts
}

// ToolConfig is the resolved configuration of one toolset tool, or the
// toolset's default.
type ToolConfig struct {
	Name             string // a ToolsetTools name; "" for the default config
	Enabled          bool
	PermissionPolicy PermissionPolicy
}

// AgentTool is one entry of an agent's tools: an agent toolset or a custom
// tool, as Type says.
type AgentTool struct {
	Type string // ToolAgentToolset or ToolCustom

	// For ToolAgentToolset: the resolved default, and one resolved config
	// per tool that differs from it or was named in the request, in
	// ToolsetTools order. web_fetch and web_search always appear, disabled.
	DefaultConfig ToolConfig
	Configs       []ToolConfig

	// For ToolCustom.
	Name        string // 1-128 of [a-zA-Z0-9_-], unique among the agent's custom tools
	Description string // non-empty
	InputSchema []byte // a JSON object whose "type" is "object", kept byte for byte
}

// Tool returns the resolved configuration of the toolset tool name in a
// ToolAgentToolset entry: its own config when present, else the default.
func (t AgentTool) Tool(name string) ToolConfig {
	for _, c := range t.Configs {
		if c.Name == name {
			return c
		}
	}
	d := t.DefaultConfig
	d.Name = name
	if !slices.Contains(WorkerTools, name) {
		d.Enabled = false
	}
	return d
}

// Agent is a versioned agent configuration. Every change through
// UpdateAgent makes a new immutable version (Version+1); GetAgent can read
// any earlier version. Archiving is one-way, keeps the version, and stops
// new sessions from using the agent.
type Agent struct {
	ID          string // agent_…
	WorkspaceID string
	Version     int64 // starts at 1
	Name        string
	Description string // "" when unset
	Model       AgentModel
	System      string // "" when unset
	Tools       []AgentTool
	Metadata    map[string]string // empty, never nil, in results
	CreatedAt   time.Time         // of the agent (version 1)
	UpdatedAt   time.Time         // when this version was made, or when archived
	ArchivedAt  *time.Time
}

// EnabledTools returns the toolset tools the agent may call (the worker
// runs them), in ToolsetTools order, with their permission policies; empty
// when the agent has no toolset.
func (a *Agent) EnabledTools() []ToolConfig {
	var out []ToolConfig
	for _, t := range a.Tools {
		if t.Type != ToolAgentToolset {
			continue
		}
		for _, name := range WorkerTools {
			if c := t.Tool(name); c.Enabled {
				out = append(out, c)
			}
		}
	}
	return out
}

// CustomTools returns the agent's custom tools in order.
func (a *Agent) CustomTools() []AgentTool {
	var out []AgentTool
	for _, t := range a.Tools {
		if t.Type == ToolCustom {
			out = append(out, t)
		}
	}
	return out
}

// ToolConfigParams is a requested toolset tool config; nil fields take the
// toolset default.
type ToolConfigParams struct {
	Name             string
	Enabled          *bool
	PermissionPolicy PermissionPolicy // "" means the default's
}

// AgentToolParams is a requested tool. For ToolAgentToolset DefaultEnabled
// (nil: true) and DefaultPolicy ("": always_allow) give the default config
// and Configs the per-tool overrides (each name at most once). For
// ToolCustom Name, Description and InputSchema are required.
type AgentToolParams struct {
	Type           string
	DefaultEnabled *bool
	DefaultPolicy  PermissionPolicy
	Configs        []ToolConfigParams
	Name           string
	Description    string
	InputSchema    []byte
}

// AgentModelParams is a requested model config: ID required, Speed ""
// means standard, Effort "" means the default (create) or unchanged
// (update: the whole model is replaced, so "" means the default too).
type AgentModelParams struct {
	ID     string
	Speed  string
	Effort string
}

// CreateAgentParams creates an agent at version 1.
type CreateAgentParams struct {
	Name        string // 1-256 characters
	Model       AgentModelParams
	Description string // at most 2,048 characters
	System      string // at most 100,000 characters
	Tools       []AgentToolParams
	Metadata    map[string]string
}

// UpdateAgentParams changes an agent. Nil fields are unchanged. Tools, when
// non-nil, replaces the whole list (an empty slice clears it). Metadata is
// a merge patch: a key mapped to nil is removed. Version, when non-zero, is
// a precondition: the agent's current version must equal it.
type UpdateAgentParams struct {
	Version     int64
	Name        *string
	Description *string
	Model       *AgentModelParams
	System      *string
	Tools       *[]AgentToolParams
	Metadata    map[string]*string
}

// ListAgentsParams filters and pages agents, newest first.
type ListAgentsParams struct {
	Limit           int // 0 means the default (20), at most 100
	Cursor          string
	IncludeArchived bool
	CreatedAt       TimeRange
}

// ListAgentVersionsParams pages an agent's versions, newest first.
type ListAgentVersionsParams struct {
	Limit  int
	Cursor string
}

// AgentService manages agents. Every method acts within the workspace of
// the Principal carried by ctx; another workspace's agents are ENOTFOUND.
// Session and environment credentials get EFORBIDDEN.
type AgentService interface {
	// CreateAgent validates and resolves p (EINVALID naming the field for a
	// bad name, model, tool, limit or metadata) and stores version 1.
	CreateAgent(ctx context.Context, p CreateAgentParams) (*Agent, error)
	// GetAgent returns the agent at version (0: its current version),
	// archived agents too; ENOTFOUND for an unknown agent or version.
	GetAgent(ctx context.Context, agentID string, version int64) (*Agent, error)
	// UpdateAgent stores a new version holding the change and returns it; a
	// change that leaves every field as it is returns the current version
	// unchanged. ECONFLICT when p.Version is set and is not the current
	// version; EINVALID on an archived agent or for bad input.
	UpdateAgent(ctx context.Context, agentID string, p UpdateAgentParams) (*Agent, error)
	// ListAgents lists current versions, newest agent first.
	ListAgents(ctx context.Context, p ListAgentsParams) (*Page[Agent], error)
	// ArchiveAgent is one-way and idempotent; it does not make a version.
	ArchiveAgent(ctx context.Context, agentID string) (*Agent, error)
	// ListAgentVersions lists every version of the agent, newest first.
	ListAgentVersions(ctx context.Context, agentID string, p ListAgentVersionsParams) (*Page[Agent], error)
}
