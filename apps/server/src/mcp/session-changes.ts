import { createHash } from "node:crypto";
import type { ChangeFeed } from "../db/changes.ts";
import { onSessionNotice } from "../resources/sessions/gateway-view.ts";
import type { GatewaySession } from "./gateway-session.ts";

/**
 * The notifications a change of the session itself is announced with: adding or removing a provider, a new
 * version, config or credentials of one, or an edited tool filter may change every list (and with a second provider
 * every key gets its provider's prefix). MCP has clients rely on them once a server declares `listChanged`
 * (2025-11-25 server/tools "List Changed Notification"; 2026-07-28 basic/patterns/subscriptions).
 */
export const SESSION_LIST_CHANGES = [
  "notifications/tools/list_changed",
  "notifications/prompts/list_changed",
  "notifications/resources/list_changed",
] as const;

/**
 * What of a session its lists depend on, as a digest (a config is a secret; the digest never leaves the process):
 * per provider its id, slug, version, config, auth config and tool filter. Null for a session that is gone.
 */
function listedOf(session: GatewaySession | null): string | null {
  if (!session || session.status === "deleted") return null;
  const providers = session.providers.map((p) => [
    p.sessionProviderId,
    p.providerSlug,
    p.providerVersionId,
    p.config,
    p.providerAuthConfigId,
    p.toolKeys,
  ]);
  return createHash("sha256").update(JSON.stringify(providers)).digest("base64url");
}

/**
 * Calls `announce` whenever session `sessionId` changed in a way its lists show, as the database's session notices
 * (migration 0022) tell every process, until the returned function is called. A notice says only that something
 * of the session may have changed (its secret, say, or every session's, when a shared row did): the session is read
 * again and compared with what it was when last announced or first read. Without a change feed, nothing is heard.
 */
export function watchSessionLists(
  changes: ChangeFeed | undefined,
  sessionId: string,
  load: () => Promise<GatewaySession | null>,
  announce: () => void,
): () => void {
  if (!changes) return () => undefined;
  let stopped = false;
  // Each notice is compared in turn, after the one before it.
  let known = load().then(listedOf, () => null);
  const stop = onSessionNotice(changes, sessionId, () => {
    const before = known;
    known = before.then(async (previous) => {
      const now = await load().then(listedOf, () => previous);
      if (!stopped && previous !== null && now !== null && now !== previous) announce();
      return now;
    });
  });
  return () => {
    stopped = true;
    stop();
  };
}
