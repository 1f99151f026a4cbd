package sqlite

import (
	"context"
	"time"

	"github.com/trovehq/trove/storage"
)

// ConsoleSessionInsert stores a console session under its token hash.
func (t *tx) ConsoleSessionInsert(ctx context.Context, s *storage.ConsoleSession) error {
	_, err := t.exec(ctx, `INSERT INTO console_sessions (token_hash, key_id, workspace_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
		nonNilBytes(s.TokenHash), s.KeyID, s.WorkspaceID, micros(s.CreatedAt), micros(s.ExpiresAt))
	return err
}

// ConsoleSessionGet finds a console session by token hash, or ENOTFOUND.
func (t *tx) ConsoleSessionGet(ctx context.Context, tokenHash []byte) (*storage.ConsoleSession, error) {
	s := storage.ConsoleSession{}
	var created, expires int64
	err := t.queryRow(ctx, "console session", "(by token)", func(r rowScanner) error {
		return r.Scan(&s.TokenHash, &s.KeyID, &s.WorkspaceID, &created, &expires)
	}, `SELECT token_hash, key_id, workspace_id, created_at, expires_at FROM console_sessions WHERE token_hash = ?`, nonNilBytes(tokenHash))
	if err != nil {
		return nil, err
	}
	s.CreatedAt, s.ExpiresAt = fromMicros(created), fromMicros(expires)
	return &s, nil
}

// ConsoleSessionDelete removes one console session; absent is no error.
func (t *tx) ConsoleSessionDelete(ctx context.Context, tokenHash []byte) error {
	_, err := t.exec(ctx, `DELETE FROM console_sessions WHERE token_hash = ?`, nonNilBytes(tokenHash))
	return err
}

// ConsoleSessionDeleteExpired removes expired console sessions and those
// of revokedKeyID.
func (t *tx) ConsoleSessionDeleteExpired(ctx context.Context, now time.Time, revokedKeyID string) error {
	_, err := t.exec(ctx, `DELETE FROM console_sessions WHERE expires_at < ? OR key_id = ?`, micros(now), revokedKeyID)
	return err
}
