-- 0017: the search index leaves the write transaction (docs/perf/search.md,
-- "Search off the write path").
--
-- 0007's triggers wrote memories_search (FTS5) inside every write. Now they
-- only note which memory rows changed, in memories_search_queue, in the
-- same transaction as the change: one small B-tree insert per write. The
-- driver applies the queue to memories_search later, in its own write
-- transactions (searchindex.go): before a search that finds the queue not
-- empty, and in the background when the queue grows or writes pause. The
-- queue is durable with the writes it names, so a crash loses no index
-- entry: the next catch-up applies what was queued.
--
-- seq orders the queue (rowid alias, so an insert is an append); mrowid is
-- the memories rowid (memories_search's rowid), noted again for each change:
-- the catch-up takes the distinct ones and reads their current rows.
--
-- memories_search gains an indexed column store_key: one token per memory,
-- 's' || hex(store_id), so that a search of named stores asks FTS5 for
-- their tokens (ANDed with the query: doclist seeks) instead of reading
-- the store_id of every match (docs/perf/search.md). Queries restrict their
-- own words to the path and content columns, so no word of a query matches
-- a store_key; bm25 gives store_key weight 0. The table is rebuilt: every
-- memory is queued, and indexed by the first catch-up (the first search,
-- or the committer's idle work right after the migration).

DROP TRIGGER memories_search_insert;
DROP TRIGGER memories_search_update;
DROP TRIGGER memories_search_delete;

CREATE TABLE memories_search_queue (
    seq    INTEGER PRIMARY KEY,
    mrowid INTEGER NOT NULL
);

DROP TABLE memories_search;
DROP TABLE IF EXISTS memories_search_content; -- FTS5 leaves contentless_unindexed's table behind
CREATE VIRTUAL TABLE memories_search USING fts5(
    path, content,
    store_id UNINDEXED, memory_id UNINDEXED, path_key UNINDEXED,
    store_key,
    content = '', contentless_delete = 1, contentless_unindexed = 1,
    tokenize = 'unicode61 remove_diacritics 0 categories ''L* N* M* Co'''
);
INSERT INTO memories_search_queue (mrowid) SELECT rowid FROM memories ORDER BY rowid;

CREATE TRIGGER memories_search_queue_insert AFTER INSERT ON memories
BEGIN
    INSERT INTO memories_search_queue (mrowid) VALUES (NEW.rowid);
END;

CREATE TRIGGER memories_search_queue_delete AFTER DELETE ON memories
BEGIN
    INSERT INTO memories_search_queue (mrowid) VALUES (OLD.rowid);
END;

CREATE TRIGGER memories_search_queue_update AFTER UPDATE OF path, content, store_id, id ON memories
WHEN OLD.path IS NOT NEW.path OR OLD.content IS NOT NEW.content OR OLD.store_id IS NOT NEW.store_id OR OLD.id IS NOT NEW.id
BEGIN
    INSERT INTO memories_search_queue (mrowid) VALUES (NEW.rowid);
END;
