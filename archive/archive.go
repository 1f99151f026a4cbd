// Package archive exports a memory store into a portable archive and
// imports one back, through trove.Services (or, for export, any server
// speaking the memory stores API through the official Go SDK).
//
// An archive is a gzip-compressed tar file (docs/archive.md):
//
//	memories/<path without the leading "/">   one file per live memory, its exact content
//	manifest.json                             the store, the memories with their hashes, every version
//
// manifest.json is the last entry, so an exporter streams the memories
// without holding them; an importer reads the archive twice, streaming:
// first to check all of it (Check) before anything is written, then to
// write. Import is all or nothing (a refused write undoes it), never
// overwrites a memory that differs, and is resumable after an unreachable
// target or a kill: every step is checked against what the target already
// holds by path and hash, and the store it created is recorded in a journal
// next to the archive.
package archive

import (
	"context"
	"time"

	"github.com/trovehq/trove"
)

// Format and FormatVersion identify an archive's manifest.
const (
	Format        = "trove-archive"
	FormatVersion = 1
)

// Entry names inside the tar.
const (
	ManifestName = "manifest.json"
	MemoriesDir  = "memories/"
)

// Manifest is manifest.json: what was exported, from where, and the whole
// version history as metadata (no version contents).
type Manifest struct {
	Format        string    `json:"format"`         // always Format
	FormatVersion int       `json:"format_version"` // always FormatVersion
	ExportID      string    `json:"export_id"`      // random; names this export (import journals key on it)
	ExportedAt    time.Time `json:"exported_at"`
	Source        string    `json:"source"` // where it came from (a URL or "local"); never a credential
	Store         Store     `json:"store"`
	// Memories are the live memories, ascending by path; each has a file
	// at MemoriesDir + path without its leading "/".
	Memories []Memory `json:"memories"`
	// Versions are every version the source still kept, oldest first.
	Versions []Version `json:"versions"`
}

// Store is the exported store's own fields.
type Store struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Metadata    map[string]string `json:"metadata"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
	ArchivedAt  *time.Time        `json:"archived_at"`
}

// Memory is one live memory of the manifest.
type Memory struct {
	ID            string    `json:"id"`
	Path          string    `json:"path"`
	File          string    `json:"file"` // the tar entry holding the content
	ContentSHA256 string    `json:"content_sha256"`
	SizeBytes     int       `json:"content_size_bytes"`
	VersionID     string    `json:"memory_version_id"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Version is one memory version of the manifest. A redacted version has
// Redacted set and no path, hash or size, as the API returns it.
type Version struct {
	ID            string     `json:"id"`
	MemoryID      string     `json:"memory_id"`
	Operation     string     `json:"operation"`
	Path          *string    `json:"path"`
	ContentSHA256 *string    `json:"content_sha256"`
	SizeBytes     *int       `json:"content_size_bytes"`
	CreatedBy     *Actor     `json:"created_by"`
	CreatedAt     time.Time  `json:"created_at"`
	Redacted      bool       `json:"redacted"`
	RedactedAt    *time.Time `json:"redacted_at,omitempty"`
	RedactedBy    *Actor     `json:"redacted_by,omitempty"`
}

// Actor is who made or redacted a version, in the API's shape.
type Actor struct {
	Type             string `json:"type"`
	APIKeyID         string `json:"api_key_id,omitempty"`
	SessionID        string `json:"session_id,omitempty"`
	UserID           string `json:"user_id,omitempty"`
	ServiceAccountID string `json:"service_account_id,omitempty"`
}

// Source is a store to export. Services (a local database or a Trove
// server) and SDK (any memory stores API server) implement it.
type Source interface {
	// Store returns the store's own fields.
	Store(ctx context.Context) (*trove.Store, error)
	// EachMemory calls fn with every live memory, content filled, in
	// ascending path order; it stops at fn's first error and returns it.
	EachMemory(ctx context.Context, fn func(*trove.Memory) error) error
	// EachVersion calls fn with every version (no content), in any order;
	// it stops at fn's first error and returns it.
	EachVersion(ctx context.Context, fn func(*trove.MemoryVersion) error) error
}

// Progress is one step of an export or import, for progress display.
type Progress struct {
	Phase string // "memories", "versions" (export); "import"
	Done  int    // items done in this phase
	Total int    // items in this phase, or -1 when not known in advance
	Path  string // the memory just handled, if any
}

// services is a Source over trove.Services.
type services struct {
	svc     trove.Services
	storeID string
}

// Services returns the Source for store storeID of svc (core.Service for a
// local database, httpapi.Client for a Trove server).
func Services(svc trove.Services, storeID string) Source {
	return &services{svc: svc, storeID: storeID}
}

func (s *services) Store(ctx context.Context) (*trove.Store, error) {
	return s.svc.GetStore(ctx, s.storeID)
}

func (s *services) EachMemory(ctx context.Context, fn func(*trove.Memory) error) error {
	for it, err := range trove.Items(ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryListItem], error) {
		return s.svc.ListMemories(ctx, s.storeID, trove.ListMemoriesParams{Limit: 20, Cursor: cursor, View: trove.ViewFull})
	}) {
		if err != nil {
			return err
		}
		if it.Memory == nil {
			continue
		}
		if err := fn(it.Memory); err != nil {
			return err
		}
	}
	return nil
}

func (s *services) EachVersion(ctx context.Context, fn func(*trove.MemoryVersion) error) error {
	for v, err := range trove.Items(ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryVersion], error) {
		return s.svc.ListVersions(ctx, s.storeID, trove.ListVersionsParams{Limit: 100, Cursor: cursor, View: trove.ViewBasic})
	}) {
		if err != nil {
			return err
		}
		if err := fn(&v); err != nil {
			return err
		}
	}
	return nil
}

// actorOf converts a domain actor; nil for nil.
func actorOf(a *trove.Actor) *Actor {
	if a == nil || a.Type == "" {
		return nil
	}
	id, _ := a.ID()
	out := &Actor{Type: string(a.Type)}
	switch a.Type {
	case trove.ActorAPI:
		out.APIKeyID = id
	case trove.ActorSession:
		out.SessionID = id
	case trove.ActorUser:
		out.UserID = id
	case trove.ActorServiceAccount:
		out.ServiceAccountID = id
	}
	return out
}
