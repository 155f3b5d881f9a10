import type { Logger } from "pino";
import type { CallOutcome } from "../mcp/gateway.ts";
import type { GatewaySessionProvider } from "../mcp/gateway-session.ts";
import { countToolCall, upstreamLabelOf } from "./metrics.ts";

/**
 * Where the gateway's own log lines go (upstream failures, OAuth token refreshes that failed). The gateway is shared
 * by the MCP endpoint and the tool-calls API and holds no logger of its own; the app names the process's logger when
 * it is built.
 */
let logger: Logger | null = null;
export function logGatewayTo(processLogger: Logger): void {
  logger = processLogger;
}
export const gatewayLog = (): Logger | null => logger;

/**
 * An upstream's listing that the gateway stopped reading before its last page: the server gave a cursor it had
 * given before (it would never end), or more pages than the gateway reads. What was read is what the session lists.
 */
export function upstreamListingCut(upstream: object, method: string, pages: number, reason: string): void {
  logger?.warn({ provider: upstreamLabelOf(upstream), method, pages, reason }, "upstream listing cut short");
}

/**
 * A finished tool call: counted and timed under its provider, and a call an upstream failed (timed out, could not
 * be reached, answered an error) leaves a warning line naming the provider, session and call. A cancellation is
 * the client's doing, not a failure of the upstream.
 */
export function toolCallFinished(provider: GatewaySessionProvider, outcome: CallOutcome, startedAt: number): void {
  const { record, failure } = outcome;
  const upstreamFailed = failure !== null && failure.code !== "cancelled";
  countToolCall(
    provider.providerSlug,
    record.status,
    (performance.now() - startedAt) / 1000,
    upstreamFailed ? failure.code : null,
  );
  if (!upstreamFailed) return;
  logger?.warn(
    {
      provider: provider.providerSlug,
      providerDeploymentId: provider.providerDeploymentId,
      sessionId: record.session_id,
      toolCallId: record.id,
      code: failure.code,
      reason: failure.message,
    },
    "upstream tool call failed",
  );
}
