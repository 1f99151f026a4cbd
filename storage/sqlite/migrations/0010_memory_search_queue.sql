-- 0010: the search index (0007) is written once per group commit, not once
-- per memory write.
--
-- Why: FTS5 writes the rows it holds in memory to a new segment of the
-- index whenever SQLite opens a statement savepoint while the table is
-- part of the transaction, and SQLite opens one for every statement that
-- fires a trigger and may abort, which every write to memories is. With
-- 0007's triggers, each memory write of a group therefore became a
-- segment of its own (16 writes in one commit: 16 segments), and FTS5's
-- merging of those many small segments, inside the committer, was most of
-- the index's cost (docs/perf/search.md).
--
-- How: the triggers on memories no longer write to memories_search; they
-- note the memory's rowid in memories_search_queue (indexed: whether
-- memories_search holds an entry for that rowid that must be deleted
-- first). The driver's committer applies the queue to memories_search
-- (DB.syncSearch: delete the stale entries, insert the current rows in
-- rowid order, empty the queue) in the same transaction, right before the
-- group's COMMIT, so the index is in step at every commit as before; a
-- MemorySearch inside a Write applies the queue first, so it also sees
-- the Write's own changes. A fn that fails rolls back its queue rows with
-- its other changes (savepoint or whole group). A change to memories made
-- outside the committer (none in the product) stays queued until the next
-- group commit applies it.
--
-- The queue keeps one row per memory rowid changed in the group: insert
-- OR IGNORE keeps the first indexed flag, which is the one that describes
-- memories_search (a rowid deleted and reused within one group is
-- indexed = 1: its old entry must go; one inserted and deleted within the
-- group is indexed = 0 and is neither deleted nor inserted).

CREATE TABLE memories_search_queue (
    rowid   INTEGER NOT NULL PRIMARY KEY,
    indexed INTEGER NOT NULL
) STRICT;

DROP TRIGGER memories_search_insert;
DROP TRIGGER memories_search_delete;
DROP TRIGGER memories_search_update;

CREATE TRIGGER memories_search_insert AFTER INSERT ON memories
BEGIN
    INSERT OR IGNORE INTO memories_search_queue (rowid, indexed) VALUES (NEW.rowid, 0);
END;

CREATE TRIGGER memories_search_delete AFTER DELETE ON memories
BEGIN
    INSERT OR IGNORE INTO memories_search_queue (rowid, indexed) VALUES (OLD.rowid, 1);
END;

CREATE TRIGGER memories_search_update AFTER UPDATE OF path, content, store_id, id ON memories
WHEN OLD.path IS NOT NEW.path OR OLD.content IS NOT NEW.content OR OLD.store_id IS NOT NEW.store_id OR OLD.id IS NOT NEW.id
BEGIN
    INSERT OR IGNORE INTO memories_search_queue (rowid, indexed) VALUES (OLD.rowid, 1);
END;
