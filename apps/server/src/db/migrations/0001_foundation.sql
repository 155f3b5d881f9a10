-- Instances (tenants), API keys, the catalog tables the foundation reads, provider groups, session templates
-- and portals. Ids are prefixed ULIDs compared bytewise ("C" collation) so keyset pagination follows creation.

create table instances (
  id text collate "C" primary key,
  name text not null,
  created_at timestamptz not null default now()
);

create table api_keys (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  name text,
  prefix text not null unique,
  secret_hash text not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
create index api_keys_instance_idx on api_keys (instance_id, id);

create table providers (
  id text collate "C" primary key,
  instance_id text references instances (id) on delete cascade,
  name text not null,
  slug text not null,
  description text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index providers_slug_idx on providers (coalesce(instance_id, ''), slug);

create table provider_listings (
  id text collate "C" primary key,
  provider_id text not null unique references providers (id) on delete cascade,
  instance_id text references instances (id) on delete cascade,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table servers (
  id text collate "C" primary key,
  instance_id text references instances (id) on delete cascade,
  provider_id text references providers (id) on delete set null,
  type text not null default 'public',
  status text not null default 'active',
  name text not null,
  description text,
  imported_server_id text,
  metadata jsonb not null default '{}',
  variants jsonb not null default '[]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table provider_groups (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  name text not null,
  description text,
  slug text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (instance_id, slug)
);
create index provider_groups_instance_idx on provider_groups (instance_id, id);

create table provider_group_listings (
  provider_group_id text not null references provider_groups (id) on delete cascade,
  provider_listing_id text not null references provider_listings (id) on delete cascade,
  added_at timestamptz not null default clock_timestamp(),
  primary key (provider_group_id, provider_listing_id)
);

create table session_templates (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  name text not null,
  description text,
  metadata jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index session_templates_instance_idx on session_templates (instance_id, id);

create table portals (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  status text not null default 'active',
  name text not null,
  slug text not null,
  description text,
  brand_name text,
  session_expiry_seconds integer not null default 86400,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (instance_id, slug)
);
create index portals_instance_idx on portals (instance_id, id);

create table consumer_groups (
  id text collate "C" not null,
  instance_id text not null references instances (id) on delete cascade,
  status text not null default 'active',
  created_at timestamptz not null default now(),
  primary key (instance_id, id)
);

create table portal_consumer_access (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  portal_id text not null references portals (id) on delete cascade,
  consumer_group_id text not null,
  access_type text not null,
  session_template_id text not null references session_templates (id) on delete cascade,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  foreign key (instance_id, consumer_group_id) references consumer_groups (instance_id, id),
  unique (portal_id, consumer_group_id, session_template_id)
);
create index portal_consumer_access_portal_idx on portal_consumer_access (portal_id, id);
