-- The log level a 2025-era client set on its MCP connection with logging/setLevel. Its requests may land on any
-- replica: each one filters the log messages it relays by this level and asks a 2026-07-28 upstream for it; the
-- replica holding the connection's stream hears of a change through NOTIFY (mcp/log-levels.ts). Null until set
-- (the client gets every message, as MCP 2025 has it).
alter table mcp_connections add column log_level text;
