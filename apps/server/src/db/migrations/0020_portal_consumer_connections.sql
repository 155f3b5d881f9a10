-- Portal consumers' own OAuth connections: a template provider without an auth config, whose provider signs in with
-- OAuth, is connected per consumer through a setup session started from the portal. The flow and the auth config it
-- creates belong to that consumer (the portal uses it for their sessions only); they go with the consumer.
alter table oauth_flows add column consumer_id text references portal_consumers (id) on delete cascade;
alter table provider_auth_configs add column consumer_id text references portal_consumers (id) on delete cascade;
create index provider_auth_configs_consumer_idx on provider_auth_configs (consumer_id, provider_deployment_id)
  where consumer_id is not null;

-- A connection made on a portal lasts as long as the sign-in it was made in: the sweep that ends those whose sign-in
-- expired reads only live portal sessions.
create index sessions_consumer_session_idx on sessions (consumer_session_id)
  where consumer_session_id is not null and status <> 'deleted';
