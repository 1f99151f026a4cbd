-- 0015: as-of reads flat in the store's history (issue 24, docs/perf/scale.md).
-- "The newest version of memory M with seq <= S" was a bitmap AND of the
-- store's whole versions_by_seq range with M's versions, or a walk over all
-- of M's versions; with this index it is one probe, whatever the length of
-- M's history. As-of pages and reads of a recent moment use it too: the live
-- memories untouched since the moment (a probe each for "no version after
-- S"), patched with the as-of versions of the memories touched since
-- (storage/postgres VersionAsOf). The cost: one more index entry per
-- version written.

CREATE INDEX versions_by_memory_seq ON versions (memory_id, seq);
