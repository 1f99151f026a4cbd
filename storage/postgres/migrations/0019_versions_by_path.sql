-- 0019: an as-of page of an older moment in a cost that grows with the page,
-- not with the history before the moment (issue 24, docs/perf/scale.md).
-- storage/postgres's asOfWalk steps, in one recursive query, through the
-- distinct (path, memory ID) pairs of a store's versions in the listing's
-- order (bytewise, NULL paths apart), one seek of this index per pair, and
-- looks up each memory's version as of the moment through
-- versions_by_memory_seq. Before, such a page grouped every version up to
-- the moment by memory: a pass over that history per page.
-- The cost: one more index entry per version written.

CREATE INDEX versions_by_path ON versions (store_id, path, memory_id COLLATE "C", seq);
