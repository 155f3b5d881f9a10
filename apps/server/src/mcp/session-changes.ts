import { createHash } from "node:crypto";
import type { ChangeFeed } from "../db/changes.ts";
import { onSessionNotices } from "../resources/sessions/gateway-view.ts";
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
 * The session watchers of this process (a 2025 connection's, a `subscriptions/listen` hub's), fed by one listener of
 * the database's session notices (migration 0022) however many there are. Without a change feed, nothing is heard.
 */
export class SessionListWatchers {
  private readonly bySession = new Map<string, Set<() => void>>();

  constructor(private readonly changes: ChangeFeed | undefined) {
    if (changes) onSessionNotices(changes, (sessionId) => this.noticed(sessionId));
  }

  /**
   * Calls `announce` with the session as it now is whenever `session` changed in a way its lists show, until the
   * returned function is called. A notice says only that something of the session may have changed (its secret,
   * say, or every session's, when a shared row did): the session is read again and compared with what it was when
   * last announced, or as given (read by the request that opened what watches it, so watching costs no read until a
   * notice).
   */
  watch(
    session: GatewaySession,
    load: () => Promise<GatewaySession | null>,
    announce: (session: GatewaySession) => void,
  ): () => void {
    if (!this.changes) return () => undefined;
    let stopped = false;
    // Each notice is compared in turn, after the one before it.
    let known = Promise.resolve(listedOf(session));
    const noticed = () => {
      known = known.then(async (previous) => {
        const now = await load().catch(() => undefined);
        const listed = now === undefined ? previous : listedOf(now);
        if (!stopped && now && previous !== null && listed !== null && listed !== previous) announce(now);
        return listed;
      });
    };
    const watchers = this.bySession.get(session.id) ?? new Set();
    watchers.add(noticed);
    this.bySession.set(session.id, watchers);
    return () => {
      stopped = true;
      watchers.delete(noticed);
      if (watchers.size === 0 && this.bySession.get(session.id) === watchers) this.bySession.delete(session.id);
    };
  }

  private noticed(sessionId: string | null): void {
    const watched = sessionId === null ? [...this.bySession.values()] : [this.bySession.get(sessionId)];
    for (const watchers of watched) for (const noticed of watchers ?? []) noticed();
  }
}
