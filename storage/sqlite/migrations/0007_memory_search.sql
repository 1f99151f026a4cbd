-- 0007: full-text search over live memories (storage.Tx.MemorySearch).
--
-- memories_search is a contentless FTS5 table (it stores the index only,
-- not a second copy of the text) whose rowid is the memory's rowid; the
-- snippet is cut from memories.content by core. contentless_delete lets
-- a row be deleted by rowid alone. Triggers keep it in step with every
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
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0 categories ''L* N* M* Co'''
);

INSERT INTO memories_search (rowid, path, content) SELECT rowid, path, content FROM memories;

CREATE TRIGGER memories_search_insert AFTER INSERT ON memories
BEGIN
    INSERT INTO memories_search (rowid, path, content) VALUES (NEW.rowid, NEW.path, NEW.content);
END;

CREATE TRIGGER memories_search_delete AFTER DELETE ON memories
BEGIN
    DELETE FROM memories_search WHERE rowid = OLD.rowid;
END;

CREATE TRIGGER memories_search_update AFTER UPDATE OF path, content ON memories
WHEN OLD.path IS NOT NEW.path OR OLD.content IS NOT NEW.content
BEGIN
    DELETE FROM memories_search WHERE rowid = OLD.rowid;
    INSERT INTO memories_search (rowid, path, content) VALUES (NEW.rowid, NEW.path, NEW.content);
END;
