package agentloop

import (
	"fmt"
	"strings"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2/tools/agenttoolset"

	"github.com/trovehq/trove"
)

// SystemPrompt is the system prompt of a session's requests: the agent's
// own, then the memory note naming every attached store (name, mount
// path, access, description, instructions), in attach order.
func SystemPrompt(agent string, stores []trove.SessionStore) string {
	if len(stores) == 0 {
		return agent
	}
	var b strings.Builder
	if agent != "" {
		b.WriteString(agent)
		b.WriteString("\n\n")
	}
	b.WriteString(MemoryNote(stores))
	return b.String()
}

// MemoryNote describes the attached memory stores for the system prompt.
func MemoryNote(stores []trove.SessionStore) string {
	var b strings.Builder
	b.WriteString("# Memory stores\n\nMemory stores are mounted as directories; read them before you start and keep them up to date with what you learn.\n")
	for _, s := range stores {
		access := string(s.Access)
		if access == "" {
			access = string(trove.AccessReadWrite)
		}
		fmt.Fprintf(&b, "\n- %s at %s (%s)", s.Name, s.MountPath, access)
		if s.Description != "" {
			fmt.Fprintf(&b, ": %s", s.Description)
		}
		if s.Access == trove.AccessReadOnly {
			b.WriteString(" Writes to it are refused.")
		}
		b.WriteString("\n")
		if s.Instructions != "" {
			fmt.Fprintf(&b, "  Instructions: %s\n", strings.ReplaceAll(s.Instructions, "\n", "\n  "))
		}
	}
	return b.String()
}

var (
	toolsetOnce sync.Once
	toolsetDefs map[string]Tool
)

// ToolsetTool is the definition of an agent_toolset_20260401 tool (bash,
// read, write, edit, glob, grep) as the SDK's own implementation, which
// the environment's worker runs, describes it; false for another name.
func ToolsetTool(name string) (Tool, bool) {
	toolsetOnce.Do(func() {
		tools := agenttoolset.BetaAgentToolset20260401(&agenttoolset.AgentToolContext{})
		defer agenttoolset.CloseAll(tools)
		toolsetDefs = map[string]Tool{}
		for _, t := range tools {
			s := t.InputSchema()
			schema := map[string]any{"type": "object"}
			if s.Properties != nil {
				schema["properties"] = s.Properties
			}
			if len(s.Required) > 0 {
				req := make([]any, len(s.Required))
				for i, r := range s.Required {
					req[i] = r
				}
				schema["required"] = req
			}
			for k, v := range s.ExtraFields {
				schema[k] = v
			}
			toolsetDefs[t.Name()] = Tool{Name: t.Name(), Description: t.Description(), Schema: schema}
		}
	})
	t, ok := toolsetDefs[name]
	return t, ok
}
