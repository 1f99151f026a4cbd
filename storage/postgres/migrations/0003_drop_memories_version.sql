-- 0003: the retention job checks whether a version is its memory's current
-- one through the memory's primary key (versions.memory_id), so nothing
-- needs memories by version_id any more; the index cost every create and
-- update an extra index entry.

DROP INDEX memories_version;
