package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
)

const keyCols = "id, workspace_id, name, hint, created_at, revoked_at"

func scanKey(r scanner) (*trove.APIKey, error) {
	var k trove.APIKey
	var revoked *time.Time
	if err := r.Scan(&k.ID, &k.WorkspaceID, &k.Name, &k.Hint, &k.CreatedAt, &revoked); err != nil {
		return nil, err
	}
	k.CreatedAt, k.RevokedAt = k.CreatedAt.UTC(), utc(revoked)
	return &k, nil
}

// KeyInsert stores k with the SHA-256 of its secret.
func (t *tx) KeyInsert(ctx context.Context, k *trove.APIKey, secretHash []byte) error {
	_, err := t.exec(ctx, "INSERT INTO api_keys (id, workspace_id, name, hint, secret_hash, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
		k.ID, k.WorkspaceID, k.Name, k.Hint, secretHash, k.CreatedAt, k.RevokedAt)
	return translate(err)
}

// KeyGetByHash finds a key (revoked ones too) by secret hash, or ENOTFOUND.
func (t *tx) KeyGetByHash(ctx context.Context, secretHash []byte) (*trove.APIKey, error) {
	k, err := scanKey(t.queryRow(ctx, "SELECT "+keyCols+" FROM api_keys WHERE secret_hash = $1", secretHash))
	if err == pgx.ErrNoRows {
		return nil, notFound("API key")
	}
	return k, translate(err)
}

// KeyList lists keys, all workspaces when workspaceID is "", oldest first.
func (t *tx) KeyList(ctx context.Context, workspaceID string) ([]trove.APIKey, error) {
	rows, err := t.query(ctx, "SELECT "+keyCols+" FROM api_keys WHERE $1 = '' OR workspace_id = $1 ORDER BY created_at, id", workspaceID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []trove.APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, *k)
	}
	return out, translate(rows.Err())
}

// KeyRevoke sets revoked_at; ENOTFOUND for an unknown key.
func (t *tx) KeyRevoke(ctx context.Context, id string, at time.Time) error {
	tag, err := t.exec(ctx, "UPDATE api_keys SET revoked_at = $2 WHERE id = $1", id, at)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("API key")
	}
	return nil
}

// keysLockKey is the first key of KeysLock's advisory lock (any fixed
// number other than migrateLockKey); the second is a hash of the current
// schema, so that separate schemas of one database, which are separate
// Troves, do not wait for each other.
const keysLockKey = 0x746b // "tk"

// KeysLock takes a transaction-scoped advisory lock. Write runs at READ
// COMMITTED, where a row lock cannot keep out a row that does not exist yet
// (the first key); the advisory lock is held until COMMIT, after the
// holder's rows are visible, so every later statement of the next holder
// sees them. It waits at most the connection's lock_timeout.
func (t *tx) KeysLock(ctx context.Context) error {
	_, err := t.exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext(coalesce(current_schema(), '')))", keysLockKey)
	return translate(err)
}
