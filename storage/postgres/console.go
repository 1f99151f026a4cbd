package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove/storage"
)

// ConsoleSessionInsert stores a console session under its token hash.
func (t *tx) ConsoleSessionInsert(ctx context.Context, s *storage.ConsoleSession) error {
	_, err := t.exec(ctx, "INSERT INTO console_sessions (token_hash, key_id, workspace_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
		s.TokenHash, s.KeyID, s.WorkspaceID, s.CreatedAt, s.ExpiresAt)
	return translate(err)
}

// ConsoleSessionGet finds a console session by token hash, or ENOTFOUND.
func (t *tx) ConsoleSessionGet(ctx context.Context, tokenHash []byte) (*storage.ConsoleSession, error) {
	var s storage.ConsoleSession
	err := t.queryRow(ctx, "SELECT token_hash, key_id, workspace_id, created_at, expires_at FROM console_sessions WHERE token_hash = $1", tokenHash).
		Scan(&s.TokenHash, &s.KeyID, &s.WorkspaceID, &s.CreatedAt, &s.ExpiresAt)
	if err == pgx.ErrNoRows {
		return nil, notFound("console session")
	}
	if err != nil {
		return nil, translate(err)
	}
	s.CreatedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	return &s, nil
}

// ConsoleSessionDelete removes one console session; absent is no error.
func (t *tx) ConsoleSessionDelete(ctx context.Context, tokenHash []byte) error {
	_, err := t.exec(ctx, "DELETE FROM console_sessions WHERE token_hash = $1", tokenHash)
	return translate(err)
}

// ConsoleSessionDeleteExpired removes expired console sessions and those
// of revokedKeyID.
func (t *tx) ConsoleSessionDeleteExpired(ctx context.Context, now time.Time, revokedKeyID string) error {
	_, err := t.exec(ctx, "DELETE FROM console_sessions WHERE expires_at < $1 OR key_id = $2", now, revokedKeyID)
	return translate(err)
}
