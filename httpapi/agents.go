package httpapi

import (
	stdjson "encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/trovehq/trove"
)

// Wire shapes of /v1/agents (the SDK's betaagent.go, betaagentversion.go).

type wirePolicy struct {
	Type string `json:"type"`
}

type wireToolConfig struct {
	Type             string     `json:"type,omitempty"`
	Name             string     `json:"name,omitempty"`
	Enabled          bool       `json:"enabled"`
	PermissionPolicy wirePolicy `json:"permission_policy"`
}

type wireAgentTool struct {
	Type          string             `json:"type"`
	DefaultConfig *wireToolConfig    `json:"default_config,omitempty"`
	Configs       []wireToolConfig   `json:"configs,omitempty"`
	Name          string             `json:"name,omitempty"`
	Description   string             `json:"description,omitempty"`
	InputSchema   stdjson.RawMessage `json:"input_schema,omitempty"`
}

type wireAgentModel struct {
	ID     string     `json:"id"`
	Speed  string     `json:"speed"`
	Effort wirePolicy `json:"effort"`
}

type wireAgent struct {
	Type              string            `json:"type"`
	ID                string            `json:"id"`
	Version           int64             `json:"version"`
	Name              string            `json:"name"`
	Description       *string           `json:"description"`
	Model             wireAgentModel    `json:"model"`
	System            *string           `json:"system"`
	Tools             []wireAgentTool   `json:"tools"`
	MCPServers        []struct{}        `json:"mcp_servers"`
	Skills            []struct{}        `json:"skills"`
	Metadata          map[string]string `json:"metadata"`
	CreatedAt         string            `json:"created_at"`
	UpdatedAt         string            `json:"updated_at"`
	ArchivedAt        *string           `json:"archived_at"`
	Multiagent        *struct{}         `json:"multiagent"`
	ExecutionIdentity wirePolicy        `json:"execution_identity"`
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func agentToWire(a *trove.Agent) wireAgent {
	w := wireAgent{
		Type: "agent", ID: a.ID, Version: a.Version, Name: a.Name, Description: nilIfEmpty(a.Description),
		Model:  wireAgentModel{ID: a.Model.ID, Speed: a.Model.Speed, Effort: wirePolicy{Type: a.Model.Effort}},
		System: nilIfEmpty(a.System), Tools: make([]wireAgentTool, 0, len(a.Tools)),
		MCPServers: []struct{}{}, Skills: []struct{}{}, Metadata: a.Metadata,
		CreatedAt: formatTime(a.CreatedAt), UpdatedAt: formatTime(a.UpdatedAt), ArchivedAt: formatTimePtr(a.ArchivedAt),
		ExecutionIdentity: wirePolicy{Type: "service_account"},
	}
	if w.Metadata == nil {
		w.Metadata = map[string]string{}
	}
	for _, t := range a.Tools {
		wt := wireAgentTool{Type: t.Type}
		switch t.Type {
		case trove.ToolAgentToolset:
			wt.DefaultConfig = &wireToolConfig{Enabled: t.DefaultConfig.Enabled, PermissionPolicy: wirePolicy{Type: string(t.DefaultConfig.PermissionPolicy)}}
			wt.Configs = make([]wireToolConfig, 0, len(t.Configs))
			for _, c := range t.Configs {
				wt.Configs = append(wt.Configs, wireToolConfig{Type: c.Name, Name: c.Name, Enabled: c.Enabled,
					PermissionPolicy: wirePolicy{Type: string(c.PermissionPolicy)}})
			}
		case trove.ToolCustom:
			wt.Name, wt.Description, wt.InputSchema = t.Name, t.Description, stdjson.RawMessage(t.InputSchema)
		}
		w.Tools = append(w.Tools, wt)
	}
	return w
}

// Request bodies. Members Trove cannot honour are decoded raw and refused
// by name unless empty or null.

type wireAgentBody struct {
	Version           *int64                    `json:"version"`
	Name              *string                   `json:"name"`
	Description       jsontext.Value            `json:"description"`
	Model             jsontext.Value            `json:"model"`
	System            jsontext.Value            `json:"system"`
	Tools             jsontext.Value            `json:"tools"`
	MCPServers        jsontext.Value            `json:"mcp_servers"`
	Skills            jsontext.Value            `json:"skills"`
	Metadata          map[string]jsontext.Value `json:"metadata"`
	Multiagent        jsontext.Value            `json:"multiagent"`
	ExecutionIdentity jsontext.Value            `json:"execution_identity"`
}

type wireModelParam struct {
	ID           *string        `json:"id"`
	Speed        *string        `json:"speed"`
	Effort       jsontext.Value `json:"effort"`
	InferenceGeo *string        `json:"inference_geo"`
}

type wireToolConfigParam struct {
	Type             *string        `json:"type"`
	Name             *string        `json:"name"`
	Enabled          *bool          `json:"enabled"`
	PermissionPolicy *wirePolicy    `json:"permission_policy"`
	AllowedDomains   jsontext.Value `json:"allowed_domains"`
	BlockedDomains   jsontext.Value `json:"blocked_domains"`
	MaxContentTokens jsontext.Value `json:"max_content_tokens"`
	URLSources       jsontext.Value `json:"url_sources"`
	UserLocation     jsontext.Value `json:"user_location"`
	MaxUses          jsontext.Value `json:"max_uses"`
}

type wireToolParam struct {
	Type          *string `json:"type"`
	DefaultConfig *struct {
		Enabled          *bool       `json:"enabled"`
		PermissionPolicy *wirePolicy `json:"permission_policy"`
	} `json:"default_config"`
	Configs       []wireToolConfigParam `json:"configs"`
	Name          *string               `json:"name"`
	Description   *string               `json:"description"`
	InputSchema   jsontext.Value        `json:"input_schema"`
	MCPServerName jsontext.Value        `json:"mcp_server_name"`
}

// emptyJSON reports whether v is absent, null, [] or {}.
func emptyJSON(v jsontext.Value) bool {
	switch strings.Join(strings.Fields(string(v)), "") {
	case "", "null", "[]", "{}":
		return true
	}
	return false
}

func refuseField(field, what string) error {
	return trove.Errorf(trove.EINVALID, "%s: Trove does not run %s; leave it out", field, what)
}

func decodeModel(v jsontext.Value) (*trove.AgentModelParams, error) {
	switch v.Kind() {
	case '"':
		var id string
		if err := json.Unmarshal(v, &id); err != nil {
			return nil, trove.Errorf(trove.EINVALID, "model must be a string or an object with id")
		}
		return &trove.AgentModelParams{ID: id}, nil
	case '{':
		var m wireModelParam
		if err := json.Unmarshal(v, &m, decodeOptions); err != nil {
			return nil, prefixErr("model", jsonError(err))
		}
		if m.ID == nil {
			return nil, trove.Errorf(trove.EINVALID, "model.id is required")
		}
		p := &trove.AgentModelParams{ID: *m.ID}
		if m.Speed != nil {
			p.Speed = *m.Speed
		}
		if m.InferenceGeo != nil && *m.InferenceGeo != "" {
			return nil, refuseField("model.inference_geo", "inference geography routing")
		}
		switch m.Effort.Kind() {
		case 0, 'n':
		case '"':
			_ = json.Unmarshal(m.Effort, &p.Effort)
		case '{':
			var e wirePolicy
			if err := json.Unmarshal(m.Effort, &e, decodeOptions); err != nil {
				return nil, prefixErr("model.effort", jsonError(err))
			}
			p.Effort = e.Type
		default:
			return nil, trove.Errorf(trove.EINVALID, "model.effort must be a level string or an object with type")
		}
		return p, nil
	}
	return nil, trove.Errorf(trove.EINVALID, "model must be a string or an object with id")
}

// prefixErr names the member a nested decoding error is about.
func prefixErr(field string, err error) error {
	if te, ok := err.(*trove.Error); ok {
		return trove.Errorf(te.Code, "%s: %s", field, te.Message)
	}
	return err
}

func decodeTools(v jsontext.Value) ([]trove.AgentToolParams, error) {
	if v.Kind() == 'n' {
		return []trove.AgentToolParams{}, nil
	}
	var raw []jsontext.Value
	if err := json.Unmarshal(v, &raw); err != nil {
		return nil, trove.Errorf(trove.EINVALID, "tools must be an array")
	}
	out := make([]trove.AgentToolParams, 0, len(raw))
	for i, rv := range raw {
		f := "tools[" + strconv.Itoa(i) + "]"
		var t wireToolParam
		if err := json.Unmarshal(rv, &t, decodeOptions); err != nil {
			return nil, prefixErr(f, jsonError(err))
		}
		if t.Type == nil {
			return nil, trove.Errorf(trove.EINVALID, "%s.type is required", f)
		}
		p := trove.AgentToolParams{Type: *t.Type}
		switch *t.Type {
		case trove.ToolAgentToolset:
			if t.Name != nil || t.Description != nil || len(t.InputSchema) > 0 || len(t.MCPServerName) > 0 {
				return nil, trove.Errorf(trove.EINVALID, "%s: an agent toolset takes only type, default_config and configs", f)
			}
			if t.DefaultConfig != nil {
				p.DefaultEnabled = t.DefaultConfig.Enabled
				if t.DefaultConfig.PermissionPolicy != nil {
					p.DefaultPolicy = trove.PermissionPolicy(t.DefaultConfig.PermissionPolicy.Type)
				}
			}
			for j, c := range t.Configs {
				cf := f + ".configs[" + strconv.Itoa(j) + "]"
				if c.Name == nil {
					return nil, trove.Errorf(trove.EINVALID, "%s.name is required", cf)
				}
				if c.Type != nil && *c.Type != *c.Name {
					return nil, trove.Errorf(trove.EINVALID, "%s.type must equal its name %q", cf, *c.Name)
				}
				for _, opt := range []struct {
					name string
					v    jsontext.Value
				}{{"allowed_domains", c.AllowedDomains}, {"blocked_domains", c.BlockedDomains}, {"max_content_tokens", c.MaxContentTokens},
					{"url_sources", c.URLSources}, {"user_location", c.UserLocation}, {"max_uses", c.MaxUses}} {
					if len(opt.v) > 0 && opt.v.Kind() != 'n' {
						return nil, refuseField(cf+"."+opt.name, "web_fetch or web_search")
					}
				}
				tc := trove.ToolConfigParams{Name: *c.Name, Enabled: c.Enabled}
				if c.PermissionPolicy != nil {
					tc.PermissionPolicy = trove.PermissionPolicy(c.PermissionPolicy.Type)
					if tc.PermissionPolicy == "" {
						return nil, trove.Errorf(trove.EINVALID, "%s.permission_policy.type is required", cf)
					}
				}
				p.Configs = append(p.Configs, tc)
			}
		case trove.ToolCustom:
			if t.DefaultConfig != nil || t.Configs != nil || len(t.MCPServerName) > 0 {
				return nil, trove.Errorf(trove.EINVALID, "%s: a custom tool takes only type, name, description and input_schema", f)
			}
			if t.Name == nil {
				return nil, trove.Errorf(trove.EINVALID, "%s.name is required", f)
			}
			if t.Description == nil {
				return nil, trove.Errorf(trove.EINVALID, "%s.description is required", f)
			}
			if len(t.InputSchema) == 0 {
				return nil, trove.Errorf(trove.EINVALID, "%s.input_schema is required", f)
			}
			p.Name, p.Description, p.InputSchema = *t.Name, *t.Description, []byte(t.InputSchema)
		case "mcp_toolset":
			return nil, refuseField(f, "MCP toolsets (mcp_toolset)")
		default:
			return nil, trove.Errorf(trove.EINVALID, "%s.type must be %s or custom, got %q", f, trove.ToolAgentToolset, *t.Type)
		}
		out = append(out, p)
	}
	return out, nil
}

// refuseUnsupported refuses the members of an agent body Trove cannot run.
func (b *wireAgentBody) refuseUnsupported() error {
	if !emptyJSON(b.MCPServers) {
		return refuseField("mcp_servers", "MCP servers")
	}
	if !emptyJSON(b.Skills) {
		return refuseField("skills", "skills")
	}
	if !emptyJSON(b.Multiagent) {
		return refuseField("multiagent", "multiagent orchestration (callable agents)")
	}
	if !emptyJSON(b.ExecutionIdentity) {
		var id wirePolicy
		if err := json.Unmarshal(b.ExecutionIdentity, &id); err != nil || id.Type != "service_account" {
			return refuseField("execution_identity", "execution identities other than service_account")
		}
	}
	return nil
}

func (s *Server) createAgent(w http.ResponseWriter, r *http.Request) error {
	var body wireAgentBody
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	if body.Version != nil {
		return trove.Errorf(trove.EINVALID, "version: unknown field on create")
	}
	if err := body.refuseUnsupported(); err != nil {
		return err
	}
	if body.Name == nil {
		return trove.Errorf(trove.EINVALID, "name is required")
	}
	if len(body.Model) == 0 || body.Model.Kind() == 'n' {
		return trove.Errorf(trove.EINVALID, "model is required")
	}
	p := trove.CreateAgentParams{Name: *body.Name}
	m, err := decodeModel(body.Model)
	if err != nil {
		return err
	}
	p.Model = *m
	if p.Description, _, err = nullableString("description", body.Description); err != nil {
		return err
	}
	if p.System, _, err = nullableString("system", body.System); err != nil {
		return err
	}
	if len(body.Tools) > 0 {
		if p.Tools, err = decodeTools(body.Tools); err != nil {
			return err
		}
	}
	if body.Metadata != nil {
		p.Metadata = map[string]string{}
		for k, v := range body.Metadata {
			var sv string
			if err := json.Unmarshal(v, &sv); err != nil {
				return trove.Errorf(trove.EINVALID, "metadata values must be strings (key %q)", k)
			}
			p.Metadata[k] = sv
		}
	}
	a, err := s.agents.CreateAgent(r.Context(), p)
	if err != nil {
		return err
	}
	out := agentToWire(a)
	return s.ok(w, &out)
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) error {
	var version int64
	if v := queryOf(w, r).Get("version"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return trove.Errorf(trove.EINVALID, "version must be a positive integer, got %q", v)
		}
		version = n
	}
	a, err := s.agents.GetAgent(r.Context(), r.PathValue("agent_id"), version)
	if err != nil {
		return err
	}
	out := agentToWire(a)
	return s.ok(w, &out)
}

func (s *Server) updateAgent(w http.ResponseWriter, r *http.Request) error {
	var body wireAgentBody
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	if err := body.refuseUnsupported(); err != nil {
		return err
	}
	var p trove.UpdateAgentParams
	if body.Version != nil {
		if *body.Version < 1 {
			return trove.Errorf(trove.EINVALID, "version must be at least 1")
		}
		p.Version = *body.Version
	}
	p.Name = body.Name
	if len(body.Model) > 0 {
		if body.Model.Kind() == 'n' {
			return trove.Errorf(trove.EINVALID, "model cannot be cleared")
		}
		m, err := decodeModel(body.Model)
		if err != nil {
			return err
		}
		p.Model = m
	}
	if d, set, err := nullableString("description", body.Description); err != nil {
		return err
	} else if set {
		p.Description = &d
	}
	if sys, set, err := nullableString("system", body.System); err != nil {
		return err
	} else if set {
		p.System = &sys
	}
	if len(body.Tools) > 0 {
		tools, err := decodeTools(body.Tools)
		if err != nil {
			return err
		}
		p.Tools = &tools
	}
	if body.Metadata != nil {
		md, err := metadataPatch(body.Metadata)
		if err != nil {
			return err
		}
		p.Metadata = md
	}
	a, err := s.agents.UpdateAgent(r.Context(), r.PathValue("agent_id"), p)
	if err != nil {
		return err
	}
	out := agentToWire(a)
	return s.ok(w, &out)
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	arch, err := queryBool(q, "include_archived")
	if err != nil {
		return err
	}
	tr, err := queryTimeRange(q)
	if err != nil {
		return err
	}
	page, err := s.agents.ListAgents(r.Context(), trove.ListAgentsParams{Limit: limit, Cursor: q.Get("page"), IncludeArchived: arch, CreatedAt: tr})
	if err != nil {
		return err
	}
	return s.agentPage(w, page)
}

func (s *Server) agentPage(w http.ResponseWriter, page *trove.Page[trove.Agent]) error {
	out := wirePage[wireAgent]{Data: make([]wireAgent, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i := range page.Data {
		out.Data[i] = agentToWire(&page.Data[i])
	}
	return s.ok(w, &out)
}

func (s *Server) archiveAgent(w http.ResponseWriter, r *http.Request) error {
	if err := s.decodeBody(w, r, &struct{}{}, true); err != nil {
		return err
	}
	a, err := s.agents.ArchiveAgent(r.Context(), r.PathValue("agent_id"))
	if err != nil {
		return err
	}
	out := agentToWire(a)
	return s.ok(w, &out)
}

func (s *Server) listAgentVersions(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	page, err := s.agents.ListAgentVersions(r.Context(), r.PathValue("agent_id"), trove.ListAgentVersionsParams{Limit: limit, Cursor: q.Get("page")})
	if err != nil {
		return err
	}
	return s.agentPage(w, page)
}

// checkManagedBeta requires managed-agents-2026-04-01 among the
// anthropic-beta values (the SDK sends it on every agents, environments and
// work call).
func checkManagedBeta(h http.Header) error {
	for _, line := range h.Values("Anthropic-Beta") {
		for v := range strings.SplitSeq(line, ",") {
			if strings.TrimSpace(v) == BetaManagedAgents {
				return nil
			}
		}
	}
	return trove.Errorf(trove.EINVALID, "this call needs the anthropic-beta header %s", BetaManagedAgents)
}
