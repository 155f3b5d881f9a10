-- Tool calls (`tcl_`): every tools/call made through a session, over MCP or POST /sessions/:id/tool-calls.
-- A call is inserted `waiting_for_response` before it is routed upstream and completed in place. provider_id
-- and provider_deployment_id are copied from the session provider at call time (list filters); the config,
-- auth config and template filters go through session_providers.
create table tool_calls (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  session_id text not null references sessions (id) on delete cascade,
  session_provider_id text references session_providers (id) on delete set null,
  provider_id text,
  provider_deployment_id text,
  tool_key text not null,
  status text not null default 'waiting_for_response',
  transport text not null,
  message_id text not null,
  connection_id text,
  provider_run_id text,
  tool jsonb,
  input jsonb,
  output jsonb,
  error jsonb,
  metadata jsonb,
  created_at timestamptz not null default now(),
  completed_at timestamptz
);
create index tool_calls_instance_idx on tool_calls (instance_id, id);
create index tool_calls_session_idx on tool_calls (session_id, id);
create index tool_calls_session_provider_idx on tool_calls (session_provider_id);
