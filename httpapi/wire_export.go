package httpapi

import "github.com/trovehq/trove"

// The API's JSON shapes for callers outside the server (the trove CLI's
// -o json): each function returns a value that encoding/json renders
// exactly as the server answers.

// WireStore is a store as GET /v1/memory_stores/{id} answers it.
func WireStore(s *trove.Store) any { return storeToWire(s) }

// WireMemory is a memory as GET /v1/memory_stores/{id}/memories/{id}
// answers it (content null under the basic view).
func WireMemory(m *trove.Memory) any { return memoryToWire(m) }

// WireListItem is one item of a memory listing: a memory, or a
// memory_prefix for a folded directory.
func WireListItem(it trove.MemoryListItem) any {
	if it.Prefix != nil {
		return wirePrefix{Type: "memory_prefix", Path: it.Prefix.Path}
	}
	return memoryToWire(it.Memory)
}

// WireVersion is a memory version as GET …/memory_versions/{id} answers it.
func WireVersion(v *trove.MemoryVersion) any { return versionToWire(v) }

// WireSession is a session as /trove/v1/sessions answers it; token is set
// only in the create response ("" leaves it out).
func WireSession(s *trove.Session, token string) any { return sessionToWire(s, token) }

// WirePage is a page of a listing: {"data": […], "next_page": … or null}.
func WirePage(data []any, next string) any {
	if data == nil {
		data = []any{}
	}
	return wirePage[any]{Data: data, NextPage: nextPage(next)}
}

// WireDeleted is the answer to a delete: {"id", "type"}, with type
// "memory_store_deleted" or "memory_deleted".
func WireDeleted(id, typ string) any { return wireDeleted{ID: id, Type: typ} }

// WireDream is a dream as /v1/dreams answers it.
func WireDream(d *trove.Dream) any { return dreamToWire(d) }

// WireAgent is the API's JSON shape of an agent.
func WireAgent(a *trove.Agent) any { return agentToWire(a) }

// WireEnvironment is the API's JSON shape of an environment.
func WireEnvironment(e *trove.Environment) any { return envToWire(e) }

// WireEnvironmentKey is the JSON shape of an environment key; secret is
// included when not "" (at creation only).
func WireEnvironmentKey(k *trove.EnvironmentKey, secret string) any {
	w := envKeyToWire(k)
	w.Secret = secret
	return w
}
