package core

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// Agent limits, as the API documents them.
const (
	maxAgentNameChars   = 256
	maxAgentDescChars   = 2048
	maxAgentSystemChars = 100000
	maxAgentTools       = 256 // tools across all toolsets: a toolset counts its 8
	maxModelIDChars     = 256
	maxCustomToolName   = 128
	maxInputSchemaBytes = 64 << 10
)

var customToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

var _ trove.AgentService = (*Service)(nil)

// invalidField returns EINVALID whose message starts with the field's name.
func invalidField(field, format string, args ...any) *trove.Error {
	return trove.Errorf(trove.EINVALID, "%s: %s", field, fmt.Sprintf(format, args...))
}

// notScoped refuses session and environment credentials.
func notScoped(p *trove.Principal, what string) error {
	if p.Environment != nil {
		return trove.Errorf(trove.EFORBIDDEN, "an environment key cannot %s; use a workspace API key", what)
	}
	return notSession(p, what)
}

// checkText checks a text field: valid UTF-8 of at most max characters,
// with no control characters other than newline, carriage return and tab
// when multiline.
func checkText(field, v string, min, max int, multiline bool) error {
	if !utf8.ValidString(v) {
		return invalidField(field, "must be valid UTF-8")
	}
	n := utf8.RuneCountInString(v)
	if n < min || n > max {
		if min > 0 {
			return invalidField(field, "must be %d to %d characters, got %d", min, max, n)
		}
		return invalidField(field, "must be at most %d characters, got %d", max, n)
	}
	for _, r := range v {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\r' || r == '\t')) {
			return invalidField(field, "must not contain control characters (found U+%04X)", r)
		}
	}
	return nil
}

// resolveModel validates and resolves a model config.
func resolveModel(p trove.AgentModelParams) (trove.AgentModel, error) {
	if err := checkText("model.id", p.ID, 1, maxModelIDChars, false); err != nil {
		return trove.AgentModel{}, err
	}
	m := trove.AgentModel(p)
	switch m.Speed {
	case "", trove.DefaultModelSpeed:
		m.Speed = trove.DefaultModelSpeed
	case "fast":
		return m, invalidField("model.speed", "Trove does not offer fast mode; use \"standard\"")
	default:
		return m, invalidField("model.speed", "must be \"standard\", got %q", m.Speed)
	}
	if m.Effort == "" {
		m.Effort = trove.DefaultModelEffort
	} else if !slices.Contains(trove.ModelEfforts, m.Effort) {
		return m, invalidField("model.effort", "must be one of %v, got %q", trove.ModelEfforts, m.Effort)
	}
	return m, nil
}

func checkPolicy(field string, p trove.PermissionPolicy) (trove.PermissionPolicy, error) {
	switch p {
	case trove.PolicyAlwaysAllow, trove.PolicyAlwaysAsk:
		return p, nil
	case "auto":
		return "", invalidField(field, "Trove does not run the \"auto\" permission policy; use always_allow or always_ask")
	}
	return "", invalidField(field, "must be always_allow or always_ask, got %q", p)
}

// resolveTools validates requested tools and resolves toolset configs.
func resolveTools(in []trove.AgentToolParams) ([]trove.AgentTool, error) {
	out := make([]trove.AgentTool, 0, len(in))
	count, toolsets := 0, 0
	customNames := map[string]bool{}
	for i, t := range in {
		f := fmt.Sprintf("tools[%d]", i)
		switch t.Type {
		case trove.ToolAgentToolset:
			toolsets++
			if toolsets > 1 {
				return nil, invalidField(f+".type", "an agent has at most one %s toolset", trove.ToolAgentToolset)
			}
			count += len(trove.ToolsetTools)
			def := trove.ToolConfig{Enabled: true, PermissionPolicy: trove.PolicyAlwaysAllow}
			if t.DefaultEnabled != nil {
				def.Enabled = *t.DefaultEnabled
			}
			if t.DefaultPolicy != "" {
				pol, err := checkPolicy(f+".default_config.permission_policy", t.DefaultPolicy)
				if err != nil {
					return nil, err
				}
				def.PermissionPolicy = pol
			}
			named := map[string]trove.ToolConfig{}
			for j, c := range t.Configs {
				cf := fmt.Sprintf("%s.configs[%d]", f, j)
				if !slices.Contains(trove.ToolsetTools, c.Name) {
					return nil, invalidField(cf+".name", "unknown tool %q; the toolset has %v", c.Name, trove.ToolsetTools)
				}
				if _, dup := named[c.Name]; dup {
					return nil, invalidField(cf+".name", "tool %q is configured twice", c.Name)
				}
				rc := trove.ToolConfig{Name: c.Name, Enabled: def.Enabled, PermissionPolicy: def.PermissionPolicy}
				if c.Enabled != nil {
					rc.Enabled = *c.Enabled
				}
				if c.PermissionPolicy != "" {
					pol, err := checkPolicy(cf+".permission_policy", c.PermissionPolicy)
					if err != nil {
						return nil, err
					}
					rc.PermissionPolicy = pol
				}
				if !slices.Contains(trove.WorkerTools, c.Name) && rc.Enabled {
					return nil, invalidField(cf, "Trove does not run %s (a hosted server tool); disable it with \"enabled\": false or leave it out", c.Name)
				}
				named[c.Name] = rc
			}
			tool := trove.AgentTool{Type: trove.ToolAgentToolset, DefaultConfig: def}
			for _, name := range trove.ToolsetTools {
				c, ok := named[name]
				if !ok && !slices.Contains(trove.WorkerTools, name) {
					c, ok = trove.ToolConfig{Name: name, Enabled: false, PermissionPolicy: def.PermissionPolicy}, true
				}
				if ok {
					tool.Configs = append(tool.Configs, c)
				}
			}
			out = append(out, tool)
		case trove.ToolCustom:
			count++
			if !customToolName.MatchString(t.Name) {
				return nil, invalidField(f+".name", "must be 1 to %d letters, digits, underscores or hyphens, got %q", maxCustomToolName, t.Name)
			}
			if customNames[t.Name] {
				return nil, invalidField(f+".name", "custom tool %q is defined twice", t.Name)
			}
			if slices.Contains(trove.ToolsetTools, t.Name) {
				return nil, invalidField(f+".name", "%q is the name of an agent toolset tool", t.Name)
			}
			customNames[t.Name] = true
			if err := checkText(f+".description", t.Description, 1, maxAgentSystemChars, true); err != nil {
				return nil, err
			}
			if len(t.InputSchema) > maxInputSchemaBytes {
				return nil, invalidField(f+".input_schema", "must be at most %d bytes", maxInputSchemaBytes)
			}
			var schema map[string]json.RawMessage
			if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema == nil {
				return nil, invalidField(f+".input_schema", "must be a JSON object")
			}
			var typ string
			if err := json.Unmarshal(schema["type"], &typ); err != nil || typ != "object" {
				return nil, invalidField(f+".input_schema.type", "must be \"object\"")
			}
			out = append(out, trove.AgentTool{Type: trove.ToolCustom, Name: t.Name, Description: t.Description,
				InputSchema: slices.Clone(t.InputSchema)})
		case "mcp_toolset":
			return nil, invalidField(f+".type", "Trove does not run MCP toolsets (mcp_toolset)")
		default:
			return nil, invalidField(f+".type", "must be %s or %s, got %q", trove.ToolAgentToolset, trove.ToolCustom, t.Type)
		}
	}
	if count > maxAgentTools {
		return nil, invalidField("tools", "at most %d tools across all toolsets, got %d", maxAgentTools, count)
	}
	return out, nil
}

// CreateAgent implements trove.AgentService.
func (s *Service) CreateAgent(ctx context.Context, p trove.CreateAgentParams) (*trove.Agent, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "manage agents"); err != nil {
		return nil, err
	}
	if err := checkText("name", p.Name, 1, maxAgentNameChars, false); err != nil {
		return nil, err
	}
	model, err := resolveModel(p.Model)
	if err != nil {
		return nil, err
	}
	if err := checkText("description", p.Description, 0, maxAgentDescChars, true); err != nil {
		return nil, err
	}
	if err := checkText("system", p.System, 0, maxAgentSystemChars, true); err != nil {
		return nil, err
	}
	tools, err := resolveTools(p.Tools)
	if err != nil {
		return nil, err
	}
	md := maps.Clone(p.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	if err := s.validateMetadata(md); err != nil {
		return nil, err
	}
	now := s.now()
	a := &trove.Agent{
		ID: trove.NewID(trove.PrefixAgent, now), WorkspaceID: pr.WorkspaceID, Version: 1,
		Name: p.Name, Description: p.Description, Model: model, System: p.System, Tools: tools, Metadata: md,
		CreatedAt: now, UpdatedAt: now,
	}
	if err := s.write(ctx, "CreateAgent", func(tx storage.Tx) error { return tx.AgentInsert(ctx, a) }); err != nil {
		return nil, err
	}
	return cloneAgent(a), nil
}

// GetAgent implements trove.AgentService.
func (s *Service) GetAgent(ctx context.Context, agentID string, version int64) (*trove.Agent, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "read agents"); err != nil {
		return nil, err
	}
	if version < 0 {
		return nil, invalidField("version", "must be at least 1")
	}
	var out *trove.Agent
	err = s.read(ctx, "GetAgent", func(tx storage.Tx) error {
		out, err = tx.AgentGet(ctx, pr.WorkspaceID, agentID, version)
		return err
	})
	if err != nil {
		return nil, agentNotFound(err, agentID, version)
	}
	return cloneAgent(out), nil
}

// GetAgentInternal reads an agent (at version, 0 for the current one) of
// workspaceID with no principal: for the session and runtime code in core
// that resolves a session's agent.
func (s *Service) GetAgentInternal(ctx context.Context, workspaceID, agentID string, version int64) (*trove.Agent, error) {
	var out *trove.Agent
	err := s.read(ctx, "GetAgent", func(tx storage.Tx) error {
		var err error
		out, err = tx.AgentGet(ctx, workspaceID, agentID, version)
		return err
	})
	if err != nil {
		return nil, agentNotFound(err, agentID, version)
	}
	return cloneAgent(out), nil
}

func agentNotFound(err error, id string, version int64) error {
	if trove.ErrorCode(err) != trove.ENOTFOUND {
		return err
	}
	if version > 0 {
		return trove.Errorf(trove.ENOTFOUND, "agent %s has no version %d", id, version)
	}
	return trove.Errorf(trove.ENOTFOUND, "agent %s not found", id)
}

// UpdateAgent implements trove.AgentService.
func (s *Service) UpdateAgent(ctx context.Context, agentID string, p trove.UpdateAgentParams) (*trove.Agent, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "manage agents"); err != nil {
		return nil, err
	}
	if p.Version < 0 {
		return nil, invalidField("version", "must be at least 1")
	}
	if p.Name != nil {
		if err := checkText("name", *p.Name, 1, maxAgentNameChars, false); err != nil {
			return nil, err
		}
	}
	var model *trove.AgentModel
	if p.Model != nil {
		m, err := resolveModel(*p.Model)
		if err != nil {
			return nil, err
		}
		model = &m
	}
	if p.Description != nil {
		if err := checkText("description", *p.Description, 0, maxAgentDescChars, true); err != nil {
			return nil, err
		}
	}
	if p.System != nil {
		if err := checkText("system", *p.System, 0, maxAgentSystemChars, true); err != nil {
			return nil, err
		}
	}
	var tools []trove.AgentTool
	if p.Tools != nil {
		if tools, err = resolveTools(*p.Tools); err != nil {
			return nil, err
		}
	}
	var out *trove.Agent
	err = s.write(ctx, "UpdateAgent", func(tx storage.Tx) error {
		cur, err := tx.AgentLock(ctx, pr.WorkspaceID, agentID)
		if err != nil {
			return agentNotFound(err, agentID, 0)
		}
		if p.Version != 0 && p.Version != cur.Version {
			return trove.Errorf(trove.ECONFLICT, "version: agent %s is at version %d, not %d; get it again and retry", agentID, cur.Version, p.Version)
		}
		if cur.ArchivedAt != nil {
			return trove.Errorf(trove.EINVALID, "agent %s is archived; archived agents cannot be updated", agentID)
		}
		next := cloneAgent(cur)
		if p.Name != nil {
			next.Name = *p.Name
		}
		if p.Description != nil {
			next.Description = *p.Description
		}
		if model != nil {
			next.Model = *model
		}
		if p.System != nil {
			next.System = *p.System
		}
		if p.Tools != nil {
			next.Tools = tools
		}
		for k, v := range p.Metadata {
			if v == nil {
				delete(next.Metadata, k)
			} else {
				next.Metadata[k] = *v
			}
		}
		if err := s.validateMetadata(next.Metadata); err != nil {
			return err
		}
		if sameAgentConfig(cur, next) {
			out = cur
			return nil
		}
		next.Version = cur.Version + 1
		next.UpdatedAt = s.now()
		if err := tx.AgentUpdate(ctx, next, true); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cloneAgent(out), nil
}

// sameAgentConfig reports whether a and b hold the same configuration.
func sameAgentConfig(a, b *trove.Agent) bool {
	ta, _ := storage.EncodeAgentTools(a.Tools)
	tb, _ := storage.EncodeAgentTools(b.Tools)
	return a.Name == b.Name && a.Description == b.Description && a.Model == b.Model && a.System == b.System &&
		ta == tb && maps.Equal(a.Metadata, b.Metadata)
}

// ListAgents implements trove.AgentService.
func (s *Service) ListAgents(ctx context.Context, p trove.ListAgentsParams) (*trove.Page[trove.Agent], error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "read agents"); err != nil {
		return nil, err
	}
	limit, err := s.checkLimit(p.Limit, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	before, err := decodePosition(p.Cursor)
	if err != nil {
		return nil, err
	}
	var rows []trove.Agent
	err = s.read(ctx, "ListAgents", func(tx storage.Tx) error {
		rows, err = tx.AgentList(ctx, storage.AgentListParams{WorkspaceID: pr.WorkspaceID, IncludeArchived: p.IncludeArchived,
			CreatedAt: p.CreatedAt, Before: before, Limit: limit + 1})
		return err
	})
	if err != nil {
		return nil, err
	}
	return positionPage(rows, limit, cloneAgent, func(a *trove.Agent) (time.Time, string) { return a.CreatedAt, a.ID }), nil
}

// ArchiveAgent implements trove.AgentService.
func (s *Service) ArchiveAgent(ctx context.Context, agentID string) (*trove.Agent, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "manage agents"); err != nil {
		return nil, err
	}
	var out *trove.Agent
	err = s.write(ctx, "ArchiveAgent", func(tx storage.Tx) error {
		a, err := tx.AgentLock(ctx, pr.WorkspaceID, agentID)
		if err != nil {
			return agentNotFound(err, agentID, 0)
		}
		if a.ArchivedAt == nil {
			now := s.now()
			a.ArchivedAt, a.UpdatedAt = &now, now
			if err := tx.AgentUpdate(ctx, a, false); err != nil {
				return err
			}
		}
		out = a
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cloneAgent(out), nil
}

const kindAgentVersion = "av"

// ListAgentVersions implements trove.AgentService.
func (s *Service) ListAgentVersions(ctx context.Context, agentID string, p trove.ListAgentVersionsParams) (*trove.Page[trove.Agent], error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "read agents"); err != nil {
		return nil, err
	}
	limit, err := s.checkLimit(p.Limit, trove.ViewBasic)
	if err != nil {
		return nil, err
	}
	var before int64
	if p.Cursor != "" {
		c, err := decodeCursor(p.Cursor, kindAgentVersion)
		if err != nil {
			return nil, err
		}
		if before, err = strconv.ParseInt(c.I, 10, 64); err != nil || before < 1 {
			return nil, errBadCursor()
		}
	}
	var rows []trove.Agent
	err = s.read(ctx, "ListAgentVersions", func(tx storage.Tx) error {
		if _, err := tx.AgentGet(ctx, pr.WorkspaceID, agentID, 0); err != nil {
			return agentNotFound(err, agentID, 0)
		}
		rows, err = tx.AgentVersionList(ctx, agentID, before, limit+1)
		return err
	})
	if err != nil {
		return nil, err
	}
	page := &trove.Page[trove.Agent]{Data: []trove.Agent{}}
	for i := range rows {
		if i == limit {
			page.NextPage = encodeCursor(cursorJSON{K: kindAgentVersion, I: strconv.FormatInt(page.Data[limit-1].Version, 10)})
			break
		}
		page.Data = append(page.Data, *cloneAgent(&rows[i]))
	}
	return page, nil
}

// cloneAgent returns a deep copy of a, Metadata and Tools never nil.
func cloneAgent(a *trove.Agent) *trove.Agent {
	c := *a
	c.Metadata = maps.Clone(a.Metadata)
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	c.Tools = make([]trove.AgentTool, len(a.Tools))
	for i, t := range a.Tools {
		t.Configs = slices.Clone(t.Configs)
		t.InputSchema = slices.Clone(t.InputSchema)
		c.Tools[i] = t
	}
	if a.ArchivedAt != nil {
		t := *a.ArchivedAt
		c.ArchivedAt = &t
	}
	return &c
}
