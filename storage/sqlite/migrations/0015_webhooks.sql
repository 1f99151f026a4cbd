-- 0015: webhook endpoints and their delivery queue, the durable outbox
-- (docs/webhooks.md). core inserts an event's deliveries in the same
-- transaction as the change that causes it and wakes the endpoint's job
-- ("webhook", whep_…) in the jobs table; the sender sends each endpoint's
-- pending deliveries in seq order. A job may now be deferred (JobDefer):
-- free (lease_owner '') with lease_expires_at set to its first claim. New
-- tables: existing data needs no backfill.

CREATE TABLE webhooks (
    id              TEXT    NOT NULL PRIMARY KEY,
    workspace_id    TEXT    NOT NULL,
    name            TEXT    NOT NULL,
    description     TEXT    NOT NULL,
    url             TEXT    NOT NULL,
    enabled_events  TEXT    NOT NULL, -- JSON array of event types
    state           TEXT    NOT NULL,
    disabled_reason TEXT    NOT NULL DEFAULT '',
    secret          TEXT    NOT NULL, -- whsec_…: signs deliveries, so kept as is
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;

CREATE INDEX webhooks_by_workspace ON webhooks (workspace_id, created_at, id);

CREATE TABLE webhook_deliveries (
    seq             INTEGER PRIMARY KEY, -- rowid: grows with every insert
    webhook_id      TEXT    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        TEXT    NOT NULL,
    event_type      TEXT    NOT NULL,
    payload         BLOB    NOT NULL,
    created_at      INTEGER NOT NULL,
    status          TEXT    NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_attempt_at INTEGER,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT    NOT NULL DEFAULT '',
    delivered_at    INTEGER
) STRICT;

-- The delivery log, newest first, and DeliveryNext: the oldest pending.
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, seq);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, seq) WHERE status = 'pending';
