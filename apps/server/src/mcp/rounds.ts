/**
 * The `requestState` of an `input_required` round the gateway passes on to its client (MCP 2026-07-28): the
 * upstream's own, wrapped with the id of the round's call record, so that the retry bringing the answers is
 * recorded as answering that call (`answers_call_id`). Clients treat `requestState` as opaque; the upstream gets
 * back exactly what it sent (none if it sent none).
 */
const ROUND_PREFIX = "toolplane.round.";

/** The `requestState` the client gets for a round recorded as `recordId`, wrapping the upstream's (if any). */
export function roundState(recordId: string, upstreamState: unknown): string {
  return typeof upstreamState === "string" ? `${ROUND_PREFIX}${recordId}.${upstreamState}` : ROUND_PREFIX + recordId;
}

/**
 * The round a retry's `requestState` answers: the call it names and the upstream's own state (undefined if the
 * upstream sent none); undefined when the state is not one of ours (a continuation's, or a client's own).
 */
export function answeredRound(
  requestState: unknown,
): { callId: string; upstreamState: string | undefined } | undefined {
  if (typeof requestState !== "string" || !requestState.startsWith(ROUND_PREFIX)) return undefined;
  const rest = requestState.slice(ROUND_PREFIX.length);
  const dot = rest.indexOf(".");
  if (dot === -1) return rest ? { callId: rest, upstreamState: undefined } : undefined;
  return dot === 0 ? undefined : { callId: rest.slice(0, dot), upstreamState: rest.slice(dot + 1) };
}
