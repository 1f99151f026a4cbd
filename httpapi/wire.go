package httpapi

import (
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/trovehq/trove"
)

// Wire types: the JSON shapes of the memory stores API, kept apart from the
// domain types. Every key is always emitted, with null where the API allows
// it; timestamps are RFC 3339 in UTC with full precision.

type wireStore struct {
	Type        string            `json:"type"`
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Metadata    map[string]string `json:"metadata"`
	CreatedAt   string            `json:"created_at"`
	UpdatedAt   string            `json:"updated_at"`
	ArchivedAt  *string           `json:"archived_at"`
}

type wireMemory struct {
	Type             string  `json:"type"`
	ID               string  `json:"id"`
	MemoryStoreID    string  `json:"memory_store_id"`
	Path             string  `json:"path"`
	Content          *string `json:"content"`
	ContentSizeBytes int     `json:"content_size_bytes"`
	ContentSHA256    string  `json:"content_sha256"`
	MemoryVersionID  string  `json:"memory_version_id"`
	CreatedAt        string  `json:"created_at"`
	UpdatedAt        string  `json:"updated_at"`
}

type wirePrefix struct {
	Type string `json:"type"`
	Path string `json:"path"`
}

type wireActor struct {
	Type             string `json:"type"`
	APIKeyID         string `json:"api_key_id,omitempty"`
	SessionID        string `json:"session_id,omitempty"`
	UserID           string `json:"user_id,omitempty"`
	ServiceAccountID string `json:"service_account_id,omitempty"`
}

type wireVersion struct {
	Type             string     `json:"type"`
	ID               string     `json:"id"`
	MemoryStoreID    string     `json:"memory_store_id"`
	MemoryID         string     `json:"memory_id"`
	Operation        string     `json:"operation"`
	Path             *string    `json:"path"`
	Content          *string    `json:"content"`
	ContentSizeBytes *int       `json:"content_size_bytes"`
	ContentSHA256    *string    `json:"content_sha256"`
	CreatedBy        *wireActor `json:"created_by"`
	CreatedAt        string     `json:"created_at"`
	RedactedAt       *string    `json:"redacted_at"`
	RedactedBy       *wireActor `json:"redacted_by"`
}

type wireDeleted struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

type wirePage[T any] struct {
	Data     []T     `json:"data"`
	NextPage *string `json:"next_page"`
}

type wireSessionResource struct {
	Type          string  `json:"type"`
	MemoryStoreID string  `json:"memory_store_id"`
	Access        string  `json:"access"`
	Name          string  `json:"name"`
	Description   string  `json:"description"`
	Instructions  *string `json:"instructions"`
	MountPath     string  `json:"mount_path"`
}

type wireSession struct {
	Type      string                `json:"type"`
	ID        string                `json:"id"`
	Resources []wireSessionResource `json:"resources"`
	CreatedAt string                `json:"created_at"`
	EndedAt   *string               `json:"ended_at"`
	// Token is the session credential, present only in the create response.
	Token string `json:"token,omitempty"`
	// The one session concept: what /v1/sessions shows too (the agent of
	// a managed session as its ID and version; see GET /v1/sessions/{id}
	// for the whole agent, usage and stats).
	Status        string            `json:"status"`
	Title         *string           `json:"title"`
	Metadata      map[string]string `json:"metadata"`
	UpdatedAt     string            `json:"updated_at"`
	ArchivedAt    *string           `json:"archived_at"`
	AgentID       string            `json:"agent_id,omitempty"`
	AgentVersion  int64             `json:"agent_version,omitempty"`
	EnvironmentID string            `json:"environment_id,omitempty"`
}

// Request bodies. Pointer fields tell absent or null from a value.

type wireCreateStore struct {
	Name        *string            `json:"name"`
	Description *string            `json:"description"`
	Metadata    map[string]*string `json:"metadata"`
}

type wireUpdateStore struct {
	Name *string `json:"name"`
	// Description is raw to tell null (clears it, as the SDK's update
	// bodies say of a nullable field) from absent (unchanged).
	Description jsontext.Value     `json:"description"`
	Metadata    map[string]*string `json:"metadata"`
}

type wireCreateMemory struct {
	Path *string `json:"path"`
	// Content is required (the spec lists it), nullable: absent (len 0)
	// is refused, null is "" (createMemory).
	Content jsontext.Value `json:"content"`
}

type wirePrecondition struct {
	Type          *string `json:"type"`
	ContentSHA256 *string `json:"content_sha256"`
}

type wireUpdateMemory struct {
	Content      *string           `json:"content"`
	Path         *string           `json:"path"`
	Precondition *wirePrecondition `json:"precondition"`
}

type wireSessionResourceParam struct {
	Type          *string `json:"type"`
	MemoryStoreID *string `json:"memory_store_id"`
	Access        *string `json:"access"`
	Instructions  *string `json:"instructions"`
}

type wireCreateSession struct {
	Resources []wireSessionResourceParam `json:"resources"`
}

// formatTime renders t as RFC 3339 in UTC with all its fractional digits.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func formatTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := formatTime(*t)
	return &s
}

func storeToWire(s *trove.Store) wireStore {
	md := s.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return wireStore{
		Type:        "memory_store",
		ID:          s.ID,
		Name:        s.Name,
		Description: s.Description,
		Metadata:    md,
		CreatedAt:   formatTime(s.CreatedAt),
		UpdatedAt:   formatTime(s.UpdatedAt),
		ArchivedAt:  formatTimePtr(s.ArchivedAt),
	}
}

func memoryToWire(m *trove.Memory) wireMemory {
	return wireMemory{
		Type:             "memory",
		ID:               m.ID,
		MemoryStoreID:    m.StoreID,
		Path:             m.Path,
		Content:          m.Content,
		ContentSizeBytes: m.SizeBytes,
		ContentSHA256:    m.SHA256,
		MemoryVersionID:  m.VersionID,
		CreatedAt:        formatTime(m.CreatedAt),
		UpdatedAt:        formatTime(m.UpdatedAt),
	}
}

func actorToWire(a *trove.Actor) *wireActor {
	if a == nil || a.Type == "" {
		return nil
	}
	w := &wireActor{Type: string(a.Type)}
	switch a.Type {
	case trove.ActorAPI:
		w.APIKeyID = a.APIKeyID
	case trove.ActorSession:
		w.SessionID = a.SessionID
	case trove.ActorUser:
		w.UserID = a.UserID
	case trove.ActorServiceAccount:
		w.ServiceAccountID = a.ServiceAccountID
	}
	return w
}

func versionToWire(v *trove.MemoryVersion) wireVersion {
	return wireVersion{
		Type:             "memory_version",
		ID:               v.ID,
		MemoryStoreID:    v.StoreID,
		MemoryID:         v.MemoryID,
		Operation:        string(v.Operation),
		Path:             v.Path,
		Content:          v.Content,
		ContentSizeBytes: v.SizeBytes,
		ContentSHA256:    v.SHA256,
		CreatedBy:        actorToWire(v.CreatedBy),
		CreatedAt:        formatTime(v.CreatedAt),
		RedactedAt:       formatTimePtr(v.RedactedAt),
		RedactedBy:       actorToWire(v.RedactedBy),
	}
}

func sessionToWire(s *trove.Session, token string) wireSession {
	res := make([]wireSessionResource, len(s.Stores))
	for i, st := range s.Stores {
		access := st.Access
		if access == "" {
			access = trove.AccessReadWrite
		}
		var instr *string
		if st.Instructions != "" {
			v := st.Instructions
			instr = &v
		}
		res[i] = wireSessionResource{
			Type:          "memory_store",
			MemoryStoreID: st.StoreID,
			Access:        string(access),
			Name:          st.Name,
			Description:   st.Description,
			Instructions:  instr,
			MountPath:     st.MountPath,
		}
	}
	w := wireSession{
		Type:       "session",
		ID:         s.ID,
		Resources:  res,
		CreatedAt:  formatTime(s.CreatedAt),
		EndedAt:    formatTimePtr(s.EndedAt),
		Token:      token,
		Status:     string(s.Status),
		Title:      nilIfEmpty(s.Title),
		Metadata:   s.Metadata,
		UpdatedAt:  formatTime(s.UpdatedAt),
		ArchivedAt: formatTimePtr(s.ArchivedAt),
	}
	if w.Status == "" {
		w.Status = string(trove.SessionIdle)
	}
	if w.Metadata == nil {
		w.Metadata = map[string]string{}
	}
	if s.UpdatedAt.IsZero() {
		w.UpdatedAt = w.CreatedAt
	}
	if m := s.Managed; m != nil {
		w.AgentID, w.AgentVersion, w.EnvironmentID = m.AgentID, m.AgentVersion, m.EnvironmentID
	}
	return w
}

func nextPage(c string) *string {
	if c == "" {
		return nil
	}
	return &c
}
