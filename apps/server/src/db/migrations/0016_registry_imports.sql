-- Incremental MCP Registry imports (catalog/registry): per registry base URL, the newest `updatedAt` the last
-- import saw, sent as `updated_since` by the next one so it fetches only what changed since.
create table registry_imports (
  source text primary key,
  updated_since timestamptz,
  last_run_at timestamptz not null
);
