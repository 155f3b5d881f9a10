-- The JSON-RPC error a failed task of the MCP Tasks extension (2026-07-28, SEP-2663) ended with, as the session's
-- tasks/get returned it (mcp/gateway.ts taskSeen): 2025-11-25's tasks/result answers such a task with that error
-- instead, which no record kept.
alter table tool_calls add column task_error jsonb;
