-- The task a task-augmented tools/call (MCP tasks) created at its upstream: its id there, and its status and outcome
-- as the session's tasks/get, tasks/cancel and tasks/result last returned them (mcp/gateway.ts recordTask). Found
-- by session provider and upstream task id, which is how those requests name it.
alter table tool_calls add column task_id text;
alter table tool_calls add column task_status text;
alter table tool_calls add column task_result jsonb;
alter table tool_calls add column task_updated_at timestamptz;
create index tool_calls_task_idx on tool_calls (session_provider_id, task_id) where task_id is not null;
