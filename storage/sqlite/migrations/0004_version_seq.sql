-- 0004: every version gets its position in its store's history (seq: 1, 2,
-- 3, … in commit order), the cursor of whatever follows a store's changes
-- (the change feed, as-of reads, the audit chain). The counter lives in its
-- own table, version_seqs, rather than on stores: bumping it must not touch
-- the stores row that the committer's store cache remembers. It is never
-- decremented, so a number is never reused even after retention deletes
-- versions.

ALTER TABLE versions ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;

-- Existing versions are numbered in the order they were listed until now.
UPDATE versions SET seq = r.n
FROM (SELECT id, row_number() OVER (PARTITION BY store_id ORDER BY created_at, id) AS n FROM versions) AS r
WHERE r.id = versions.id;

CREATE TABLE version_seqs (
    store_id TEXT    NOT NULL PRIMARY KEY REFERENCES stores (id) ON DELETE CASCADE,
    last     INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO version_seqs (store_id, last) SELECT store_id, max(seq) FROM versions GROUP BY store_id;

-- VersionScan, and one version per number.
CREATE UNIQUE INDEX versions_by_seq ON versions (store_id, seq);
