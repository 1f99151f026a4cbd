-- 0011: managed sessions (Managed Agents /v1/sessions) in the one sessions
-- table: agent-less sessions keep agent_id = '' and environment_id = ''.
-- Existing sessions become idle, or terminated when ended; their
-- updated_at is their last change (end or creation).
ALTER TABLE sessions ADD COLUMN title TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE sessions ADD COLUMN status TEXT NOT NULL DEFAULT 'idle';
ALTER TABLE sessions ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN archived_at INTEGER;
ALTER TABLE sessions ADD COLUMN agent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN agent_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN environment_id TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN usage_input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN usage_output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN usage_cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN usage_cache_creation_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN active_micros INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN running_since INTEGER;
ALTER TABLE sessions ADD COLUMN budget_currency TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN budget_amount TEXT NOT NULL DEFAULT '';

UPDATE sessions SET status = 'terminated' WHERE ended_at IS NOT NULL;
UPDATE sessions SET updated_at = coalesce(ended_at, created_at);

-- SessionList filtered by agent.
CREATE INDEX sessions_by_agent ON sessions (agent_id, created_at) WHERE agent_id <> '';

-- The tool use a result or confirmation answers (core's RefID), to refuse
-- a second answer or one to an unknown tool use.
ALTER TABLE session_events ADD COLUMN ref_id TEXT;
CREATE INDEX session_events_by_ref ON session_events (session_id, ref_id) WHERE ref_id IS NOT NULL;
