-- 0007: full-text search over live memories (storage.Tx.MemorySearch).
--
-- memories_search is a contentless FTS5 table (it stores the index only,
-- not a second copy of the text) whose rowid is the memory's rowid; the
-- snippet is cut from memories.content by core. contentless_delete lets
-- a row be deleted by rowid alone. contentless_unindexed keeps the
-- UNINDEXED columns (store, memory ID and path, a few dozen bytes), so
-- that ranking filters and orders the matches without reading a single
-- memories row (1 KiB each): only the page of results is read from
-- memories. Triggers keep it in step with every
-- change to memories in the same transaction, whichever statement makes it
-- (MemoryInsert/Update/Delete, a store delete's cascade, a savepoint
-- rollback undoes both). Only live memories are indexed, so a version's
-- text (a redacted one in particular) is never findable.
--
-- Words: unicode61 with the categories of trove.IsSearchWordRune (letters,
-- numbers, marks, private use; everything else separates), case folded,
-- diacritics kept (PostgreSQL's index keeps them too). No stemming.
--
-- rowid stability: memories has no INTEGER PRIMARY KEY, so its rowid is
-- implicit. SQLite keeps rowids through UPDATE and through VACUUM of a
-- table copied as a whole (TestSearchSurvivesVacuum checks it).

CREATE VIRTUAL TABLE memories_search USING fts5(
    path, content,
    store_id UNINDEXED, memory_id UNINDEXED, path_key UNINDEXED,
    content = '', contentless_delete = 1, contentless_unindexed = 1,
    tokenize = 'unicode61 remove_diacritics 0 categories ''L* N* M* Co'''
);

INSERT INTO memories_search (rowid, path, content, store_id, memory_id, path_key)
SELECT rowid, path, content, store_id, id, path FROM memories;

CREATE TRIGGER memories_search_insert AFTER INSERT ON memories
BEGIN
    INSERT INTO memories_search (rowid, path, content, store_id, memory_id, path_key)
    VALUES (NEW.rowid, NEW.path, NEW.content, NEW.store_id, NEW.id, NEW.path);
END;

CREATE TRIGGER memories_search_delete AFTER DELETE ON memories
BEGIN
    DELETE FROM memories_search WHERE rowid = OLD.rowid;
END;

CREATE TRIGGER memories_search_update AFTER UPDATE OF path, content, store_id, id ON memories
WHEN OLD.path IS NOT NEW.path OR OLD.content IS NOT NEW.content OR OLD.store_id IS NOT NEW.store_id OR OLD.id IS NOT NEW.id
BEGIN
    DELETE FROM memories_search WHERE rowid = OLD.rowid;
    INSERT INTO memories_search (rowid, path, content, store_id, memory_id, path_key)
    VALUES (NEW.rowid, NEW.path, NEW.content, NEW.store_id, NEW.id, NEW.path);
END;
