-- Session transcripts: an append-only event log per session. The counters
-- on sessions number appended events and bound a transcript's size (the
-- session row is locked FOR UPDATE while appending); existing sessions start
-- with an empty transcript.
ALTER TABLE sessions ADD COLUMN event_count integer NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN event_bytes bigint NOT NULL DEFAULT 0;

CREATE TABLE session_events (
    session_id      text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq             bigint NOT NULL,
    id              text NOT NULL UNIQUE,
    type            text NOT NULL,
    body            text NOT NULL,
    created_by_type text NOT NULL,
    created_by_id   text NOT NULL,
    processed_at    timestamptz NOT NULL,
    PRIMARY KEY (session_id, seq)
);
