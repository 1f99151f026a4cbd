package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const storeCols = "id, workspace_id, name, description, metadata, created_at, updated_at, archived_at"

func scanStore(r scanner) (*trove.Store, error) {
	var s trove.Store
	var meta string
	var archived *time.Time
	if err := r.Scan(&s.ID, &s.WorkspaceID, &s.Name, &s.Description, &meta, &s.CreatedAt, &s.UpdatedAt, &archived); err != nil {
		return nil, err
	}
	s.Metadata = map[string]string{}
	if err := json.Unmarshal([]byte(meta), &s.Metadata); err != nil {
		return nil, fmt.Errorf("store %s: bad metadata: %w", s.ID, err)
	}
	if s.Metadata == nil {
		s.Metadata = map[string]string{}
	}
	s.CreatedAt, s.UpdatedAt, s.ArchivedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC(), utc(archived)
	return &s, nil
}

func metadataJSON(m map[string]string) (string, error) {
	if m == nil {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// StoreInsert inserts s. It returns EINVALID when a field holds text
// PostgreSQL cannot store (NUL).
func (t *tx) StoreInsert(ctx context.Context, s *trove.Store) error {
	meta, err := metadataJSON(s.Metadata)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, "INSERT INTO stores ("+storeCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
		s.ID, s.WorkspaceID, s.Name, s.Description, meta, s.CreatedAt, s.UpdatedAt, s.ArchivedAt)
	return translate(err)
}

// StoreGet returns the store with id in workspaceID, or ENOTFOUND.
func (t *tx) StoreGet(ctx context.Context, workspaceID, id string) (*trove.Store, error) {
	return t.storeGet(ctx, workspaceID, id, "")
}

// StoreLock is StoreGet with SELECT … FOR UPDATE: it blocks until every
// other transaction holding the lock of this store has ended.
func (t *tx) StoreLock(ctx context.Context, workspaceID, id string) (*trove.Store, error) {
	return t.storeGet(ctx, workspaceID, id, " FOR UPDATE")
}

func (t *tx) storeGet(ctx context.Context, workspaceID, id, suffix string) (*trove.Store, error) {
	s, err := scanStore(t.queryRow(ctx, "SELECT "+storeCols+" FROM stores WHERE id = $1 AND workspace_id = $2"+suffix, id, workspaceID))
	if err == pgx.ErrNoRows {
		return nil, notFound("memory store")
	}
	return s, translate(err)
}

// StoreUpdate replaces name, description, metadata, updated_at and
// archived_at of s.ID; ENOTFOUND if there is no such store.
func (t *tx) StoreUpdate(ctx context.Context, s *trove.Store) error {
	meta, err := metadataJSON(s.Metadata)
	if err != nil {
		return err
	}
	tag, err := t.exec(ctx, "UPDATE stores SET name = $2, description = $3, metadata = $4, updated_at = $5, archived_at = $6 WHERE id = $1",
		s.ID, s.Name, s.Description, meta, s.UpdatedAt, s.ArchivedAt)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("memory store")
	}
	return nil
}

// StoreList lists a workspace's stores by (created_at, id) descending.
func (t *tx) StoreList(ctx context.Context, p storage.StoreListParams) ([]trove.Store, error) {
	var w where
	w.add("workspace_id = ?", p.WorkspaceID)
	if !p.IncludeArchived {
		w.add("archived_at IS NULL")
	}
	w.timeRange("created_at", p.CreatedAt)
	w.before(p.Before)
	q := "SELECT " + storeCols + " FROM stores WHERE " + w.sql() + " ORDER BY created_at DESC, id DESC"
	q += w.limit(p.Limit)
	rows, err := t.query(ctx, q, w.args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []trove.Store
	for rows.Next() {
		s, err := scanStore(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *s)
	}
	return out, translate(rows.Err())
}

// StoreDelete deletes a store; its memories and versions go with it (ON
// DELETE CASCADE). ENOTFOUND if there is no such store.
func (t *tx) StoreDelete(ctx context.Context, id string) error {
	tag, err := t.exec(ctx, "DELETE FROM stores WHERE id = $1", id)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("memory store")
	}
	return nil
}
