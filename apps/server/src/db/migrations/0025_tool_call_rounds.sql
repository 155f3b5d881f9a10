-- A retry that answers an input_required round (MCP 2026-07-28) names the round's call: the gateway passes the
-- upstream's requestState on wrapped with the round's record id (mcp/rounds.ts). Checked to be a call of the same
-- session before it is written; no foreign key, so the hot path's insert pays for no check.
alter table tool_calls add column answers_call_id text;
