-- 0012: jobs, a small durable work queue with leases (storage.Tx.JobClaim).
-- The session agent loop keeps one job per agent session ("session_run"):
-- woken when input arrives, claimed by one node at a time, released when
-- the turn is done. A new table: existing data needs no backfill.

CREATE TABLE jobs (
    kind             TEXT    NOT NULL,
    key              TEXT    NOT NULL,
    pending          INTEGER NOT NULL DEFAULT 0,
    wake_seq         INTEGER NOT NULL DEFAULT 0,
    lease_owner      TEXT    NOT NULL DEFAULT '',
    lease_expires_at INTEGER,
    attempts         INTEGER NOT NULL DEFAULT 0,
    woken_at         INTEGER NOT NULL,
    PRIMARY KEY (kind, key)
) STRICT;

-- JobClaim: the pending jobs of a kind, least recently woken first.
CREATE INDEX jobs_pending ON jobs (kind, woken_at) WHERE pending = 1;
