import { sql } from "kysely";
import type { ChangeFeed } from "../../db/changes.ts";
import type { Db } from "../../db/database.ts";
import type { JsonObject } from "../../db/schema.ts";
import { prepared } from "../../lib/prepared.ts";
import type { GatewaySession, GatewaySessionProvider, LoadGatewaySession } from "../../mcp/gateway-session.ts";
import type { SecretBox } from "../../secrets/secret-box.ts";
import { configAad } from "../provider-configs/service.ts";
import { endSessionsOfExpiredSignIns } from "./service.ts";

/**
 * The gateway's view of a session: its providers that are not removed, each with the
 * runtime of the version its deployment runs (the locked version, else the provider's current one), the config
 * it applies (its own, else the deployment's default) decrypted, its auth config and its tool filter. A
 * provider whose deployment has no version to run is left out: there is nothing to reach.
 */
export function gatewaySessionLoader(db: Db, secrets: SecretBox, changes?: ChangeFeed): LoadGatewaySession {
  // One round trip per request (the gateway's hot path): the session row with its providers joined laterally,
  // one row per provider, or one row with null provider columns when it has none.
  const query = prepared(["sessionId"], (p) =>
    db
      .selectFrom("sessions as s")
      .leftJoinLateral(
        (eb) =>
          eb
            .selectFrom("session_providers as sp")
            .innerJoin("provider_deployments as d", "d.id", "sp.provider_deployment_id")
            .innerJoin("providers as p", "p.id", "sp.provider_id")
            .innerJoin("provider_versions as v", (join) =>
              join.on(sql<boolean>`v.id = coalesce(d.locked_version_id, p.current_version_id)`),
            )
            .leftJoin("provider_configs as c", (join) =>
              join.on(sql<boolean>`c.id = coalesce(sp.provider_config_id, d.default_config_id)`),
            )
            .select([
              "sp.id as sp_id",
              "sp.provider_id",
              "p.slug",
              "sp.provider_deployment_id",
              "v.id as version_id",
              "v.runtime",
              "c.id as config_id",
              "c.data_ciphertext",
              "sp.provider_auth_config_id",
              "sp.tool_filters",
            ])
            .whereRef("sp.session_id", "=", "s.id")
            .where("sp.status", "!=", "removed")
            .as("sp"),
        (join) => join.onTrue(),
      )
      .leftJoin("portal_consumer_sessions as cs", "cs.id", "s.consumer_session_id")
      .select(["s.id", "s.instance_id", "s.status", "s.secret_hash", "cs.expires_at as sign_in_expires_at"])
      .selectAll("sp")
      .where("s.id", "=", p.sessionId)
      .orderBy("sp.sp_id"),
  );
  // Requests for the same session that arrive while its load is under way share that load: a busy session (many
  // clients, or one client's concurrent calls) costs one read at a time, not one per request, and what each
  // request sees was read after it arrived or just before (never from an earlier request's finished read).
  const loading = new Map<string, Promise<GatewaySession | null>>();
  const ttlMs = sessionCacheMs();
  const cache = changes && ttlMs > 0 ? new SessionCache(changes, ttlMs) : null;
  return (sessionId) => {
    const held = cache?.get(sessionId);
    if (held) return Promise.resolve(held);
    let load = loading.get(sessionId);
    if (!load) {
      const ticket = cache?.ticket() ?? null;
      load = read(sessionId)
        .then((read) => {
          if (!read) return null;
          if (cache && ticket !== null) cache.keep(ticket, read.session, read.signInExpiresAt);
          return read.session;
        })
        .finally(() => loading.delete(sessionId));
      loading.set(sessionId, load);
    }
    return load;
  };

  async function read(sessionId: string): Promise<{ session: GatewaySession; signInExpiresAt: Date | null } | null> {
    const rows = (await db.executeQuery(query({ sessionId }))).rows;
    const session = rows[0];
    if (!session) return null;
    let status = session.status;
    // A portal connection whose sign-in expired ends now, in the database too (the periodic sweep may not have run).
    if (status !== "deleted" && session.sign_in_expires_at && session.sign_in_expires_at.getTime() <= Date.now()) {
      await endSessionsOfExpiredSignIns(db, { sessionId });
      status = "deleted";
    }
    const view: GatewaySession = {
      id: session.id,
      instanceId: session.instance_id,
      status,
      secretHash: session.secret_hash,
      providers: rows.flatMap((r): GatewaySessionProvider[] =>
        r.sp_id && r.provider_id && r.slug && r.provider_deployment_id && r.version_id && r.runtime
          ? [
              {
                sessionProviderId: r.sp_id,
                providerId: r.provider_id,
                providerSlug: r.slug,
                providerDeploymentId: r.provider_deployment_id,
                providerVersionId: r.version_id,
                runtime: r.runtime,
                config:
                  r.config_id && r.data_ciphertext
                    ? secrets.decryptJson<JsonObject>(r.data_ciphertext, configAad(r.config_id))
                    : null,
                providerAuthConfigId: r.provider_auth_config_id,
                toolKeys: r.tool_filters?.tool_keys ?? null,
              },
            ]
          : [],
      ),
    };
    return { session: view, signInExpiresAt: session.sign_in_expires_at };
  }
}

/** The channel of the notices raised by migration 0022's triggers: a session's id, or `*` for all of them. */
const SESSION_NOTICES = "toolplane_sessions";

/**
 * Calls `listener` with the id of each session that may have changed, or with null when every session may have (a
 * row many share changed, or notices may have been missed). Meant once per process: each listener costs the
 * database a LISTEN of its own (on PGlite, a statement run beside the pool's). Returns the function that stops it.
 */
export function onSessionNotices(changes: ChangeFeed, listener: (sessionId: string | null) => void): () => void {
  return changes.listen(SESSION_NOTICES, (changed) => listener(changed === null || changed === "*" ? null : changed));
}
/** The tables the view is read from: a write of this process to one of them drops what it holds at once. */
const VIEW_TABLES = new Set([
  "sessions",
  "session_providers",
  "provider_deployments",
  "providers",
  "provider_versions",
  "provider_configs",
  "portal_consumer_sessions",
]);
const MAX_HELD = 10_000;
const sessionCacheMs = () => Number(process.env.TOOLPLANE_SESSION_CACHE_MS ?? 60_000);

/**
 * The views this process read, kept for the next request of the same session: the gateway's hot path then costs no
 * database round trip for them. A view is dropped as soon as anything it was read from changes: the triggers of
 * migration 0022 announce every change made by any process (through `NOTIFY`, heard at commit), and this process's
 * own writes drop everything before they run (so the API's answer to a change is never followed by a request
 * served from before it). Nothing is kept or served while notices are not being heard (the listening connection
 * broke), nor longer than TOOLPLANE_SESSION_CACHE_MS, nor past a portal sign-in's expiry.
 */
class SessionCache {
  private readonly held = new Map<string, { session: GatewaySession; until: number }>();
  /** Counts the drops: a read that began before one may have read what changed, and is not kept. */
  private generation = 0;

  constructor(
    private readonly changes: ChangeFeed,
    private readonly ttlMs: number,
  ) {
    changes.listen(SESSION_NOTICES, (sessionId) => {
      if (sessionId === null || sessionId === "*") this.dropAll();
      else {
        this.generation++;
        this.held.delete(sessionId);
      }
    });
    changes.onLocalWrite((table) => {
      if (VIEW_TABLES.has(table)) this.dropAll();
    });
  }

  get(sessionId: string): GatewaySession | undefined {
    const entry = this.held.get(sessionId);
    if (!entry) return undefined;
    if (this.changes.live && Date.now() < entry.until) return entry.session;
    this.held.delete(sessionId);
    return undefined;
  }

  /** Taken before a read: what the read returns may be kept only if nothing was dropped meanwhile. */
  ticket(): number | null {
    return this.changes.live ? this.generation : null;
  }

  keep(ticket: number, session: GatewaySession, signInExpiresAt: Date | null): void {
    if (ticket !== this.generation || !this.changes.live) return;
    const until = Math.min(Date.now() + this.ttlMs, signInExpiresAt?.getTime() ?? Number.POSITIVE_INFINITY);
    // Past the bound, the view kept longest ago makes room (a Map iterates in insertion order).
    if (this.held.size >= MAX_HELD && !this.held.has(session.id)) {
      const oldest = this.held.keys().next().value;
      if (oldest !== undefined) this.held.delete(oldest);
    }
    this.held.set(session.id, { session, until });
  }

  private dropAll(): void {
    this.generation++;
    this.held.clear();
  }
}
