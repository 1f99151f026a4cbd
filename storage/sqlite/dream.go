package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

const dreamCols = `id, workspace_id, status, input_store_id, session_ids, model, model_speed, instructions,
	output_behavior, output_store_id, session_id, input_tokens, output_tokens, cache_read_tokens,
	cache_creation_tokens, error_type, error_message, created_by_type, created_by_id, created_at,
	ended_at, archived_at`

// dreamSelect reads dreamCols of dreams d and the lease of each one's job
// (storage.JobDream), if it has one.
const dreamSelect = `SELECT d.id, d.workspace_id, d.status, d.input_store_id, d.session_ids, d.model, d.model_speed,
	d.instructions, d.output_behavior, d.output_store_id, d.session_id, d.input_tokens, d.output_tokens,
	d.cache_read_tokens, d.cache_creation_tokens, d.error_type, d.error_message, d.created_by_type,
	d.created_by_id, d.created_at, d.ended_at, d.archived_at,
	coalesce(j.lease_owner, ''), j.lease_expires_at, coalesce(j.attempts, 0)
	FROM dreams d LEFT JOIN jobs j ON j.kind = '` + storage.JobDream + `' AND j.key = d.id`

func scanDream(r rowScanner, d *trove.Dream) error {
	var status, sessions, typ, id string
	var errType, errMsg sql.NullString
	var created int64
	var ended, archived, lease sql.NullInt64
	if err := r.Scan(&d.ID, &d.WorkspaceID, &status, &d.InputStoreID, &sessions, &d.Model, &d.ModelSpeed,
		&d.Instructions, &d.OutputBehavior, &d.OutputStoreID, &d.SessionID, &d.Usage.InputTokens,
		&d.Usage.OutputTokens, &d.Usage.CacheReadInputTokens, &d.Usage.CacheCreationInputTokens,
		&errType, &errMsg, &typ, &id, &created, &ended, &archived, &d.LeaseOwner, &lease, &d.Attempts); err != nil {
		return err
	}
	d.Status = trove.DreamStatus(status)
	if err := json.Unmarshal([]byte(sessions), &d.SessionIDs); err != nil {
		return err
	}
	if errType.Valid {
		d.Error = &trove.DreamError{Type: errType.String, Message: errMsg.String}
	}
	d.CreatedBy = *actorOf(sql.NullString{String: typ, Valid: true}, sql.NullString{String: id, Valid: true})
	d.CreatedAt, d.EndedAt, d.ArchivedAt, d.LeaseExpiresAt = fromMicros(created), timePtr(ended), timePtr(archived), timePtr(lease)
	return nil
}

func dreamErrCols(d *trove.Dream) (typ, msg any) {
	if d.Error == nil {
		return nil, nil
	}
	return d.Error.Type, d.Error.Message
}

// DreamInsert inserts a new dream.
func (t *tx) DreamInsert(ctx context.Context, d *trove.Dream) error {
	id, err := actorID(d.CreatedBy)
	if err != nil {
		return err
	}
	sessions, err := json.Marshal(nonNilStrings(d.SessionIDs))
	if err != nil {
		return err
	}
	et, em := dreamErrCols(d)
	_, err = t.exec(ctx, `INSERT INTO dreams (`+dreamCols+`) VALUES
		(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, d.WorkspaceID, string(d.Status), d.InputStoreID, string(sessions), d.Model, d.ModelSpeed,
		d.Instructions, d.OutputBehavior, d.OutputStoreID, d.SessionID, d.Usage.InputTokens,
		d.Usage.OutputTokens, d.Usage.CacheReadInputTokens, d.Usage.CacheCreationInputTokens,
		et, em, string(d.CreatedBy.Type), id, micros(d.CreatedAt), nullMicros(d.EndedAt),
		nullMicros(d.ArchivedAt))
	return err
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// DreamGet returns a dream of workspaceID ("" for any), or ENOTFOUND.
func (t *tx) DreamGet(ctx context.Context, workspaceID, id string) (*trove.Dream, error) {
	var d trove.Dream
	err := t.queryRow(ctx, "dream", id, func(r rowScanner) error { return scanDream(r, &d) },
		dreamSelect+` WHERE d.id = ? AND (? = '' OR d.workspace_id = ?)`, id, workspaceID, workspaceID)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// DreamLock is DreamGet: SQLite's single writer already serializes.
func (t *tx) DreamLock(ctx context.Context, workspaceID, id string) (*trove.Dream, error) {
	return t.DreamGet(ctx, workspaceID, id)
}

// DreamUpdate replaces the mutable columns of d.ID.
func (t *tx) DreamUpdate(ctx context.Context, d *trove.Dream) error {
	et, em := dreamErrCols(d)
	return t.execOne(ctx, "dream", d.ID, `UPDATE dreams SET status = ?, output_store_id = ?, session_id = ?,
		input_tokens = ?, output_tokens = ?, cache_read_tokens = ?, cache_creation_tokens = ?,
		error_type = ?, error_message = ?, ended_at = ?, archived_at = ? WHERE id = ?`,
		string(d.Status), d.OutputStoreID, d.SessionID, d.Usage.InputTokens, d.Usage.OutputTokens,
		d.Usage.CacheReadInputTokens, d.Usage.CacheCreationInputTokens, et, em, nullMicros(d.EndedAt),
		nullMicros(d.ArchivedAt), d.ID)
}

// DreamList lists a workspace's dreams newest first.
func (t *tx) DreamList(ctx context.Context, p storage.DreamListParams) ([]trove.Dream, error) {
	var w whereBuilder
	w.add("d.workspace_id = ?", p.WorkspaceID)
	if !p.IncludeArchived {
		w.add("d.archived_at IS NULL")
	}
	if len(p.Statuses) > 0 {
		args := make([]any, len(p.Statuses))
		for i, s := range p.Statuses {
			args[i] = string(s)
		}
		w.add("d.status IN ("+strings.Repeat("?, ", len(args)-1)+"?)", args...)
	}
	if p.CreatedAfter != nil {
		w.add("d.created_at > ?", micros(*p.CreatedAfter))
	}
	if p.CreatedBefore != nil {
		w.add("d.created_at < ?", ceilMicros(*p.CreatedBefore))
	}
	w.before(p.Before)
	rows, err := t.query(ctx, dreamSelect+w.String()+
		` ORDER BY d.created_at DESC, d.id DESC LIMIT ?`, append(w.args, limitArg(p.Limit))...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.Dream{}
	for rows.Next() {
		var d trove.Dream
		if err := scanDream(rows, &d); err != nil {
			return nil, translate(err)
		}
		out = append(out, d)
	}
	return out, translate(rows.Err())
}

// DreamInPlaceBusy reports whether an in-place dream on storeID has not
// fully stopped.
func (t *tx) DreamInPlaceBusy(ctx context.Context, storeID string, now time.Time) (bool, error) {
	var n int
	err := t.queryRow(ctx, "dream", "", func(r rowScanner) error { return r.Scan(&n) },
		`SELECT count(*) FROM dreams d WHERE d.input_store_id = ? AND d.output_behavior = ?
		AND (d.status IN ('pending', 'running') OR EXISTS (SELECT 1 FROM jobs j
			WHERE j.kind = ? AND j.key = d.id AND j.lease_owner <> '' AND j.lease_expires_at > ?))`,
		storeID, trove.OutputUpdateExisting, storage.JobDream, micros(now))
	return n > 0, err
}
