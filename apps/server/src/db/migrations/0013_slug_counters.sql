-- The last number handed out per slug base: a create claims the next one with a single upsert (`base`, then
-- `base-2`, `base-3`, …) instead of reading every `base-N` slug and retrying when a concurrent create took the
-- same one, which made a burst of equal names quadratic. `scope` is the table whose slugs the counter numbers.
create table slug_counters (
  instance_id text not null references instances (id) on delete cascade,
  scope text not null,
  base text not null,
  last integer not null,
  primary key (instance_id, scope, base)
);
