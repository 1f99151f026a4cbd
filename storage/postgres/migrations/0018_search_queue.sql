-- 0018: the search index leaves the write transaction (docs/perf/search.md,
-- "Search off the write path").
--
-- 0007's generated column memories.search (tsvector, GIN) was computed in
-- every INSERT and UPDATE of a memory. Now the vectors live in a table of
-- their own, memories_fts, written by the driver's indexer outside the
-- write transactions (search_index.go); a write only notes the memory's ID
-- in memories_search_queue (a trigger, same transaction, durable with it).
-- A search matches memories_fts for the memories not queued and computes
-- the vector of the queued ones on the fly (trove_search_vector), so any
-- snapshot sees every write it holds and no stale vector: nothing to catch
-- up with before a search, and a crash loses nothing (the queue stays).
--
-- The existing vectors are copied, not recomputed.

CREATE FUNCTION trove_search_vector(path text, content bytea) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT setweight(to_tsvector('simple'::regconfig, trove_search_words(path)), 'A') ||
             setweight(to_tsvector('simple'::regconfig, trove_search_words(trove_search_content(content))), 'D') $$;

CREATE TABLE memories_fts (
    memory_id text PRIMARY KEY,
    search    tsvector NOT NULL
);
INSERT INTO memories_fts (memory_id, search) SELECT id, search FROM memories;
CREATE INDEX memories_fts_search ON memories_fts USING gin (search);

ALTER TABLE memories DROP COLUMN search; -- and 0007's GIN index with it

-- The generated column refused content that is not UTF-8 (convert_from
-- fails), which core never writes but a restore of an old SQLite database
-- may carry; the indexer would fail on it later, and every search with it.
-- The same function refuses it at the write now, without the tsvector.
-- Existing rows passed the column's computation: NOT VALID skips them.
ALTER TABLE memories ADD CONSTRAINT memories_content_utf8
    CHECK (trove_search_content(content) IS NOT NULL) NOT VALID;

CREATE TABLE memories_search_queue (
    seq       bigserial PRIMARY KEY,
    memory_id text NOT NULL
);
CREATE INDEX memories_search_queue_memory ON memories_search_queue (memory_id);

CREATE FUNCTION trove_search_enqueue() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO memories_search_queue (memory_id) VALUES (OLD.id);
    ELSE
        INSERT INTO memories_search_queue (memory_id) VALUES (NEW.id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_search_enqueue_insert AFTER INSERT OR DELETE ON memories
FOR EACH ROW EXECUTE FUNCTION trove_search_enqueue();

CREATE TRIGGER memories_search_enqueue_update AFTER UPDATE OF path, content ON memories
FOR EACH ROW WHEN (OLD.path IS DISTINCT FROM NEW.path OR OLD.content IS DISTINCT FROM NEW.content)
EXECUTE FUNCTION trove_search_enqueue();
