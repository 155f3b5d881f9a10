-- The catalog: publishers, provider versions (runtime, config schema, tools), auth methods. Catalog rows have
-- no instance (every instance sees them); custom providers (a later issue) set instance_id.

create table publishers (
  id text collate "C" primary key,
  instance_id text references instances (id) on delete cascade,
  slug text not null,
  name text not null,
  description text,
  image_url text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index publishers_slug_idx on publishers (coalesce(instance_id, ''), slug);

create table provider_versions (
  id text collate "C" primary key,
  provider_id text not null references providers (id) on delete cascade,
  version text not null,
  status text not null,
  runtime jsonb not null,
  config_schema jsonb not null,
  tools jsonb not null default '[]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (provider_id, version)
);

alter table providers add column publisher_id text references publishers (id);
alter table providers add column current_version_id text references provider_versions (id) on delete set null;
alter table providers add column metadata jsonb not null default '{}';

create table provider_auth_methods (
  id text collate "C" primary key,
  provider_id text not null references providers (id) on delete cascade,
  provider_version_id text references provider_versions (id) on delete set null,
  key text not null,
  type text not null,
  name text not null,
  description text,
  input_schema jsonb not null,
  scopes jsonb not null default '[]',
  oauth jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (provider_id, key)
);

alter table servers add constraint servers_provider_unique unique (provider_id);
