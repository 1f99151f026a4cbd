-- 0003: the retention job checks whether a version is its memory's current
-- one through the memory's primary key (versions.memory_id), so nothing
-- needs memories by version_id any more. The index cost every create and
-- update two extra b-tree changes (and their pages in the WAL) in the
-- committer.

DROP INDEX memories_by_version;
