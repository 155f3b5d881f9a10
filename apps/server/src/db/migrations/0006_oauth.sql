-- OAuth flows (OAuth setups `poas_` and setup sessions `pas_`, one table: both run the same authorization-code
-- flow) and OAuth token imports. The PKCE verifier and imported tokens are AES-256-GCM ciphertexts; the OAuth
-- `state` is kept only as its SHA-256, so a database reader cannot complete someone's flow.

create table oauth_flows (
  id text collate "C" primary key,
  kind text not null, -- oauth_setup | setup_session
  instance_id text not null references instances (id) on delete cascade,
  provider_id text not null references providers (id),
  provider_deployment_id text not null references provider_deployments (id) on delete cascade,
  provider_auth_method_id text not null references provider_auth_methods (id),
  provider_auth_credentials_id text references provider_auth_credentials (id) on delete set null,
  provider_auth_config_id text references provider_auth_configs (id) on delete set null,
  -- pending | opened | completed | failed | expired (each kind names pending/opened its own way on the wire)
  status text not null,
  failure_reason text,
  is_ephemeral boolean not null default false,
  name text,
  description text,
  metadata jsonb,
  redirect_url text,
  -- {scopes?, extra_authorize_params?} of an OAuth setup's `config`
  config jsonb not null default '{}',
  -- Random capability in the start URL (with the id): ids are time-sortable, so not unguessable alone.
  start_key text not null,
  state_hash text unique,
  state_used_at timestamptz,
  verifier_ciphertext text,
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index oauth_flows_deployment_idx on oauth_flows (provider_deployment_id, kind, id);

create table provider_oauth_token_imports (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  -- No foreign key: an import outlives its connection (it then reads as `revoked`).
  provider_auth_config_id text not null,
  provider_deployment_id text,
  access_token_ciphertext text not null,
  id_token_ciphertext text,
  identifier text not null,
  scope text,
  token_type text,
  note text,
  metadata jsonb,
  expires_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index provider_oauth_token_imports_instance_idx on provider_oauth_token_imports (instance_id, id);
create index provider_oauth_token_imports_config_idx on provider_oauth_token_imports (provider_auth_config_id);
