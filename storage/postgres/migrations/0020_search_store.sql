-- 0020: a search ranks only what it may return, and reads memories for the
-- page alone (issue 24, docs/perf/search.md, "PostgreSQL at 1 M memories").
-- Before, every match was joined to its memories row (content and all) to
-- learn its store, and only then ranked and cut to the page: 4.2 s for a
-- word in 1 M memories, 11 times the bare GIN-and-ts_rank statement. Now
-- memories_fts carries each memory's store (a memory never changes store),
-- so the store filter, the rank and the page's limit run on memories_fts
-- alone and the page's memories are read afterwards; memories_fts_store
-- lets a search of one store AND the store's entries with the word's.
-- The table is rebuilt rather than updated in place: an UPDATE of every
-- row would re-insert every row's lexemes into the GIN index.

CREATE TABLE memories_fts_new (
    memory_id text PRIMARY KEY,
    store_id  text NOT NULL,
    search    tsvector NOT NULL
);
INSERT INTO memories_fts_new (memory_id, store_id, search)
SELECT f.memory_id, m.store_id, f.search FROM memories_fts f JOIN memories m ON m.id = f.memory_id;
DROP TABLE memories_fts;
ALTER TABLE memories_fts_new RENAME TO memories_fts;
ALTER INDEX memories_fts_new_pkey RENAME TO memories_fts_pkey;
CREATE INDEX memories_fts_search ON memories_fts USING gin (search);
CREATE INDEX memories_fts_store ON memories_fts (store_id);
-- Statistics now, not at autovacuum's next pass: without them the planner
-- guesses the new table's size and may pick a plan for a few rows.
ANALYZE memories_fts;

-- The search functions are pure: marked PARALLEL SAFE, a search's indexed
-- half may run in parallel workers (a function left PARALLEL UNSAFE, the
-- default, anywhere in a statement keeps the whole statement serial).
ALTER FUNCTION trove_search_words(text) PARALLEL SAFE;
ALTER FUNCTION trove_search_content(bytea) PARALLEL SAFE;
ALTER FUNCTION trove_search_vector(text, bytea) PARALLEL SAFE;
