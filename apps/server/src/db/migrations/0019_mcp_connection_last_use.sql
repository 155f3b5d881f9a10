-- When a 2025-era MCP connection was last used, on any replica: connections no client used for
-- TOOLPLANE_MCP_CONNECTION_IDLE_MS are deleted (clients rarely send DELETE), so the table does not grow for good.
alter table mcp_connections add column last_used_at timestamptz not null default now();
create index mcp_connections_last_used_idx on mcp_connections (last_used_at);
