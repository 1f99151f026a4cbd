-- 0014: the counters behind the store and workspace limits (issue 24), kept
-- in the same transaction as the rows they count, so that a limit check and
-- a store's statistics are one row read, never a count over the store:
--
--   stores.content_bytes   sum of the live memories' size_bytes (the
--                          memory count's trigger function now keeps both;
--                          MemoryInsertBatch adds its batch's sum itself, as
--                          it does the count);
--   version_seqs.retained  the store's versions still stored (VersionInsert
--                          and MemoryInsertBatch add theirs in the statement
--                          that takes the seqs; a statement trigger takes
--                          deleted versions off once per store and
--                          statement: retention, store deletion);
--   workspace_stats        stores per workspace (triggers on stores);
--                          WorkspaceStoreCount locks the row.
--
-- Existing rows are counted here, whatever order they were written in.

ALTER TABLE stores ADD COLUMN content_bytes bigint NOT NULL DEFAULT 0;

UPDATE stores SET content_bytes = coalesce((SELECT sum(size_bytes) FROM memories WHERE memories.store_id = stores.id), 0);

CREATE OR REPLACE FUNCTION trove_memory_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('trove.bulk_count', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        UPDATE stores SET memory_count = memory_count + 1, content_bytes = content_bytes + NEW.size_bytes WHERE id = NEW.store_id;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE stores SET memory_count = memory_count - 1, content_bytes = content_bytes - OLD.size_bytes WHERE id = OLD.store_id;
    ELSE
        UPDATE stores SET memory_count = memory_count - 1, content_bytes = content_bytes - OLD.size_bytes WHERE id = OLD.store_id;
        UPDATE stores SET memory_count = memory_count + 1, content_bytes = content_bytes + NEW.size_bytes WHERE id = NEW.store_id;
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER memories_count ON memories;

CREATE TRIGGER memories_count AFTER INSERT OR DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION trove_memory_count();

-- Only an update that changes a counted column costs a counter update.
CREATE TRIGGER memories_count_update AFTER UPDATE OF store_id, size_bytes ON memories
    FOR EACH ROW WHEN (OLD.store_id <> NEW.store_id OR OLD.size_bytes <> NEW.size_bytes)
    EXECUTE FUNCTION trove_memory_count();

ALTER TABLE version_seqs ADD COLUMN retained bigint NOT NULL DEFAULT 0;

-- A store whose versions predate its counter row (none should) gets one.
INSERT INTO version_seqs (store_id, last)
SELECT store_id, max(seq) FROM versions GROUP BY store_id
ON CONFLICT (store_id) DO NOTHING;

UPDATE version_seqs SET retained = c.n
FROM (SELECT store_id, count(*) AS n FROM versions GROUP BY store_id) AS c
WHERE c.store_id = version_seqs.store_id;

CREATE FUNCTION trove_versions_retained() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE version_seqs SET retained = retained - g.n
    FROM (SELECT store_id, count(*) AS n FROM gone GROUP BY store_id) AS g
    WHERE version_seqs.store_id = g.store_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER versions_retained AFTER DELETE ON versions
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION trove_versions_retained();

CREATE TABLE workspace_stats (
    workspace_id text    NOT NULL PRIMARY KEY,
    store_count  integer NOT NULL
);

INSERT INTO workspace_stats (workspace_id, store_count)
SELECT workspace_id, count(*) FROM stores GROUP BY workspace_id;

CREATE FUNCTION trove_store_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO workspace_stats (workspace_id, store_count) VALUES (NEW.workspace_id, 1)
        ON CONFLICT (workspace_id) DO UPDATE SET store_count = workspace_stats.store_count + 1;
    ELSE
        UPDATE workspace_stats SET store_count = store_count - 1 WHERE workspace_id = OLD.workspace_id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER stores_count AFTER INSERT OR DELETE ON stores
    FOR EACH ROW EXECUTE FUNCTION trove_store_count();
