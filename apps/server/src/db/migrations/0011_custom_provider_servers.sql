-- Custom providers get their entry in GET /servers: from now on src/custom-providers/server.ts keeps one server
-- row per custom provider in step with it. This backfills the custom providers created before, once, with the
-- variant server.ts would build (a migration is a snapshot: the TypeScript is the rule from here on). The server
-- id reuses the custom provider's time-sortable part, so the backfilled rows sort by creation like the others.

insert into servers (id, instance_id, provider_id, type, status, name, description, imported_server_id, metadata,
  variants, created_at, updated_at)
select
  'srv_' || substr(cp.id, 5),
  cp.instance_id,
  cp.provider_id,
  'public',
  cp.status,
  cp.name,
  cp.description,
  null,
  '{}'::jsonb,
  case
    when cv.id is null then '[]'::jsonb
    else jsonb_build_array(jsonb_build_object(
      'status', cp.status,
      'source', src.source,
      'current_version', jsonb_build_object(
        'oauth_status', 'not_required',
        'source', src.source,
        'schema', v.config_schema,
        'created_at', to_char(v.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))))
  end,
  cp.created_at,
  now()
from custom_providers cp
join providers p on p.id = cp.provider_id
left join custom_provider_versions cv on cv.provider_version_id = p.current_version_id
left join provider_versions v on v.id = p.current_version_id
cross join lateral (
  select case cv.source ->> 'type'
    when 'remote' then jsonb_build_object('type', 'remote', 'remote',
      jsonb_build_object('url', cv.source -> 'remote_url', 'protocol', cv.source -> 'protocol'))
    when 'function' then jsonb_build_object('type', 'stdio', 'stdio',
      jsonb_build_object('command', 'node', 'args', jsonb_build_array(cv.source -> 'entrypoint')))
    when 'container' then jsonb_build_object('type', 'container', 'container',
      jsonb_build_object('image_ref', cv.source -> 'image_ref'))
  end as source
) src
on conflict (provider_id) do nothing;
