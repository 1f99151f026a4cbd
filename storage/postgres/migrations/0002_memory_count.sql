-- 0002: a live-memory counter per store, so that the memory limit check of
-- a create (MemoryCount) is one row read instead of a count(*) over the
-- store's index. A row trigger keeps it exact whatever inserts or deletes
-- memories (MemoryInsert, MemoryDelete, the cascade of a store delete; an
-- insert skipped by ON CONFLICT DO NOTHING fires nothing). Core holds the
-- store's row lock (StoreLock) before changing its memories, so the update
-- adds no new lock wait.

ALTER TABLE stores ADD COLUMN memory_count integer NOT NULL DEFAULT 0;

UPDATE stores SET memory_count = (SELECT count(*) FROM memories WHERE memories.store_id = stores.id);

CREATE FUNCTION trove_memory_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE stores SET memory_count = memory_count + 1 WHERE id = NEW.store_id;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE stores SET memory_count = memory_count - 1 WHERE id = OLD.store_id;
    ELSIF OLD.store_id <> NEW.store_id THEN
        UPDATE stores SET memory_count = memory_count - 1 WHERE id = OLD.store_id;
        UPDATE stores SET memory_count = memory_count + 1 WHERE id = NEW.store_id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_count AFTER INSERT OR DELETE OR UPDATE OF store_id ON memories
    FOR EACH ROW EXECUTE FUNCTION trove_memory_count();
