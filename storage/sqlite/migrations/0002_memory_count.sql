-- 0002: a live-memory counter per store, so that the memory limit check of
-- a create (MemoryCount) is one row read instead of a count(*) over the
-- store's index. Triggers keep it exact whatever deletes or inserts
-- memories (MemoryInsert, MemoryDelete, StoreDelete, a rolled-back
-- savepoint undoes both the row and the count).

ALTER TABLE stores ADD COLUMN memory_count INTEGER NOT NULL DEFAULT 0;

UPDATE stores SET memory_count = (SELECT count(*) FROM memories WHERE memories.store_id = stores.id);

CREATE TRIGGER memories_count_insert AFTER INSERT ON memories
BEGIN
    UPDATE stores SET memory_count = memory_count + 1 WHERE id = NEW.store_id;
END;

CREATE TRIGGER memories_count_delete AFTER DELETE ON memories
BEGIN
    UPDATE stores SET memory_count = memory_count - 1 WHERE id = OLD.store_id;
END;

-- Memories never change store; if one ever did, the counts follow.
CREATE TRIGGER memories_count_move AFTER UPDATE OF store_id ON memories
WHEN OLD.store_id <> NEW.store_id
BEGIN
    UPDATE stores SET memory_count = memory_count - 1 WHERE id = OLD.store_id;
    UPDATE stores SET memory_count = memory_count + 1 WHERE id = NEW.store_id;
END;
