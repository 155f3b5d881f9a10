-- Sessions (one MCP endpoint each), their providers, and the providers of session templates. A session's
-- secret is stored only as its SHA-256. Session providers keep the ids they were created with for reference
-- (a removed provider or an ended session outlives its deployment), so provider_deployment_id has no foreign
-- key there; deletes of deployments (and of configs and auth configs) are refused while an active session or
-- a template uses them (assertNotUsedBySessions), and the references ended sessions keep to configs and auth
-- configs are cleared when those go.

create table sessions (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  name text,
  description text,
  metadata jsonb,
  status text not null default 'active',
  secret_hash text not null,
  -- JSON-RPC messages received over MCP plus tool calls created through the API (the gateway counts them).
  message_count integer not null default 0,
  -- The session counts as connected until then; the gateway extends it on MCP activity and clears it on close.
  connected_until timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index sessions_instance_idx on sessions (instance_id, id);

create table session_providers (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  session_id text not null references sessions (id) on delete cascade,
  provider_id text not null references providers (id),
  provider_deployment_id text not null,
  provider_config_id text references provider_configs (id) on delete set null,
  provider_auth_config_id text references provider_auth_configs (id) on delete set null,
  session_template_id text references session_templates (id) on delete set null,
  status text not null default 'active',
  name text,
  description text,
  metadata jsonb,
  tool_filters jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index session_providers_session_idx on session_providers (session_id, id);
create index session_providers_deployment_idx on session_providers (provider_deployment_id);
create index session_providers_config_idx on session_providers (provider_config_id);
create index session_providers_auth_config_idx on session_providers (provider_auth_config_id);

create table session_template_providers (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  session_template_id text not null references session_templates (id) on delete cascade,
  provider_id text not null references providers (id),
  provider_deployment_id text not null references provider_deployments (id),
  provider_config_id text references provider_configs (id) on delete set null,
  provider_auth_config_id text references provider_auth_configs (id) on delete set null,
  name text,
  description text,
  metadata jsonb,
  tool_filters jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index session_template_providers_template_idx on session_template_providers (session_template_id, id);
create index session_template_providers_deployment_idx on session_template_providers (provider_deployment_id);
create index session_template_providers_config_idx on session_template_providers (provider_config_id);
create index session_template_providers_auth_config_idx on session_template_providers (provider_auth_config_id);
