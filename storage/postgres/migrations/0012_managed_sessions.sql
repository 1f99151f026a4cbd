-- 0012: managed sessions (Managed Agents /v1/sessions) in the one sessions
-- table: agent-less sessions keep agent_id = '' and environment_id = ''.
-- Existing sessions become idle, or terminated when ended; their
-- updated_at is their last change (end or creation).
ALTER TABLE sessions
    ADD COLUMN title text NOT NULL DEFAULT '',
    ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN status text NOT NULL DEFAULT 'idle',
    ADD COLUMN updated_at timestamptz,
    ADD COLUMN archived_at timestamptz,
    ADD COLUMN agent_id text NOT NULL DEFAULT '',
    ADD COLUMN agent_version bigint NOT NULL DEFAULT 0,
    ADD COLUMN environment_id text NOT NULL DEFAULT '',
    ADD COLUMN usage_input_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN usage_output_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN usage_cache_read_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN usage_cache_creation_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN active_micros bigint NOT NULL DEFAULT 0,
    ADD COLUMN running_since timestamptz,
    ADD COLUMN budget_currency text NOT NULL DEFAULT '',
    ADD COLUMN budget_amount text NOT NULL DEFAULT '';

UPDATE sessions SET status = 'terminated' WHERE ended_at IS NOT NULL;
UPDATE sessions SET updated_at = coalesce(ended_at, created_at);
ALTER TABLE sessions ALTER COLUMN updated_at SET NOT NULL;

-- SessionList filtered by agent.
CREATE INDEX sessions_by_agent ON sessions (agent_id, created_at) WHERE agent_id <> '';

-- The tool use a result or confirmation answers (core's RefID), to refuse
-- a second answer or one to an unknown tool use.
ALTER TABLE session_events ADD COLUMN ref_id text;
CREATE INDEX session_events_by_ref ON session_events (session_id, ref_id) WHERE ref_id IS NOT NULL;
