-- A running tool call holds a lease that the process running it renews (mcp/gateway.ts CallsInFlight). A call whose
-- lease ran out belongs to a process that died: any process fails it (failExpiredCalls) instead of leaving it
-- waiting_for_response for good.
alter table tool_calls add column lease_until timestamptz not null default now() + interval '1 minute';
create index tool_calls_waiting_lease_idx on tool_calls (lease_until) where status = 'waiting_for_response';
