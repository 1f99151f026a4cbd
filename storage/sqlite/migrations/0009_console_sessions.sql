-- 0009: console sessions, the
-- browser sign-ins of the web console. Kept in the database so that every
-- node serving the console sees a sign-in and a sign-out. Only the SHA-256
-- of the cookie's token is stored. A new table: existing data needs no
-- backfill.

CREATE TABLE console_sessions (
    token_hash   BLOB    NOT NULL PRIMARY KEY,
    key_id       TEXT    NOT NULL,
    workspace_id TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT;

-- ConsoleSessionDeleteExpired: by expiry and by revoked key.
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);
CREATE INDEX console_sessions_by_key ON console_sessions (key_id);
