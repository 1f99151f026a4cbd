package storage

import (
	"encoding/json"
	"fmt"

	"github.com/trovehq/trove"
)

// The JSON both drivers store an agent's tools as. Field names are part of
// the stored format: never rename them.
type toolJSON struct {
	Type          string           `json:"type"`
	DefaultConfig *toolConfigJSON  `json:"default_config,omitempty"`
	Configs       []toolConfigJSON `json:"configs,omitempty"`
	Name          string           `json:"name,omitempty"`
	Description   string           `json:"description,omitempty"`
	InputSchema   json.RawMessage  `json:"input_schema,omitempty"`
}

type toolConfigJSON struct {
	Name    string `json:"name,omitempty"`
	Enabled bool   `json:"enabled"`
	Policy  string `json:"permission_policy"`
}

// EncodeAgentTools returns the stored form of tools.
func EncodeAgentTools(tools []trove.AgentTool) (string, error) {
	out := make([]toolJSON, 0, len(tools))
	for _, t := range tools {
		j := toolJSON{Type: t.Type, Name: t.Name, Description: t.Description}
		if len(t.InputSchema) > 0 {
			j.InputSchema = json.RawMessage(t.InputSchema)
		}
		if t.Type == trove.ToolAgentToolset {
			j.DefaultConfig = &toolConfigJSON{Enabled: t.DefaultConfig.Enabled, Policy: string(t.DefaultConfig.PermissionPolicy)}
			for _, c := range t.Configs {
				j.Configs = append(j.Configs, toolConfigJSON{Name: c.Name, Enabled: c.Enabled, Policy: string(c.PermissionPolicy)})
			}
		}
		out = append(out, j)
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// DecodeAgentTools reads what EncodeAgentTools wrote.
func DecodeAgentTools(s string) ([]trove.AgentTool, error) {
	var in []toolJSON
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, fmt.Errorf("storage: bad agent tools: %w", err)
	}
	out := make([]trove.AgentTool, 0, len(in))
	for _, j := range in {
		t := trove.AgentTool{Type: j.Type, Name: j.Name, Description: j.Description}
		if len(j.InputSchema) > 0 {
			t.InputSchema = []byte(j.InputSchema)
		}
		if j.DefaultConfig != nil {
			t.DefaultConfig = trove.ToolConfig{Enabled: j.DefaultConfig.Enabled, PermissionPolicy: trove.PermissionPolicy(j.DefaultConfig.Policy)}
		}
		for _, c := range j.Configs {
			t.Configs = append(t.Configs, trove.ToolConfig{Name: c.Name, Enabled: c.Enabled, PermissionPolicy: trove.PermissionPolicy(c.Policy)})
		}
		out = append(out, t)
	}
	return out, nil
}

// EncodeMetadata returns the stored JSON of a metadata map ("{}" for none).
func EncodeMetadata(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// DecodeMetadata reads what EncodeMetadata wrote; never nil.
func DecodeMetadata(s string) (map[string]string, error) {
	m := map[string]string{}
	if s == "{}" || s == "" {
		return m, nil
	}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("storage: bad metadata: %w", err)
	}
	if m == nil {
		m = map[string]string{}
	}
	return m, nil
}
