package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/trovehq/trove"
)

var (
	_ trove.AgentService       = (*Client)(nil)
	_ trove.EnvironmentService = (*Client)(nil)
)

// Agents and environments over the wire, for the CLI's remote targets.

func agentFromWire(w *wireAgent) *trove.Agent {
	a := &trove.Agent{ID: w.ID, Version: w.Version, Name: w.Name, Metadata: w.Metadata,
		Model:     trove.AgentModel{ID: w.Model.ID, Speed: w.Model.Speed, Effort: w.Model.Effort.Type},
		CreatedAt: parseTime(w.CreatedAt), UpdatedAt: parseTime(w.UpdatedAt), ArchivedAt: parseTimePtr(w.ArchivedAt)}
	if w.Description != nil {
		a.Description = *w.Description
	}
	if w.System != nil {
		a.System = *w.System
	}
	if a.Metadata == nil {
		a.Metadata = map[string]string{}
	}
	for _, t := range w.Tools {
		tool := trove.AgentTool{Type: t.Type, Name: t.Name, Description: t.Description, InputSchema: []byte(t.InputSchema)}
		if t.DefaultConfig != nil {
			tool.DefaultConfig = trove.ToolConfig{Enabled: t.DefaultConfig.Enabled, PermissionPolicy: trove.PermissionPolicy(t.DefaultConfig.PermissionPolicy.Type)}
		}
		for _, c := range t.Configs {
			tool.Configs = append(tool.Configs, trove.ToolConfig{Name: c.Name, Enabled: c.Enabled, PermissionPolicy: trove.PermissionPolicy(c.PermissionPolicy.Type)})
		}
		a.Tools = append(a.Tools, tool)
	}
	return a
}

func parseTimePtr(s *string) *time.Time {
	if s == nil || *s == "" {
		return nil
	}
	t := parseTime(*s)
	return &t
}

func toolsToWire(tools []trove.AgentToolParams) []map[string]any {
	out := make([]map[string]any, 0, len(tools))
	for _, t := range tools {
		m := map[string]any{"type": t.Type}
		switch t.Type {
		case trove.ToolCustom:
			m["name"], m["description"], m["input_schema"] = t.Name, t.Description, json.RawMessage(t.InputSchema)
		default:
			dc := map[string]any{}
			if t.DefaultEnabled != nil {
				dc["enabled"] = *t.DefaultEnabled
			}
			if t.DefaultPolicy != "" {
				dc["permission_policy"] = map[string]string{"type": string(t.DefaultPolicy)}
			}
			if len(dc) > 0 {
				m["default_config"] = dc
			}
			var cs []map[string]any
			for _, c := range t.Configs {
				cm := map[string]any{"name": c.Name}
				if c.Enabled != nil {
					cm["enabled"] = *c.Enabled
				}
				if c.PermissionPolicy != "" {
					cm["permission_policy"] = map[string]string{"type": string(c.PermissionPolicy)}
				}
				cs = append(cs, cm)
			}
			if cs != nil {
				m["configs"] = cs
			}
		}
		out = append(out, m)
	}
	return out
}

func modelToWire(m trove.AgentModelParams) map[string]any {
	out := map[string]any{"id": m.ID}
	if m.Speed != "" {
		out["speed"] = m.Speed
	}
	if m.Effort != "" {
		out["effort"] = m.Effort
	}
	return out
}

func (c *Client) agentCall(ctx context.Context, method, path string, q url.Values, in any) (*trove.Agent, error) {
	var out wireAgent
	if _, err := c.do(ctx, method, path, q, in, &out); err != nil {
		return nil, err
	}
	return agentFromWire(&out), nil
}

// CreateAgent creates an agent (POST /v1/agents).
func (c *Client) CreateAgent(ctx context.Context, p trove.CreateAgentParams) (*trove.Agent, error) {
	body := map[string]any{"name": p.Name, "model": modelToWire(p.Model)}
	if p.Description != "" {
		body["description"] = p.Description
	}
	if p.System != "" {
		body["system"] = p.System
	}
	if p.Tools != nil {
		body["tools"] = toolsToWire(p.Tools)
	}
	if p.Metadata != nil {
		body["metadata"] = p.Metadata
	}
	return c.agentCall(ctx, http.MethodPost, "/v1/agents", nil, body)
}

// GetAgent reads an agent, at version when it is not 0.
func (c *Client) GetAgent(ctx context.Context, agentID string, version int64) (*trove.Agent, error) {
	var q url.Values
	if version != 0 {
		q = url.Values{"version": {strconv.FormatInt(version, 10)}}
	}
	return c.agentCall(ctx, http.MethodGet, "/v1/agents/"+url.PathEscape(agentID), q, nil)
}

// UpdateAgent makes a new version (POST /v1/agents/{id}).
func (c *Client) UpdateAgent(ctx context.Context, agentID string, p trove.UpdateAgentParams) (*trove.Agent, error) {
	body := map[string]any{}
	if p.Version != 0 {
		body["version"] = p.Version
	}
	if p.Name != nil {
		body["name"] = *p.Name
	}
	if p.Description != nil {
		body["description"] = *p.Description
	}
	if p.System != nil {
		body["system"] = *p.System
	}
	if p.Model != nil {
		body["model"] = modelToWire(*p.Model)
	}
	if p.Tools != nil {
		body["tools"] = toolsToWire(*p.Tools)
	}
	if p.Metadata != nil {
		body["metadata"] = p.Metadata
	}
	return c.agentCall(ctx, http.MethodPost, "/v1/agents/"+url.PathEscape(agentID), nil, body)
}

func pageQuery(limit int, cursor string) url.Values {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("page", cursor)
	}
	return q
}

func (c *Client) agentPage(ctx context.Context, path string, q url.Values) (*trove.Page[trove.Agent], error) {
	var out wirePage[wireAgent]
	if _, err := c.do(ctx, http.MethodGet, path, q, nil, &out); err != nil {
		return nil, err
	}
	page := &trove.Page[trove.Agent]{Data: make([]trove.Agent, len(out.Data))}
	for i := range out.Data {
		page.Data[i] = *agentFromWire(&out.Data[i])
	}
	if out.NextPage != nil {
		page.NextPage = *out.NextPage
	}
	return page, nil
}

// ListAgents lists agents newest first.
func (c *Client) ListAgents(ctx context.Context, p trove.ListAgentsParams) (*trove.Page[trove.Agent], error) {
	q := pageQuery(p.Limit, p.Cursor)
	if p.IncludeArchived {
		q.Set("include_archived", "true")
	}
	return c.agentPage(ctx, "/v1/agents", q)
}

// ArchiveAgent archives an agent.
func (c *Client) ArchiveAgent(ctx context.Context, agentID string) (*trove.Agent, error) {
	return c.agentCall(ctx, http.MethodPost, "/v1/agents/"+url.PathEscape(agentID)+"/archive", nil, nil)
}

// ListAgentVersions lists an agent's versions newest first.
func (c *Client) ListAgentVersions(ctx context.Context, agentID string, p trove.ListAgentVersionsParams) (*trove.Page[trove.Agent], error) {
	return c.agentPage(ctx, "/v1/agents/"+url.PathEscape(agentID)+"/versions", pageQuery(p.Limit, p.Cursor))
}

func envFromWire(w *wireEnvironment) *trove.Environment {
	e := &trove.Environment{ID: w.ID, Name: w.Name, Description: w.Description, Type: w.Config.Type, Metadata: w.Metadata,
		CreatedAt: parseTime(w.CreatedAt), UpdatedAt: parseTime(w.UpdatedAt), ArchivedAt: parseTimePtr(w.ArchivedAt)}
	if e.Metadata == nil {
		e.Metadata = map[string]string{}
	}
	return e
}

func (c *Client) envCall(ctx context.Context, method, path string, in any) (*trove.Environment, error) {
	var out wireEnvironment
	if _, err := c.do(ctx, method, path, nil, in, &out); err != nil {
		return nil, err
	}
	return envFromWire(&out), nil
}

// CreateEnvironment creates a self-hosted environment.
func (c *Client) CreateEnvironment(ctx context.Context, p trove.CreateEnvironmentParams) (*trove.Environment, error) {
	typ := p.Type
	if typ == "" {
		typ = trove.EnvironmentSelfHosted
	}
	body := map[string]any{"name": p.Name, "config": map[string]string{"type": typ}}
	if p.Description != nil {
		body["description"] = *p.Description
	}
	if p.Metadata != nil {
		body["metadata"] = p.Metadata
	}
	return c.envCall(ctx, http.MethodPost, "/v1/environments", body)
}

// GetEnvironment reads an environment.
func (c *Client) GetEnvironment(ctx context.Context, environmentID string) (*trove.Environment, error) {
	return c.envCall(ctx, http.MethodGet, "/v1/environments/"+url.PathEscape(environmentID), nil)
}

// UpdateEnvironment changes an environment.
func (c *Client) UpdateEnvironment(ctx context.Context, environmentID string, p trove.UpdateEnvironmentParams) (*trove.Environment, error) {
	body := map[string]any{}
	if p.Name != nil {
		body["name"] = *p.Name
	}
	if p.ClearDescription {
		body["description"] = nil
	} else if p.Description != nil {
		body["description"] = *p.Description
	}
	if p.Type != "" {
		body["config"] = map[string]string{"type": p.Type}
	}
	if p.Metadata != nil {
		body["metadata"] = p.Metadata
	}
	return c.envCall(ctx, http.MethodPost, "/v1/environments/"+url.PathEscape(environmentID), body)
}

// ListEnvironments lists environments newest first.
func (c *Client) ListEnvironments(ctx context.Context, p trove.ListEnvironmentsParams) (*trove.Page[trove.Environment], error) {
	q := pageQuery(p.Limit, p.Cursor)
	if p.IncludeArchived {
		q.Set("include_archived", "true")
	}
	var out wirePage[wireEnvironment]
	if _, err := c.do(ctx, http.MethodGet, "/v1/environments", q, nil, &out); err != nil {
		return nil, err
	}
	page := &trove.Page[trove.Environment]{Data: make([]trove.Environment, len(out.Data))}
	for i := range out.Data {
		page.Data[i] = *envFromWire(&out.Data[i])
	}
	if out.NextPage != nil {
		page.NextPage = *out.NextPage
	}
	return page, nil
}

// ArchiveEnvironment archives an environment.
func (c *Client) ArchiveEnvironment(ctx context.Context, environmentID string) (*trove.Environment, error) {
	return c.envCall(ctx, http.MethodPost, "/v1/environments/"+url.PathEscape(environmentID)+"/archive", nil)
}

// DeleteEnvironment deletes an environment.
func (c *Client) DeleteEnvironment(ctx context.Context, environmentID string) error {
	_, err := c.do(ctx, http.MethodDelete, "/v1/environments/"+url.PathEscape(environmentID), nil, nil, &struct{}{})
	return err
}

func envKeyFromWire(w *wireEnvKey) *trove.EnvironmentKey {
	return &trove.EnvironmentKey{ID: w.ID, EnvironmentID: w.EnvironmentID, Name: w.Name, Hint: w.Hint,
		CreatedAt: parseTime(w.CreatedAt), RevokedAt: parseTimePtr(w.RevokedAt)}
}

// CreateEnvironmentKey mints an environment key
// (POST /trove/v1/environments/{id}/keys).
func (c *Client) CreateEnvironmentKey(ctx context.Context, environmentID, name string) (*trove.EnvironmentKey, string, error) {
	var out wireEnvKey
	if _, err := c.do(ctx, http.MethodPost, "/trove/v1/environments/"+url.PathEscape(environmentID)+"/keys", nil,
		map[string]string{"name": name}, &out); err != nil {
		return nil, "", err
	}
	return envKeyFromWire(&out), out.Secret, nil
}

// ListEnvironmentKeys lists an environment's keys.
func (c *Client) ListEnvironmentKeys(ctx context.Context, environmentID string) ([]trove.EnvironmentKey, error) {
	var out wirePage[wireEnvKey]
	if _, err := c.do(ctx, http.MethodGet, "/trove/v1/environments/"+url.PathEscape(environmentID)+"/keys", nil, nil, &out); err != nil {
		return nil, err
	}
	keys := make([]trove.EnvironmentKey, len(out.Data))
	for i := range out.Data {
		keys[i] = *envKeyFromWire(&out.Data[i])
	}
	return keys, nil
}

// RevokeEnvironmentKey revokes an environment key.
func (c *Client) RevokeEnvironmentKey(ctx context.Context, environmentID, keyID string) (*trove.EnvironmentKey, error) {
	var out wireEnvKey
	if _, err := c.do(ctx, http.MethodPost, "/trove/v1/environments/"+url.PathEscape(environmentID)+"/keys/"+url.PathEscape(keyID)+"/revoke", nil, nil, &out); err != nil {
		return nil, err
	}
	return envKeyFromWire(&out), nil
}
