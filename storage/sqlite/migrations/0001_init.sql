-- 0001: Trove's initial schema.
--
-- Conventions:
--   * Times are INTEGER microseconds since the Unix epoch, UTC: they sort,
--     keep microsecond precision and compare cheaply.
--   * Paths are TEXT COLLATE BINARY, so comparisons and the (store_id, path)
--     index order paths bytewise (memcmp of the UTF-8 bytes).
--   * Content is TEXT bound with its explicit length: SQLite keeps it byte
--     for byte (no normalization, embedded NULs included).
--   * An actor is two columns: its type (api_actor, session_actor, …) and
--     the ID matching that type; both NULL when no actor was recorded.

CREATE TABLE stores (
    id           TEXT    NOT NULL PRIMARY KEY,
    workspace_id TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    description  TEXT    NOT NULL DEFAULT '',
    metadata     TEXT    NOT NULL DEFAULT '{}', -- JSON object of strings
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    archived_at  INTEGER
) STRICT;

-- StoreList: a workspace's stores newest first, keyset on (created_at, id).
CREATE INDEX stores_by_workspace ON stores (workspace_id, created_at DESC, id DESC);

CREATE TABLE memories (
    id         TEXT    NOT NULL PRIMARY KEY,
    store_id   TEXT    NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    path       TEXT    NOT NULL COLLATE BINARY,
    content    TEXT    NOT NULL,
    size_bytes INTEGER NOT NULL,
    sha256     TEXT    NOT NULL,
    version_id TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

-- One live memory per path; also serves MemoryGetByPath, MemoryList (prefix
-- range scans) and MemoryFindOverlap (IN lists and descendant ranges).
CREATE UNIQUE INDEX memories_by_path ON memories (store_id, path);
-- VersionDeleteExpired: "is this version some live memory's current one?"
CREATE INDEX memories_by_version ON memories (version_id);

CREATE TABLE versions (
    id               TEXT    NOT NULL PRIMARY KEY,
    store_id         TEXT    NOT NULL REFERENCES stores (id) ON DELETE CASCADE,
    memory_id        TEXT    NOT NULL, -- no foreign key: versions outlive their memory
    operation        TEXT    NOT NULL,
    path             TEXT COLLATE BINARY, -- NULL iff redacted
    content          TEXT,    -- NULL for deleted or redacted
    size_bytes       INTEGER, -- NULL for deleted or redacted
    sha256           TEXT,    -- NULL for deleted or redacted
    created_by_type  TEXT,
    created_by_id    TEXT,
    created_at       INTEGER NOT NULL,
    redacted_at      INTEGER,
    redacted_by_type TEXT,
    redacted_by_id   TEXT
) STRICT;

-- VersionList of a store, newest first.
CREATE INDEX versions_by_store ON versions (store_id, created_at DESC, id DESC);
-- VersionList filtered by memory_id.
CREATE INDEX versions_by_memory ON versions (memory_id, created_at DESC, id DESC);
-- VersionList filtered by session_id / api_key_id / service_account_id.
CREATE INDEX versions_by_actor ON versions (store_id, created_by_type, created_by_id, created_at DESC, id DESC);
-- VersionDeleteExpired: the range created_at < cutoff.
CREATE INDEX versions_by_created ON versions (created_at);

CREATE TABLE api_keys (
    id           TEXT    NOT NULL PRIMARY KEY,
    workspace_id TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    hint         TEXT    NOT NULL,
    secret_hash  BLOB    NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER
) STRICT;

CREATE INDEX api_keys_by_workspace ON api_keys (workspace_id, created_at, id);

CREATE TABLE sessions (
    id              TEXT    NOT NULL PRIMARY KEY,
    workspace_id    TEXT    NOT NULL,
    token_hash      BLOB    NOT NULL UNIQUE,
    created_by_type TEXT    NOT NULL,
    created_by_id   TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    ended_at        INTEGER
) STRICT;

CREATE INDEX sessions_by_workspace ON sessions (workspace_id, created_at DESC, id DESC);

-- The stores attached to a session, in attachment order. Name, description
-- and mount path are snapshots taken at attach time; store_id has no foreign
-- key, like an actor ID it may outlive the store it names.
CREATE TABLE session_stores (
    session_id   TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    store_id     TEXT    NOT NULL,
    access       TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    description  TEXT    NOT NULL,
    instructions TEXT    NOT NULL,
    mount_path   TEXT    NOT NULL,
    PRIMARY KEY (session_id, position)
) STRICT, WITHOUT ROWID;

-- SessionList filtered by store.
CREATE INDEX session_stores_by_store ON session_stores (store_id, session_id);
