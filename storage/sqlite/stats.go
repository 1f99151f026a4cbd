package sqlite

import (
	"context"

	"github.com/trovehq/trove/storage"
)

// StoreStats reads the store's counters (migration 0013): memory_count and
// content_bytes on its row, retained on its version_seqs row; ENOTFOUND for
// an unknown store.
func (t *tx) StoreStats(ctx context.Context, storeID string) (storage.StoreStats, error) {
	var st storage.StoreStats
	err := t.queryRow(ctx, "memory store", storeID, func(r rowScanner) error {
		return r.Scan(&st.MemoryCount, &st.ContentBytes, &st.VersionCount)
	}, `SELECT s.memory_count, s.content_bytes, coalesce(q.retained, 0)
		FROM stores AS s LEFT JOIN version_seqs AS q ON q.store_id = s.id WHERE s.id = ?`, storeID)
	return st, err
}

// WorkspaceStoreCount reads the workspace's counter row (migration 0013).
// A Write holds SQLite's only write lock, so nothing else can create a
// store until it ends.
func (t *tx) WorkspaceStoreCount(ctx context.Context, workspaceID string) (int, error) {
	var n int
	err := t.queryRow(ctx, "workspace", workspaceID, func(r rowScanner) error { return r.Scan(&n) },
		`SELECT coalesce((SELECT store_count FROM workspace_stats WHERE workspace_id = ?), 0)`, workspaceID)
	return n, err
}
