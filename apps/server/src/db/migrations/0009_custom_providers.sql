-- Custom providers: an instance's own MCP servers. Each owns a catalog provider (providers.instance_id set);
-- each version owns a provider version; two environments (development, production) hold one version each and
-- change only through commits; deployments run from a durable job table.

create table custom_providers (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  provider_id text not null unique references providers (id) on delete cascade,
  type text not null,
  status text not null default 'active',
  name text not null,
  description text,
  metadata jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index custom_providers_instance_idx on custom_providers (instance_id, id);

create table custom_provider_versions (
  id text collate "C" primary key,
  custom_provider_id text not null references custom_providers (id) on delete cascade,
  provider_version_id text not null unique references provider_versions (id) on delete cascade,
  index integer not null,
  status text not null,
  -- `from` without its secrets: remote url/protocol, container image/username, function files and limits.
  source jsonb not null,
  -- The container registry password, SecretBox-encrypted (AAD names the row); null for other kinds.
  password_ciphertext text,
  deployment_id text collate "C" not null unique,
  deployment_trigger text not null,
  deployment_error jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (custom_provider_id, index)
);
create index custom_provider_versions_provider_idx on custom_provider_versions (custom_provider_id, id);

create table custom_provider_environments (
  id text collate "C" primary key,
  custom_provider_id text not null references custom_providers (id) on delete cascade,
  name text not null,
  current_version_id text references custom_provider_versions (id),
  -- Versions held before the current one, most recent last: what successive rollbacks return to.
  history jsonb not null default '[]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (custom_provider_id, name)
);

create table custom_provider_commits (
  id text collate "C" primary key,
  custom_provider_id text not null references custom_providers (id) on delete cascade,
  type text not null,
  status text not null,
  trigger text not null,
  message text not null,
  error jsonb,
  from_environment_id text references custom_provider_environments (id),
  to_environment_id text not null references custom_provider_environments (id),
  target_version_id text not null references custom_provider_versions (id),
  previous_version_id text references custom_provider_versions (id),
  created_at timestamptz not null default now(),
  applied_at timestamptz
);
create index custom_provider_commits_provider_idx on custom_provider_commits (custom_provider_id, id);
create index custom_provider_commits_pending_idx on custom_provider_commits (target_version_id) where status = 'pending';

-- One row per version deployment still to finish. `state` queued → running (claimed with a token and a lease);
-- the row is deleted when the deployment ends. A running row whose process died is re-queued.
create table custom_provider_jobs (
  version_id text collate "C" primary key references custom_provider_versions (id) on delete cascade,
  state text not null default 'queued',
  attempts integer not null default 0,
  claim_token text,
  lease_until timestamptz,
  created_at timestamptz not null default now()
);
create index custom_provider_jobs_state_idx on custom_provider_jobs (state, created_at);
