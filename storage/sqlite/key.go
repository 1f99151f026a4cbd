package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/trovehq/trove"
)

const keyCols = `id, workspace_id, name, hint, created_at, revoked_at`

func scanKey(r rowScanner, k *trove.APIKey) error {
	var created int64
	var revoked sql.NullInt64
	if err := r.Scan(&k.ID, &k.WorkspaceID, &k.Name, &k.Hint, &created, &revoked); err != nil {
		return err
	}
	k.CreatedAt, k.RevokedAt = fromMicros(created), timePtr(revoked)
	return nil
}

// KeyInsert stores an API key with the SHA-256 of its secret.
func (t *tx) KeyInsert(ctx context.Context, k *trove.APIKey, secretHash []byte) error {
	_, err := t.exec(ctx, `INSERT INTO api_keys (`+keyCols+`, secret_hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.WorkspaceID, k.Name, k.Hint, micros(k.CreatedAt), nullMicros(k.RevokedAt), nonNilBytes(secretHash))
	return err
}

// nonNilBytes keeps an empty hash a (non-NULL) empty BLOB.
func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// KeyGetByHash finds a key (revoked ones too) by secret hash, or ENOTFOUND.
func (t *tx) KeyGetByHash(ctx context.Context, secretHash []byte) (*trove.APIKey, error) {
	var k trove.APIKey
	err := t.queryRow(ctx, "api key", "(by secret)", func(r rowScanner) error { return scanKey(r, &k) },
		`SELECT `+keyCols+` FROM api_keys WHERE secret_hash = ?`, nonNilBytes(secretHash))
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// KeyList lists keys oldest first by (created_at, id), all workspaces when
// workspaceID is "".
func (t *tx) KeyList(ctx context.Context, workspaceID string) ([]trove.APIKey, error) {
	var w whereBuilder
	if workspaceID != "" {
		w.add("workspace_id = ?", workspaceID)
	}
	rows, err := t.query(ctx, `SELECT `+keyCols+` FROM api_keys`+w.String()+` ORDER BY created_at, id`, w.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []trove.APIKey{}
	for rows.Next() {
		var k trove.APIKey
		if err := scanKey(rows, &k); err != nil {
			return nil, translate(err)
		}
		out = append(out, k)
	}
	return out, translate(rows.Err())
}

// KeyRevoke sets revoked_at (keeping the first revocation time of a key
// revoked twice); ENOTFOUND for an unknown key.
func (t *tx) KeyRevoke(ctx context.Context, id string, at time.Time) error {
	return t.execOne(ctx, "api key", id,
		`UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, micros(at), id)
}

// KeysLock has nothing to lock: a Write runs on the single writer
// connection inside BEGIN IMMEDIATE, which already keeps every other
// writer, of this process or another, out until it commits.
func (t *tx) KeysLock(ctx context.Context) error { return t.check(ctx) }
