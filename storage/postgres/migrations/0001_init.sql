-- Trove schema, version 1.
--
-- Paths use COLLATE "C" so that comparisons and ORDER BY are bytewise, as the
-- storage port requires. Content is bytea so that it is stored byte for byte
-- (text cannot hold NUL). Actors are stored as a type and the one ID that
-- matches it.

CREATE TABLE stores (
    id           text PRIMARY KEY,
    workspace_id text NOT NULL,
    name         text NOT NULL,
    description  text NOT NULL DEFAULT '',
    metadata     text NOT NULL DEFAULT '{}', -- JSON object of strings
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    archived_at  timestamptz
);
CREATE INDEX stores_workspace_created ON stores (workspace_id, created_at DESC, id DESC);

CREATE TABLE memories (
    id         text PRIMARY KEY,
    store_id   text NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    path       text COLLATE "C" NOT NULL,
    content    bytea NOT NULL,
    size_bytes integer NOT NULL,
    sha256     text NOT NULL,
    version_id text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT memories_store_path_key UNIQUE (store_id, path)
);
CREATE INDEX memories_version ON memories (version_id);

CREATE TABLE versions (
    id               text PRIMARY KEY,
    store_id         text NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    memory_id        text NOT NULL,
    operation        text NOT NULL,
    path             text COLLATE "C",
    content          bytea,
    size_bytes       integer,
    sha256           text,
    created_by_type  text,
    created_by_id    text,
    created_at       timestamptz NOT NULL,
    redacted_at      timestamptz,
    redacted_by_type text,
    redacted_by_id   text
);
CREATE INDEX versions_store_created ON versions (store_id, created_at DESC, id DESC);
CREATE INDEX versions_memory_created ON versions (memory_id, created_at DESC, id DESC);
CREATE INDEX versions_actor_created ON versions (store_id, created_by_type, created_by_id, created_at DESC, id DESC);
CREATE INDEX versions_created ON versions (created_at);

CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    workspace_id text NOT NULL,
    name         text NOT NULL,
    hint         text NOT NULL,
    secret_hash  bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_created ON api_keys (created_at, id);

CREATE TABLE sessions (
    id              text PRIMARY KEY,
    workspace_id    text NOT NULL,
    token_hash      bytea NOT NULL UNIQUE,
    created_by_type text NOT NULL,
    created_by_id   text NOT NULL,
    created_at      timestamptz NOT NULL,
    ended_at        timestamptz
);
CREATE INDEX sessions_workspace_created ON sessions (workspace_id, created_at DESC, id DESC);

CREATE TABLE session_stores (
    session_id   text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    ord          integer NOT NULL,
    store_id     text NOT NULL,
    access       text NOT NULL,
    name         text NOT NULL,
    description  text NOT NULL,
    instructions text NOT NULL,
    mount_path   text NOT NULL,
    PRIMARY KEY (session_id, ord)
);
CREATE INDEX session_stores_store ON session_stores (store_id, session_id);
