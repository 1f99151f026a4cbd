package httpapi

import (
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/trovehq/trove"
)

func optString(s string) param.Opt[string] {
	if s == "" {
		return param.Opt[string]{}
	}
	return anthropic.String(s)
}

func optTime(t *time.Time) param.Opt[time.Time] {
	if t == nil {
		return param.Opt[time.Time]{}
	}
	return anthropic.Time(*t)
}

func optInt(n int) param.Opt[int64] {
	if n == 0 {
		return param.Opt[int64]{}
	}
	return anthropic.Int(int64(n))
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t.UTC()
}

// workspaceOf returns the workspace the server echoed in res, which the
// wire objects do not carry.
func workspaceOf(res *http.Response) string {
	if res == nil {
		return ""
	}
	return res.Header.Get("anthropic-workspace-id")
}

// storeFromWire converts a store read through the SDK; res is the response
// it came in.
func storeFromWire(s *anthropic.BetaManagedAgentsMemoryStore, res *http.Response) *trove.Store {
	out := &trove.Store{
		ID:          s.ID,
		WorkspaceID: workspaceOf(res),
		Name:        s.Name,
		Description: s.Description,
		Metadata:    s.Metadata,
		CreatedAt:   s.CreatedAt.UTC(),
		UpdatedAt:   s.UpdatedAt.UTC(),
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	if s.JSON.ArchivedAt.Valid() {
		t := s.ArchivedAt.UTC()
		out.ArchivedAt = &t
	}
	return out
}

func memoryFromWire(m *anthropic.BetaManagedAgentsMemory) *trove.Memory {
	out := &trove.Memory{
		ID:        m.ID,
		StoreID:   m.MemoryStoreID,
		Path:      m.Path,
		SizeBytes: int(m.ContentSizeBytes),
		SHA256:    m.ContentSha256,
		VersionID: m.MemoryVersionID,
		CreatedAt: m.CreatedAt.UTC(),
		UpdatedAt: m.UpdatedAt.UTC(),
	}
	if m.JSON.Content.Valid() {
		c := m.Content
		out.Content = &c
	}
	return out
}

func actorFromWire(a *anthropic.BetaManagedAgentsActorUnion) *trove.Actor {
	if a.Type == "" {
		return nil
	}
	return &trove.Actor{
		Type:             trove.ActorType(a.Type),
		APIKeyID:         a.APIKeyID,
		SessionID:        a.SessionID,
		UserID:           a.UserID,
		ServiceAccountID: a.ServiceAccountID,
	}
}

func versionFromWire(v *anthropic.BetaManagedAgentsMemoryVersion) *trove.MemoryVersion {
	out := &trove.MemoryVersion{
		ID:         v.ID,
		StoreID:    v.MemoryStoreID,
		MemoryID:   v.MemoryID,
		Operation:  trove.Operation(v.Operation),
		CreatedBy:  actorFromWire(&v.CreatedBy),
		CreatedAt:  v.CreatedAt.UTC(),
		RedactedBy: actorFromWire(&v.RedactedBy),
	}
	if v.JSON.Path.Valid() {
		p := v.Path
		out.Path = &p
	}
	if v.JSON.Content.Valid() {
		c := v.Content
		out.Content = &c
	}
	if v.JSON.ContentSizeBytes.Valid() {
		n := int(v.ContentSizeBytes)
		out.SizeBytes = &n
	}
	if v.JSON.ContentSha256.Valid() {
		h := v.ContentSha256
		out.SHA256 = &h
	}
	if v.JSON.RedactedAt.Valid() {
		t := v.RedactedAt.UTC()
		out.RedactedAt = &t
	}
	return out
}
