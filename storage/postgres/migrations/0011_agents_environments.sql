-- 0011: Managed Agents — agents with immutable versions, self-hosted
-- environments with their standing credentials (only the SHA-256 of each
-- secret is stored), and the environments' durable work queue, claimed by
-- every node with FOR UPDATE SKIP LOCKED. New tables: no backfill.

CREATE TABLE agents (
    id           text PRIMARY KEY,
    workspace_id text NOT NULL,
    version      bigint NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    archived_at  timestamptz
);
CREATE INDEX agents_workspace_created ON agents (workspace_id, created_at DESC, id DESC);

-- Every version, never updated. tools and metadata are JSON text
-- (storage's agent encoding, byte for byte).
CREATE TABLE agent_versions (
    agent_id     text NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    version      bigint NOT NULL,
    name         text NOT NULL,
    description  text NOT NULL,
    model_id     text NOT NULL,
    model_speed  text NOT NULL,
    model_effort text NOT NULL,
    system       text NOT NULL,
    tools        text NOT NULL,
    metadata     text NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (agent_id, version)
);

CREATE TABLE environments (
    id           text PRIMARY KEY,
    workspace_id text NOT NULL,
    name         text NOT NULL,
    description  text,
    type         text NOT NULL,
    metadata     text NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    archived_at  timestamptz
);
CREATE INDEX environments_workspace_created ON environments (workspace_id, created_at DESC, id DESC);

CREATE TABLE environment_keys (
    id             text PRIMARY KEY,
    workspace_id   text NOT NULL,
    environment_id text NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    name           text NOT NULL,
    hint           text NOT NULL,
    secret_hash    bytea NOT NULL UNIQUE,
    created_at     timestamptz NOT NULL,
    revoked_at     timestamptz
);
CREATE INDEX environment_keys_environment ON environment_keys (environment_id, created_at, id);

-- The durable queue. token_hash is the SHA-256 of the current claim's
-- session-scoped token (NULL while queued or stopped). At most one item
-- per session is not stopped.
CREATE TABLE work_items (
    id                  text PRIMARY KEY,
    workspace_id        text NOT NULL,
    environment_id      text NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    session_id          text NOT NULL,
    state               text NOT NULL,
    metadata            text NOT NULL,
    created_at          timestamptz NOT NULL,
    polled_at           timestamptz,
    acknowledged_at     timestamptz,
    started_at          timestamptz,
    latest_heartbeat_at timestamptz,
    stop_requested_at   timestamptz,
    stopped_at          timestamptz,
    last_heartbeat      text NOT NULL,
    lease_ttl_ms        bigint NOT NULL,
    lease_expires_at    timestamptz,
    worker_id           text NOT NULL,
    claims              integer NOT NULL,
    token_hash          bytea UNIQUE
);
CREATE INDEX work_items_environment_created ON work_items (environment_id, created_at DESC, id DESC);
CREATE INDEX work_items_claimable ON work_items (environment_id, state, created_at, id);
CREATE UNIQUE INDEX work_items_live_session ON work_items (session_id) WHERE state <> 'stopped';

-- When each worker last polled, for the queue stats.
CREATE TABLE work_pollers (
    environment_id text NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    worker_id      text NOT NULL,
    polled_at      timestamptz NOT NULL,
    PRIMARY KEY (environment_id, worker_id)
);
