-- 0010: Managed Agents — agents with immutable versions, self-hosted
-- environments with their standing credentials (only the SHA-256 of each
-- secret is stored), and the environments' durable work queue. New tables:
-- existing data needs no backfill.

-- agents is the head of each agent: its current version and lifecycle.
CREATE TABLE agents (
    id           TEXT    NOT NULL PRIMARY KEY,
    workspace_id TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    archived_at  INTEGER
) STRICT;
CREATE INDEX agents_by_workspace ON agents (workspace_id, created_at DESC, id DESC);

-- agent_versions holds every version, never updated. tools and metadata
-- are JSON (storage's agent encoding).
CREATE TABLE agent_versions (
    agent_id     TEXT    NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    name         TEXT    NOT NULL,
    description  TEXT    NOT NULL,
    model_id     TEXT    NOT NULL,
    model_speed  TEXT    NOT NULL,
    model_effort TEXT    NOT NULL,
    system       TEXT    NOT NULL,
    tools        TEXT    NOT NULL,
    metadata     TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (agent_id, version)
) STRICT;

CREATE TABLE environments (
    id           TEXT    NOT NULL PRIMARY KEY,
    workspace_id TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    description  TEXT,
    type         TEXT    NOT NULL,
    metadata     TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    archived_at  INTEGER
) STRICT;
CREATE INDEX environments_by_workspace ON environments (workspace_id, created_at DESC, id DESC);

CREATE TABLE environment_keys (
    id             TEXT    NOT NULL PRIMARY KEY,
    workspace_id   TEXT    NOT NULL,
    environment_id TEXT    NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    name           TEXT    NOT NULL,
    hint           TEXT    NOT NULL,
    secret_hash    BLOB    NOT NULL UNIQUE,
    created_at     INTEGER NOT NULL,
    revoked_at     INTEGER
) STRICT;
CREATE INDEX environment_keys_by_environment ON environment_keys (environment_id, created_at, id);

-- work_items is the durable queue. token_hash is the SHA-256 of the
-- current claim's session-scoped token (NULL while queued or stopped).
-- At most one item per session is not stopped.
CREATE TABLE work_items (
    id                  TEXT    NOT NULL PRIMARY KEY,
    workspace_id        TEXT    NOT NULL,
    environment_id      TEXT    NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    session_id          TEXT    NOT NULL,
    state               TEXT    NOT NULL,
    metadata            TEXT    NOT NULL,
    created_at          INTEGER NOT NULL,
    polled_at           INTEGER,
    acknowledged_at     INTEGER,
    started_at          INTEGER,
    latest_heartbeat_at INTEGER,
    stop_requested_at   INTEGER,
    stopped_at          INTEGER,
    last_heartbeat      TEXT    NOT NULL,
    lease_ttl_ms        INTEGER NOT NULL,
    lease_expires_at    INTEGER,
    worker_id           TEXT    NOT NULL,
    claims              INTEGER NOT NULL,
    token_hash          BLOB    UNIQUE
) STRICT;
CREATE INDEX work_items_by_environment ON work_items (environment_id, created_at DESC, id DESC);
CREATE INDEX work_items_claimable ON work_items (environment_id, state, created_at, id);
CREATE UNIQUE INDEX work_items_live_session ON work_items (session_id) WHERE state <> 'stopped';

-- work_pollers remembers when each worker last polled, for the queue stats.
CREATE TABLE work_pollers (
    environment_id TEXT    NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    worker_id      TEXT    NOT NULL,
    polled_at      INTEGER NOT NULL,
    PRIMARY KEY (environment_id, worker_id)
) STRICT;
