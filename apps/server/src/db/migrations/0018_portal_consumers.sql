-- Portals become marketplaces: brand fields, OpenID Connect sign-in, consumers (the people who sign in), their
-- consumer sessions (the portal cookie's server side), single-use invitations, and the consumer behind a session.

alter table portals
  add column brand_logo_url text,
  add column brand_primary_color text,
  add column brand_background_color text,
  add column oidc_issuer text,
  add column oidc_client_id text,
  -- AES-256-GCM (SecretBox), bound to the portal id.
  add column oidc_client_secret_ciphertext text,
  add column oidc_scopes jsonb,
  add column oidc_groups_claim text,
  add column oidc_group_mapping jsonb;

create table portal_consumers (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  portal_id text not null references portals (id) on delete cascade,
  status text not null default 'active',
  sign_in_method text not null,
  -- `iss sub` of an OIDC consumer, or the invitation id of an invitation consumer: one consumer per identity.
  identity text not null,
  subject text,
  name text,
  email text,
  consumer_group_ids jsonb not null,
  last_signed_in_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (portal_id, identity)
);
create index portal_consumers_portal_idx on portal_consumers (portal_id, id);

create table portal_consumer_sessions (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  portal_id text not null references portals (id) on delete cascade,
  consumer_id text not null references portal_consumers (id) on delete cascade,
  -- SHA-256 of the cookie's secret part; the cookie itself is never stored.
  token_hash text not null unique,
  expires_at timestamptz not null,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index portal_consumer_sessions_portal_idx on portal_consumer_sessions (portal_id, id);

create table portal_invitations (
  id text collate "C" primary key,
  instance_id text not null references instances (id) on delete cascade,
  portal_id text not null references portals (id) on delete cascade,
  consumer_group_id text not null,
  token_hash text not null unique,
  status text not null default 'pending',
  consumer_id text references portal_consumers (id) on delete set null,
  expires_at timestamptz not null,
  accepted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  foreign key (instance_id, consumer_group_id) references consumer_groups (instance_id, id)
);
create index portal_invitations_portal_idx on portal_invitations (portal_id, id);

-- Sessions a consumer started from a portal: who, through which sign-in, on which portal and from which template
-- (what their access is checked against when access is revoked).
alter table sessions
  add column consumer_id text references portal_consumers (id) on delete set null,
  add column consumer_session_id text references portal_consumer_sessions (id) on delete set null,
  add column portal_id text references portals (id) on delete set null,
  add column portal_template_id text;
create index sessions_consumer_idx on sessions (consumer_id, id) where consumer_id is not null;
