-- MCP connections (`scn_`) of 2025-era clients: the Streamable HTTP sessions (`Mcp-Session-Id`) they initialised.
-- What the client declared at initialize is kept here so that a replica other than the one that answered
-- initialize can serve the connection's later requests (its open streams stay where they were opened).
create table mcp_connections (
  id text collate "C" primary key,
  session_id text not null references sessions (id) on delete cascade,
  protocol_version text not null,
  client_capabilities jsonb not null,
  client_info jsonb,
  created_at timestamptz not null default now()
);
create index mcp_connections_session_idx on mcp_connections (session_id);
