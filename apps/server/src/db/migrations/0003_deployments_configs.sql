-- Provider deployments, their configs and config vaults. Config and vault data are AES-256-GCM ciphertexts
-- (see src/secrets): never plaintext, never returned.

create table provider_deployments (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  provider_id text not null references providers (id),
  locked_version_id text references provider_versions (id),
  default_config_id text,
  name text not null,
  description text,
  metadata jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index provider_deployments_instance_idx on provider_deployments (instance_id, id);

create table provider_config_vaults (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  provider_id text not null references providers (id),
  provider_deployment_id text not null references provider_deployments (id) on delete cascade,
  name text not null,
  description text,
  metadata jsonb,
  data_ciphertext text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index provider_config_vaults_deployment_idx on provider_config_vaults (provider_deployment_id, id);

create table provider_configs (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  provider_id text not null references providers (id),
  provider_deployment_id text not null references provider_deployments (id) on delete cascade,
  provider_version_id text not null references provider_versions (id),
  source text not null,
  name text not null,
  description text,
  metadata jsonb,
  data_ciphertext text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index provider_configs_deployment_idx on provider_configs (provider_deployment_id, id);

alter table provider_deployments
  add constraint provider_deployments_default_config_fk
  foreign key (default_config_id) references provider_configs (id) on delete set null;
