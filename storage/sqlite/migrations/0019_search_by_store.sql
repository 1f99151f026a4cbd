-- 0019: a search of one store costs what that store's matches cost, however
-- many other stores the database holds (issue 24 item 3, docs/perf/search.md
-- "One store among others").
--
-- 0017's store_key token let a search of named stores walk only their
-- memories' entries, but FTS5's bm25 still counted each query phrase's
-- matches over its whole doclist, every store's, once per query: a search of
-- one store of 10,000 memories among 100 cost 17 to 30 times what it cost
-- alone. Now every memory's words are indexed twice: in path and content
-- (the search of every store of a workspace), and in spath and scontent
-- each word prefixed with its store's key (U+E000, the key in decimal,
-- 'x'). A store's words are then terms of their own, whose doclists hold
-- only that store's memories, and a search of named stores asks for those
-- terms: bm25 counts them over those stores alone.
--
-- What is indexed is the words as trove.SearchWords gives them (the Go
-- function trove_words, storage/sqlite/searchwords.go), no longer the raw
-- text: a query's words are split and folded by that same code, so the
-- two agree where Go's Unicode tables and unicode61's differ (before, a
-- query for a word in a script unicode61 does not fold, Cherokee or
-- Georgian, or with a dotted capital I, did not find it). The text FTS5
-- gets is those words, already split and lower-cased, separated by single
-- spaces; so the tokenizer is 'ascii' (a token is a run of ASCII letters
-- and digits and non-ASCII characters, which is what each word is), which
-- reads the same tokens for far less work than unicode61's category tables.
--
-- store_search_keys gives each store its key, a small integer (short
-- tokens: a store ID would make every token 60 bytes longer), assigned by
-- a trigger when the store is inserted and never reused (AUTOINCREMENT).
-- It is derived data, like the index: backups leave it out, and a restore
-- assigns keys afresh as it inserts the stores.
--
-- The table is rebuilt: every memory is queued, and indexed by the first
-- catch-up (the first search, or the committer's idle work right after the
-- migration).

CREATE TABLE store_search_keys (
    key      INTEGER PRIMARY KEY AUTOINCREMENT,
    store_id TEXT    NOT NULL UNIQUE REFERENCES stores (id) ON DELETE CASCADE
) STRICT;
INSERT INTO store_search_keys (store_id) SELECT id FROM stores ORDER BY rowid;

CREATE TRIGGER stores_search_key AFTER INSERT ON stores
BEGIN
    INSERT INTO store_search_keys (store_id) VALUES (NEW.id);
END;

DELETE FROM memories_search_queue;
DROP TABLE memories_search;
DROP TABLE IF EXISTS memories_search_content;
CREATE VIRTUAL TABLE memories_search USING fts5(
    path, content,
    store_id UNINDEXED, memory_id UNINDEXED, path_key UNINDEXED,
    spath, scontent,
    content = '', contentless_delete = 1, contentless_unindexed = 1,
    tokenize = 'ascii'
);
INSERT INTO memories_search_queue (mrowid) SELECT rowid FROM memories ORDER BY rowid;
