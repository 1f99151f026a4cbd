package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const storeCols = `id, workspace_id, name, description, metadata, created_at, updated_at, archived_at`

func scanStore(r rowScanner, s *trove.Store) error {
	var meta string
	var created, updated int64
	var archived sql.NullInt64
	if err := r.Scan(&s.ID, &s.WorkspaceID, &s.Name, &s.Description, &meta, &created, &updated, &archived); err != nil {
		return err
	}
	s.Metadata = map[string]string{}
	if meta != "{}" { // what metadataJSON stores for none: skip the decoder
		if err := json.Unmarshal([]byte(meta), &s.Metadata); err != nil {
			return fmt.Errorf("sqlite: store %s: bad metadata: %w", s.ID, err)
		}
	}
	if s.Metadata == nil {
		s.Metadata = map[string]string{}
	}
	s.CreatedAt, s.UpdatedAt, s.ArchivedAt = fromMicros(created), fromMicros(updated), timePtr(archived)
	return nil
}

func metadataJSON(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// StoreInsert inserts a new store.
func (t *tx) StoreInsert(ctx context.Context, s *trove.Store) error {
	meta, err := metadataJSON(s.Metadata)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO stores (`+storeCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.WorkspaceID, s.Name, s.Description, meta, micros(s.CreatedAt), micros(s.UpdatedAt), nullMicros(s.ArchivedAt))
	return err
}

// StoreGet returns the store with id in workspaceID, or ENOTFOUND.
func (t *tx) StoreGet(ctx context.Context, workspaceID, id string) (*trove.Store, error) {
	var s trove.Store
	err := t.queryRow(ctx, "memory store", id, func(r rowScanner) error { return scanStore(r, &s) },
		`SELECT `+storeCols+` FROM stores WHERE id = ? AND workspace_id = ?`, id, workspaceID)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// StoreLock is StoreGet: a SQLite write transaction already holds the
// database's only write lock, so every StoreLock is serialized. Within one
// group commit it reads each store once (see storeCache).
func (t *tx) StoreLock(ctx context.Context, workspaceID, id string) (*trove.Store, error) {
	if st, ok := t.stores.get(id); ok {
		if err := t.check(ctx); err != nil {
			return nil, err
		}
		if st.WorkspaceID != workspaceID {
			return nil, notFound("memory store", id)
		}
		return st, nil
	}
	st, err := t.StoreGet(ctx, workspaceID, id)
	if err != nil {
		return nil, err
	}
	t.stores.put(st)
	return st, nil
}

// StoreUpdate replaces name, description, metadata, updated_at and
// archived_at of s.ID; ENOTFOUND if there is no such store.
func (t *tx) StoreUpdate(ctx context.Context, s *trove.Store) error {
	meta, err := metadataJSON(s.Metadata)
	if err != nil {
		return err
	}
	return t.execOne(ctx, "memory store", s.ID,
		`UPDATE stores SET name = ?, description = ?, metadata = ?, updated_at = ?, archived_at = ? WHERE id = ?`,
		s.Name, s.Description, meta, micros(s.UpdatedAt), nullMicros(s.ArchivedAt), s.ID)
}

// StoreList lists a workspace's stores by (created_at, id) descending.
// Limit <= 0 means no limit.
func (t *tx) StoreList(ctx context.Context, p storage.StoreListParams) ([]trove.Store, error) {
	var w whereBuilder
	w.add("workspace_id = ?", p.WorkspaceID)
	if !p.IncludeArchived {
		w.add("archived_at IS NULL")
	}
	w.timeRange("created_at", p.CreatedAt)
	w.before(p.Before)
	rows, err := t.query(ctx, `SELECT `+storeCols+` FROM stores`+w.String()+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(w.args, limitArg(p.Limit))...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.Store{}
	for rows.Next() {
		var s trove.Store
		if err := scanStore(rows, &s); err != nil {
			return nil, translate(err)
		}
		out = append(out, s)
	}
	return out, translate(rows.Err())
}

// StoreDelete deletes a store with all its memories and versions; ENOTFOUND
// if there is no such store. Sessions that attached it keep their snapshot.
func (t *tx) StoreDelete(ctx context.Context, id string) error {
	if _, err := t.exec(ctx, `DELETE FROM versions WHERE store_id = ?`, id); err != nil {
		return err
	}
	if _, err := t.exec(ctx, `DELETE FROM memories WHERE store_id = ?`, id); err != nil {
		return err
	}
	return t.execOne(ctx, "memory store", id, `DELETE FROM stores WHERE id = ?`, id)
}
