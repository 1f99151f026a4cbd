package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove/storage"
)

// StoreStats reads the store's counters (migration 0014): memory_count and
// content_bytes on its row, retained on its version_seqs row; ENOTFOUND for
// an unknown store.
func (t *tx) StoreStats(ctx context.Context, storeID string) (storage.StoreStats, error) {
	var st storage.StoreStats
	err := t.queryRow(ctx, `SELECT s.memory_count, s.content_bytes, coalesce(q.retained, 0)
		FROM stores AS s LEFT JOIN version_seqs AS q ON q.store_id = s.id WHERE s.id = $1`, storeID).
		Scan(&st.MemoryCount, &st.ContentBytes, &st.VersionCount)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, notFound("memory store")
	}
	return st, translate(err)
}

// WorkspaceStoreCount reads the workspace's counter row (migration 0014),
// creating it when absent, and locks it until the transaction ends (the
// upsert's row lock; the no-op update keeps the count), so two nodes
// creating stores in one workspace take turns and each sees the other's
// committed count (writes run READ COMMITTED). In a Read it only reads.
func (t *tx) WorkspaceStoreCount(ctx context.Context, workspaceID string) (int, error) {
	var n int
	if t.beginSQL == beginRead {
		err := t.queryRow(ctx, `SELECT coalesce((SELECT store_count FROM workspace_stats WHERE workspace_id = $1), 0)`, workspaceID).Scan(&n)
		return n, translate(err)
	}
	err := t.queryRow(ctx, `INSERT INTO workspace_stats (workspace_id, store_count) VALUES ($1, 0)
		ON CONFLICT (workspace_id) DO UPDATE SET store_count = workspace_stats.store_count
		RETURNING store_count`, workspaceID).Scan(&n)
	return n, translate(err)
}
