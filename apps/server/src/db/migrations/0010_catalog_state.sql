-- The digest of the catalog files (and loader) last loaded in full: a start whose files are unchanged skips the
-- reload. One row at most; any partial load (the catalog CLI, test fixtures) deletes it so the next start reloads.
create table catalog_state (
  singleton boolean primary key default true check (singleton),
  digest text not null,
  loaded_at timestamptz not null
);
