-- 0013: the counters behind the store and workspace limits (issue 24), kept
-- in the same transaction as the rows they count, so that a limit check and
-- a store's statistics are one row read, never a count over the store:
--
--   stores.content_bytes   sum of the live memories' size_bytes (the
--                          memory count's triggers of 0002 now keep both);
--   version_seqs.retained  the store's versions still stored (VersionInsert
--                          adds one in the statement that takes the seq; a
--                          trigger takes one off per deleted version:
--                          retention, store deletion);
--   workspace_stats        stores per workspace (triggers on stores).
--
-- Existing rows are counted here, whatever order they were written in.

ALTER TABLE stores ADD COLUMN content_bytes INTEGER NOT NULL DEFAULT 0;

UPDATE stores SET content_bytes = coalesce((SELECT sum(size_bytes) FROM memories WHERE memories.store_id = stores.id), 0);

DROP TRIGGER memories_count_insert;
DROP TRIGGER memories_count_delete;
DROP TRIGGER memories_count_move;

CREATE TRIGGER memories_count_insert AFTER INSERT ON memories
BEGIN
    UPDATE stores SET memory_count = memory_count + 1, content_bytes = content_bytes + NEW.size_bytes WHERE id = NEW.store_id;
END;

CREATE TRIGGER memories_count_delete AFTER DELETE ON memories
BEGIN
    UPDATE stores SET memory_count = memory_count - 1, content_bytes = content_bytes - OLD.size_bytes WHERE id = OLD.store_id;
END;

CREATE TRIGGER memories_count_update AFTER UPDATE OF store_id, size_bytes ON memories
WHEN OLD.store_id <> NEW.store_id OR OLD.size_bytes <> NEW.size_bytes
BEGIN
    UPDATE stores SET memory_count = memory_count - 1, content_bytes = content_bytes - OLD.size_bytes WHERE id = OLD.store_id;
    UPDATE stores SET memory_count = memory_count + 1, content_bytes = content_bytes + NEW.size_bytes WHERE id = NEW.store_id;
END;

ALTER TABLE version_seqs ADD COLUMN retained INTEGER NOT NULL DEFAULT 0;

-- A store whose versions predate its counter row (none should) gets one.
INSERT INTO version_seqs (store_id, last)
SELECT store_id, max(seq) FROM versions WHERE store_id NOT IN (SELECT store_id FROM version_seqs) GROUP BY store_id;

UPDATE version_seqs SET retained = (SELECT count(*) FROM versions WHERE versions.store_id = version_seqs.store_id);

CREATE TRIGGER versions_retained_delete AFTER DELETE ON versions
BEGIN
    UPDATE version_seqs SET retained = retained - 1 WHERE store_id = OLD.store_id;
END;

CREATE TABLE workspace_stats (
    workspace_id TEXT    NOT NULL PRIMARY KEY,
    store_count  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO workspace_stats (workspace_id, store_count)
SELECT workspace_id, count(*) FROM stores GROUP BY workspace_id;

CREATE TRIGGER stores_count_insert AFTER INSERT ON stores
BEGIN
    INSERT INTO workspace_stats (workspace_id, store_count) VALUES (NEW.workspace_id, 1)
    ON CONFLICT (workspace_id) DO UPDATE SET store_count = store_count + 1;
END;

CREATE TRIGGER stores_count_delete AFTER DELETE ON stores
BEGIN
    UPDATE workspace_stats SET store_count = store_count - 1 WHERE workspace_id = OLD.workspace_id;
END;
