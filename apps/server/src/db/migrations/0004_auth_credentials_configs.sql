-- OAuth client registrations (auth credentials) and auth configs (a user's connection: OAuth tokens or an API
-- token). Client secrets and credential data are AES-256-GCM ciphertexts, never plaintext.

create table provider_auth_credentials (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  provider_id text not null references providers (id),
  provider_deployment_id text not null references provider_deployments (id) on delete cascade,
  type text not null,
  client_id text not null,
  client_secret_ciphertext text not null,
  scopes jsonb not null default '[]',
  name text,
  description text,
  metadata jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index provider_auth_credentials_deployment_idx on provider_auth_credentials (provider_deployment_id, id);

create table provider_auth_configs (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  provider_id text not null references providers (id),
  provider_deployment_id text not null references provider_deployments (id) on delete cascade,
  provider_auth_method_id text not null references provider_auth_methods (id),
  -- No ON DELETE action: credentials in use cannot be deleted, but a deployment's cascade removes both.
  provider_auth_credentials_id text references provider_auth_credentials (id),
  type text not null,
  status text not null,
  status_reason text,
  credential_ciphertext text,
  expires_at timestamptz,
  name text,
  description text,
  metadata jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index provider_auth_configs_deployment_idx on provider_auth_configs (provider_deployment_id, id);
create index provider_auth_configs_credentials_idx on provider_auth_configs (provider_auth_credentials_id);
