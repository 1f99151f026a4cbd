package core

import (
	"context"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// growth is what a write adds to a store: live memories, content bytes (a
// negative number for a write that shrinks it) and versions.
type growth struct {
	memories int
	bytes    int64
	versions int
}

// checkGrowth refuses, with the hosted API's 400 invalid_request_error
// (EINVALID), a write to storeID that would take the store past one of its
// limits: MaxMemoriesPerStore (only when it adds memories),
// MaxStoreBytes (only when it adds bytes: a write that shrinks or keeps
// the size is always allowed, even over a lowered limit) and
// MaxVersionsPerStore. It reads the store's stored counters
// (storage.Tx.StoreStats, one row), so it must run after StoreLock, which
// serializes the store's writers: racing writers never take a store past
// a limit.
//
// Deletes (DeleteMemory, DeleteDirectory) do not call it: removing a
// memory must stay possible at any limit (a poisoned or leaked memory), so
// a store at MaxVersionsPerStore can still gain one deleted version per
// live memory (docs/API.md, "Limits").
func (s *Service) checkGrowth(ctx context.Context, tx storage.Tx, storeID string, g growth) error {
	st, err := tx.StoreStats(ctx, storeID)
	if err != nil {
		return err
	}
	l := s.limits
	if g.memories > 0 && st.MemoryCount+g.memories > l.MaxMemoriesPerStore {
		return trove.Errorf(trove.EINVALID, "memory store %s has reached its limit of %d memories; delete memories before creating new ones (existing memories can still be updated)", storeID, l.MaxMemoriesPerStore)
	}
	if g.bytes > 0 && st.ContentBytes+g.bytes > int64(l.MaxStoreBytes) {
		return trove.Errorf(trove.EINVALID, "memory store %s would exceed its limit of %d bytes of memory content (it holds %d, this write adds %d); delete or shorten memories first", storeID, l.MaxStoreBytes, st.ContentBytes, g.bytes)
	}
	if g.versions > 0 && st.VersionCount+int64(g.versions) > int64(l.MaxVersionsPerStore) {
		return trove.Errorf(trove.EINVALID, "memory store %s has reached its limit of %d memory versions; versions older than the retention period (%s) are deleted to make room, and deleting memories is still allowed", storeID, l.MaxVersionsPerStore, l.VersionRetention)
	}
	return nil
}

// checkStoreCount refuses, with EINVALID, a new store in a workspace that
// already holds MaxStoresPerWorkspace stores. It reads the stored counter
// with storage.Tx.WorkspaceStoreCount, which serializes the workspace's
// store creations until the transaction ends, so racing creators never
// take a workspace past the limit.
func (s *Service) checkStoreCount(ctx context.Context, tx storage.Tx, workspaceID string) error {
	n, err := tx.WorkspaceStoreCount(ctx, workspaceID)
	if err != nil {
		return err
	}
	if n >= s.limits.MaxStoresPerWorkspace {
		return trove.Errorf(trove.EINVALID, "this workspace has reached its limit of %d memory stores; delete stores before creating new ones", s.limits.MaxStoresPerWorkspace)
	}
	return nil
}

// StoreStats returns the stored counters of a store the caller can read,
// with the limits they are checked against (trove.StoreStatsService): one
// row read, whatever the store's size. ENOTFOUND for a store the caller
// cannot read.
func (s *Service) StoreStats(ctx context.Context, storeID string) (*trove.StoreStats, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	var out *trove.StoreStats
	err = s.read(ctx, "StoreStats", func(tx storage.Tx) error {
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		st, err := tx.StoreStats(ctx, storeID)
		if err != nil {
			return err
		}
		out = &trove.StoreStats{
			StoreID:      storeID,
			MemoryCount:  st.MemoryCount,
			ContentBytes: st.ContentBytes,
			VersionCount: st.VersionCount,
			MaxMemories:  s.limits.MaxMemoriesPerStore,
			MaxBytes:     int64(s.limits.MaxStoreBytes),
			MaxVersions:  int64(s.limits.MaxVersionsPerStore),
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
