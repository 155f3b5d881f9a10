-- Every server process keeps the gateway's view of the sessions it serves in memory (resources/sessions/
-- gateway-view.ts) instead of reading it on every MCP request. These triggers announce each change to what that
-- view is read from on the channel `toolplane_sessions`, so every process drops what it held:
-- - the payload is the session's id when a session or one of its providers changed;
-- - it is `*` when a row many sessions may share changed (a deployment, provider, version, config or portal
--   sign-in): such changes are rare and made by people, so every process reads all its sessions again.
-- Only the columns the view reads fire (the activity counters a busy session updates do not). Notices are sent at
-- commit, and PostgreSQL sends one notice for identical ones raised in one transaction.
-- (The body has no line ending in `;`: migrate.ts splits statements there.)
create function toolplane_session_changed() returns trigger language plpgsql as $$ begin
  perform pg_notify('toolplane_sessions', case when tg_nargs = 0 then '*'
    else coalesce(to_jsonb(new), to_jsonb(old)) ->> tg_argv[0] end); return null; end $$;

create trigger sessions_changed
  after update of instance_id, status, secret_hash, consumer_session_id or delete on sessions
  for each row execute function toolplane_session_changed('id');
create trigger session_providers_changed
  after insert or update or delete on session_providers
  for each row execute function toolplane_session_changed('session_id');
create trigger provider_deployments_changed
  after update of locked_version_id, default_config_id or delete on provider_deployments
  for each row execute function toolplane_session_changed();
create trigger providers_changed
  after update of slug, current_version_id or delete on providers
  for each row execute function toolplane_session_changed();
create trigger provider_versions_changed
  after update of runtime or delete on provider_versions
  for each row execute function toolplane_session_changed();
create trigger provider_configs_changed
  after update of data_ciphertext or delete on provider_configs
  for each row execute function toolplane_session_changed();
create trigger portal_consumer_sessions_changed
  after update of expires_at or delete on portal_consumer_sessions
  for each row execute function toolplane_session_changed();
