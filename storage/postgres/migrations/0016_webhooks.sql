-- 0016: webhook endpoints and their delivery queue, the durable outbox
-- (docs/webhooks.md). core inserts an event's deliveries in the same
-- transaction as the change that causes it and wakes the endpoint's job
-- ("webhook", whep_…) in the jobs table first, so an endpoint's deliveries
-- take their seq in commit order; the sender sends each endpoint's pending
-- deliveries in seq order. A job may now be deferred (JobDefer): free
-- (lease_owner '') with lease_expires_at set to its first claim. New
-- tables: existing data needs no backfill.

CREATE TABLE webhooks (
    id              text        NOT NULL PRIMARY KEY,
    workspace_id    text        NOT NULL,
    name            text        NOT NULL,
    description     text        NOT NULL,
    url             text        NOT NULL,
    enabled_events  jsonb       NOT NULL,
    state           text        NOT NULL,
    disabled_reason text        NOT NULL DEFAULT '',
    secret          text        NOT NULL, -- whsec_…: signs deliveries, so kept as is
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

CREATE INDEX webhooks_by_workspace ON webhooks (workspace_id, created_at, id);

CREATE TABLE webhook_deliveries (
    seq             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id      text        NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        text        NOT NULL,
    event_type      text        NOT NULL,
    payload         bytea       NOT NULL,
    created_at      timestamptz NOT NULL,
    status          text        NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    last_attempt_at timestamptz,
    last_status     integer     NOT NULL DEFAULT 0,
    last_error      text        NOT NULL DEFAULT '',
    delivered_at    timestamptz
);

CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, seq);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, seq) WHERE status = 'pending';
