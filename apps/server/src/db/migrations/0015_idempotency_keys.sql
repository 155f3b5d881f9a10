-- What a POST with an Idempotency-Key answered, per instance and key, for 24 hours (http/idempotency.ts). Inserting
-- the row claims the key (across processes: the unique index is the lock); `status` stays null while the first
-- request runs. The answer's body is encrypted like every other secret: it can hold one (a session's `secret`).
create table idempotency_keys (
  id text primary key,
  instance_id text not null references instances (id) on delete cascade,
  key text not null,
  request_hash text not null,
  status integer,
  response_headers jsonb,
  response_ciphertext text,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  unique (instance_id, key)
);
create index idempotency_keys_expires_at_idx on idempotency_keys (expires_at);
