-- Auth exports keep an encrypted copy of what they exported (get returns it again); auth imports are records
-- of credential data written into an auth config (the data itself lives, encrypted, on the auth config).

create table provider_auth_exports (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  provider_auth_config_id text not null references provider_auth_configs (id) on delete cascade,
  note text not null,
  metadata jsonb,
  value_ciphertext text not null,
  created_at timestamptz not null default now()
);
create index provider_auth_exports_config_idx on provider_auth_exports (provider_auth_config_id, id);

create table provider_auth_imports (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  provider_id text not null references providers (id),
  provider_deployment_id text not null references provider_deployments (id) on delete cascade,
  provider_auth_config_id text not null references provider_auth_configs (id) on delete cascade,
  provider_auth_method_id text not null references provider_auth_methods (id),
  note text not null,
  metadata jsonb,
  created_at timestamptz not null default now()
);
create index provider_auth_imports_config_idx on provider_auth_imports (provider_auth_config_id, id);
