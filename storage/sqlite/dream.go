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
	ended_at, archived_at, lease_owner, lease_expires_at, attempts`

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
		(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, d.WorkspaceID, string(d.Status), d.InputStoreID, string(sessions), d.Model, d.ModelSpeed,
		d.Instructions, d.OutputBehavior, d.OutputStoreID, d.SessionID, d.Usage.InputTokens,
		d.Usage.OutputTokens, d.Usage.CacheReadInputTokens, d.Usage.CacheCreationInputTokens,
		et, em, string(d.CreatedBy.Type), id, micros(d.CreatedAt), nullMicros(d.EndedAt),
		nullMicros(d.ArchivedAt), d.LeaseOwner, nullMicros(d.LeaseExpiresAt), d.Attempts)
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
		`SELECT `+dreamCols+` FROM dreams WHERE id = ? AND (? = '' OR workspace_id = ?)`, id, workspaceID, workspaceID)
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
		error_type = ?, error_message = ?, ended_at = ?, archived_at = ?, lease_owner = ?,
		lease_expires_at = ?, attempts = ? WHERE id = ?`,
		string(d.Status), d.OutputStoreID, d.SessionID, d.Usage.InputTokens, d.Usage.OutputTokens,
		d.Usage.CacheReadInputTokens, d.Usage.CacheCreationInputTokens, et, em, nullMicros(d.EndedAt),
		nullMicros(d.ArchivedAt), d.LeaseOwner, nullMicros(d.LeaseExpiresAt), d.Attempts, d.ID)
}

// DreamList lists a workspace's dreams newest first.
func (t *tx) DreamList(ctx context.Context, p storage.DreamListParams) ([]trove.Dream, error) {
	var w whereBuilder
	w.add("workspace_id = ?", p.WorkspaceID)
	if !p.IncludeArchived {
		w.add("archived_at IS NULL")
	}
	if len(p.Statuses) > 0 {
		args := make([]any, len(p.Statuses))
		for i, s := range p.Statuses {
			args[i] = string(s)
		}
		w.add("status IN ("+strings.Repeat("?, ", len(args)-1)+"?)", args...)
	}
	if p.CreatedAfter != nil {
		w.add("created_at > ?", micros(*p.CreatedAfter))
	}
	if p.CreatedBefore != nil {
		w.add("created_at < ?", ceilMicros(*p.CreatedBefore))
	}
	w.before(p.Before)
	rows, err := t.query(ctx, `SELECT `+dreamCols+` FROM dreams`+w.String()+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(w.args, limitArg(p.Limit))...)
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
		`SELECT count(*) FROM dreams WHERE input_store_id = ? AND output_behavior = ?
		AND (status IN ('pending', 'running') OR (lease_owner <> '' AND lease_expires_at > ?))`,
		storeID, trove.OutputUpdateExisting, micros(now))
	return n > 0, err
}

// DreamClaim takes the lease of the oldest claimable dream with one
// conditional UPDATE (SQLite runs one writer at a time).
func (t *tx) DreamClaim(ctx context.Context, owner string, now, until time.Time) (*trove.Dream, error) {
	var id string
	err := t.queryRow(ctx, "claimable dream", "", func(r rowScanner) error { return r.Scan(&id) },
		`UPDATE dreams SET lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1
		WHERE id = (SELECT id FROM dreams
			WHERE (status = 'pending' AND lease_owner = '') OR (lease_owner <> '' AND lease_expires_at <= ?)
			ORDER BY created_at, id LIMIT 1)
		RETURNING id`, owner, micros(until), micros(now))
	if err != nil {
		return nil, err
	}
	return t.DreamGet(ctx, "", id)
}
