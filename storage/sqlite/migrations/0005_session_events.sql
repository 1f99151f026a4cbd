-- Session transcripts: an append-only event log per session. The counters
-- on sessions number appended events and bound a transcript's size; existing
-- sessions start with an empty transcript.
ALTER TABLE sessions ADD COLUMN event_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN event_bytes INTEGER NOT NULL DEFAULT 0;

CREATE TABLE session_events (
    session_id      TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    id              TEXT    NOT NULL UNIQUE,
    type            TEXT    NOT NULL,
    body            TEXT    NOT NULL,
    created_by_type TEXT    NOT NULL,
    created_by_id   TEXT    NOT NULL,
    processed_at    INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;
