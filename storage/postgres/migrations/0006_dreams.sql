-- Dreams: the durable queue the dream runners of every node claim from
-- (FOR UPDATE SKIP LOCKED). lease_owner/lease_expires_at are the runner's
-- lease, renewed by heartbeats.
CREATE TABLE dreams (
    id                     text PRIMARY KEY,
    workspace_id           text NOT NULL,
    status                 text NOT NULL,
    input_store_id         text NOT NULL,
    session_ids            text[] NOT NULL,
    model                  text NOT NULL,
    model_speed            text NOT NULL,
    instructions           text NOT NULL,
    output_behavior        text NOT NULL,
    output_store_id        text NOT NULL,
    session_id             text NOT NULL,
    input_tokens           bigint NOT NULL,
    output_tokens          bigint NOT NULL,
    cache_read_tokens      bigint NOT NULL,
    cache_creation_tokens  bigint NOT NULL,
    error_type             text,
    error_message          text,
    created_by_type        text NOT NULL,
    created_by_id          text NOT NULL,
    created_at             timestamptz NOT NULL,
    ended_at               timestamptz,
    archived_at            timestamptz,
    lease_owner            text NOT NULL,
    lease_expires_at       timestamptz,
    attempts               integer NOT NULL
);
CREATE INDEX dreams_workspace_created ON dreams (workspace_id, created_at DESC, id DESC);
CREATE INDEX dreams_claimable ON dreams (status, created_at, id);
CREATE INDEX dreams_in_place ON dreams (input_store_id, output_behavior);
