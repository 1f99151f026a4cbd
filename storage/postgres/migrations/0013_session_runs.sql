-- 0013: jobs, a small durable work queue with leases (storage.Tx.JobClaim).
-- The session agent loop keeps one job per agent session ("session_run"):
-- woken when input arrives, claimed by one node at a time (FOR UPDATE SKIP
-- LOCKED), released when the turn is done. A new table: existing data needs
-- no backfill.

CREATE TABLE jobs (
    kind             text        NOT NULL,
    key              text        NOT NULL,
    pending          boolean     NOT NULL DEFAULT false,
    wake_seq         bigint      NOT NULL DEFAULT 0,
    lease_owner      text        NOT NULL DEFAULT '',
    lease_expires_at timestamptz,
    attempts         bigint      NOT NULL DEFAULT 0,
    woken_at         timestamptz NOT NULL,
    PRIMARY KEY (kind, key)
);

-- JobClaim: the pending jobs of a kind, least recently woken first.
CREATE INDEX jobs_pending ON jobs (kind, woken_at) WHERE pending;
