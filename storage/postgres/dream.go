package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

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

func scanDream(r scanner) (*trove.Dream, error) {
	var d trove.Dream
	var status, typ, id string
	var errType, errMsg *string
	if err := r.Scan(&d.ID, &d.WorkspaceID, &status, &d.InputStoreID, &d.SessionIDs, &d.Model, &d.ModelSpeed,
		&d.Instructions, &d.OutputBehavior, &d.OutputStoreID, &d.SessionID, &d.Usage.InputTokens,
		&d.Usage.OutputTokens, &d.Usage.CacheReadInputTokens, &d.Usage.CacheCreationInputTokens,
		&errType, &errMsg, &typ, &id, &d.CreatedAt, &d.EndedAt, &d.ArchivedAt, &d.LeaseOwner,
		&d.LeaseExpiresAt, &d.Attempts); err != nil {
		return nil, err
	}
	d.Status = trove.DreamStatus(status)
	if d.SessionIDs == nil {
		d.SessionIDs = []string{}
	}
	if errType != nil {
		d.Error = &trove.DreamError{Type: *errType}
		if errMsg != nil {
			d.Error.Message = *errMsg
		}
	}
	d.CreatedBy = *actorFrom(&typ, &id)
	d.CreatedAt = d.CreatedAt.UTC()
	d.EndedAt, d.ArchivedAt, d.LeaseExpiresAt = utc(d.EndedAt), utc(d.ArchivedAt), utc(d.LeaseExpiresAt)
	return &d, nil
}

func dreamErrCols(d *trove.Dream) (typ, msg *string) {
	if d.Error == nil {
		return nil, nil
	}
	return &d.Error.Type, &d.Error.Message
}

// DreamInsert inserts a new dream.
func (t *tx) DreamInsert(ctx context.Context, d *trove.Dream) error {
	typ, id := actorCols(&d.CreatedBy)
	et, em := dreamErrCols(d)
	sessions := d.SessionIDs
	if sessions == nil {
		sessions = []string{}
	}
	_, err := t.exec(ctx, `INSERT INTO dreams (`+dreamCols+`) VALUES
		($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)`,
		d.ID, d.WorkspaceID, string(d.Status), d.InputStoreID, sessions, d.Model, d.ModelSpeed,
		d.Instructions, d.OutputBehavior, d.OutputStoreID, d.SessionID, d.Usage.InputTokens,
		d.Usage.OutputTokens, d.Usage.CacheReadInputTokens, d.Usage.CacheCreationInputTokens,
		et, em, typ, id, d.CreatedAt, d.EndedAt, d.ArchivedAt)
	return translate(err)
}

func (t *tx) dreamGet(ctx context.Context, workspaceID, id, suffix string) (*trove.Dream, error) {
	d, err := scanDream(t.queryRow(ctx, dreamSelect+" WHERE d.id = $1 AND ($2 = '' OR d.workspace_id = $2)"+suffix, id, workspaceID))
	if err == pgx.ErrNoRows {
		return nil, notFound("dream")
	}
	return d, translate(err)
}

// DreamGet returns a dream of workspaceID ("" for any), or ENOTFOUND.
func (t *tx) DreamGet(ctx context.Context, workspaceID, id string) (*trove.Dream, error) {
	return t.dreamGet(ctx, workspaceID, id, "")
}

// DreamLock is DreamGet with the row locked until the transaction ends.
func (t *tx) DreamLock(ctx context.Context, workspaceID, id string) (*trove.Dream, error) {
	return t.dreamGet(ctx, workspaceID, id, " FOR UPDATE OF d")
}

// DreamUpdate replaces the mutable columns of d.ID.
func (t *tx) DreamUpdate(ctx context.Context, d *trove.Dream) error {
	et, em := dreamErrCols(d)
	tag, err := t.exec(ctx, `UPDATE dreams SET status = $2, output_store_id = $3, session_id = $4,
		input_tokens = $5, output_tokens = $6, cache_read_tokens = $7, cache_creation_tokens = $8,
		error_type = $9, error_message = $10, ended_at = $11, archived_at = $12 WHERE id = $1`,
		d.ID, string(d.Status), d.OutputStoreID, d.SessionID, d.Usage.InputTokens, d.Usage.OutputTokens,
		d.Usage.CacheReadInputTokens, d.Usage.CacheCreationInputTokens, et, em, d.EndedAt,
		d.ArchivedAt)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("dream")
	}
	return nil
}

// DreamList lists a workspace's dreams newest first.
func (t *tx) DreamList(ctx context.Context, p storage.DreamListParams) ([]trove.Dream, error) {
	var w where
	w.add("d.workspace_id = ?", p.WorkspaceID)
	if !p.IncludeArchived {
		w.add("d.archived_at IS NULL")
	}
	if len(p.Statuses) > 0 {
		ss := make([]string, len(p.Statuses))
		for i, s := range p.Statuses {
			ss[i] = string(s)
		}
		w.add("d.status = ANY(?::text[])", ss)
	}
	if p.CreatedAfter != nil {
		w.add("created_at > ?", floorMicro(*p.CreatedAfter))
	}
	if p.CreatedBefore != nil {
		w.add("created_at < ?", ceilMicro(*p.CreatedBefore))
	}
	w.before(p.Before)
	q := dreamSelect + " WHERE " + w.sql() + " ORDER BY d.created_at DESC, d.id DESC"
	q += w.limit(p.Limit)
	rows, err := t.query(ctx, q, w.args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []trove.Dream{}
	for rows.Next() {
		d, err := scanDream(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *d)
	}
	return out, translate(rows.Err())
}

// DreamInPlaceBusy reports whether an in-place dream on storeID has not
// fully stopped.
func (t *tx) DreamInPlaceBusy(ctx context.Context, storeID string, now time.Time) (bool, error) {
	var busy bool
	err := t.queryRow(ctx, `SELECT EXISTS (SELECT 1 FROM dreams d WHERE d.input_store_id = $1 AND d.output_behavior = $2
		AND (d.status IN ('pending', 'running') OR EXISTS (SELECT 1 FROM jobs j
			WHERE j.kind = $4 AND j.key = d.id AND j.lease_owner <> '' AND j.lease_expires_at > $3)))`,
		storeID, trove.OutputUpdateExisting, now, storage.JobDream).Scan(&busy)
	return busy, translate(err)
}
