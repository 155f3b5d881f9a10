-- Re-authentication links: when the refresh of an auth config's tokens fails for good (invalid_grant, or an expired
-- token without a refresh token), the gateway's error carries the URL of a setup session that signs in again and
-- repairs that same auth config (its id, and so every session that references it, stays). Deleting the auth config
-- deletes its pending repair, so a link never turns into a new connection.
alter table oauth_flows
  add column repairs_provider_auth_config_id text references provider_auth_configs (id) on delete cascade;
create index oauth_flows_repairs_idx on oauth_flows (repairs_provider_auth_config_id)
  where repairs_provider_auth_config_id is not null;
