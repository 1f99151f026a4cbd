-- Dreams: the durable queue the dream runner claims from. session_ids is a
-- JSON array of the input sessions, sorted. lease_owner/lease_expires_at
-- are the runner's lease, renewed by heartbeats.
CREATE TABLE dreams (
    id                     TEXT    NOT NULL PRIMARY KEY,
    workspace_id           TEXT    NOT NULL,
    status                 TEXT    NOT NULL,
    input_store_id         TEXT    NOT NULL,
    session_ids            TEXT    NOT NULL,
    model                  TEXT    NOT NULL,
    model_speed            TEXT    NOT NULL,
    instructions           TEXT    NOT NULL,
    output_behavior        TEXT    NOT NULL,
    output_store_id        TEXT    NOT NULL,
    session_id             TEXT    NOT NULL,
    input_tokens           INTEGER NOT NULL,
    output_tokens          INTEGER NOT NULL,
    cache_read_tokens      INTEGER NOT NULL,
    cache_creation_tokens  INTEGER NOT NULL,
    error_type             TEXT,
    error_message          TEXT,
    created_by_type        TEXT    NOT NULL,
    created_by_id          TEXT    NOT NULL,
    created_at             INTEGER NOT NULL,
    ended_at               INTEGER,
    archived_at            INTEGER,
    lease_owner            TEXT    NOT NULL,
    lease_expires_at       INTEGER,
    attempts               INTEGER NOT NULL
) STRICT;

CREATE INDEX dreams_by_workspace ON dreams (workspace_id, created_at DESC, id DESC);
CREATE INDEX dreams_claimable ON dreams (status, created_at, id);
CREATE INDEX dreams_in_place ON dreams (input_store_id, output_behavior);
