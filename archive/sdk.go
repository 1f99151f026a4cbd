package archive

import (
	"context"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/trovehq/trove"
)

// sdkSource is a Source over the official Go SDK's Beta.MemoryStores API.
type sdkSource struct {
	c       *anthropic.Client
	storeID string
}

// SDK returns the Source for store storeID read through client: any server
// speaking the memory stores API, the hosted one included (a client made
// with option.WithAPIKey and, for another server, option.WithBaseURL).
func SDK(client *anthropic.Client, storeID string) Source {
	return &sdkSource{c: client, storeID: storeID}
}

func (s *sdkSource) Store(ctx context.Context) (*trove.Store, error) {
	st, err := s.c.Beta.MemoryStores.Get(ctx, s.storeID, anthropic.BetaMemoryStoreGetParams{})
	if err != nil {
		return nil, err
	}
	out := &trove.Store{
		ID: st.ID, Name: st.Name, Description: st.Description, Metadata: st.Metadata,
		CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt,
	}
	if !st.ArchivedAt.IsZero() {
		at := st.ArchivedAt
		out.ArchivedAt = &at
	}
	return out, nil
}

func (s *sdkSource) EachMemory(ctx context.Context, fn func(*trove.Memory) error) error {
	pager := s.c.Beta.MemoryStores.Memories.ListAutoPaging(ctx, s.storeID, anthropic.BetaMemoryStoreMemoryListParams{
		Limit: anthropic.Int(20),
		View:  anthropic.BetaManagedAgentsMemoryViewFull,
	})
	for pager.Next() {
		it := pager.Current()
		if it.Type != "memory" {
			continue
		}
		content := it.Content
		if err := fn(&trove.Memory{
			ID: it.ID, StoreID: it.MemoryStoreID, Path: it.Path, Content: &content,
			SizeBytes: int(it.ContentSizeBytes), SHA256: it.ContentSha256, VersionID: it.MemoryVersionID,
			CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt,
		}); err != nil {
			return err
		}
	}
	return pager.Err()
}

func (s *sdkSource) EachVersion(ctx context.Context, fn func(*trove.MemoryVersion) error) error {
	pager := s.c.Beta.MemoryStores.MemoryVersions.ListAutoPaging(ctx, s.storeID, anthropic.BetaMemoryStoreMemoryVersionListParams{
		Limit: anthropic.Int(100),
	})
	for pager.Next() {
		v := pager.Current()
		out := &trove.MemoryVersion{
			ID: v.ID, StoreID: v.MemoryStoreID, MemoryID: v.MemoryID,
			Operation: trove.Operation(v.Operation), CreatedAt: v.CreatedAt,
			CreatedBy: sdkActor(v.CreatedBy), RedactedBy: sdkActor(v.RedactedBy),
		}
		if !v.RedactedAt.IsZero() {
			at := v.RedactedAt
			out.RedactedAt = &at
		} else {
			if v.JSON.Path.Valid() {
				p := v.Path
				out.Path = &p
			}
			if v.JSON.ContentSha256.Valid() {
				h, n := v.ContentSha256, int(v.ContentSizeBytes)
				out.SHA256, out.SizeBytes = &h, &n
			}
		}
		if err := fn(out); err != nil {
			return err
		}
	}
	return pager.Err()
}

func sdkActor(a anthropic.BetaManagedAgentsActorUnion) *trove.Actor {
	if a.Type == "" {
		return nil
	}
	return &trove.Actor{
		Type: trove.ActorType(a.Type), APIKeyID: a.APIKeyID, SessionID: a.SessionID,
		UserID: a.UserID, ServiceAccountID: a.ServiceAccountID,
	}
}
