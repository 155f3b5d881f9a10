import { createHash, randomBytes } from "node:crypto";
import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import { sql } from "kysely";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { iso } from "../../lib/time.ts";
import type { PortalService } from "../portals/service.ts";
import { endSessions, endSessionsOfExpiredSignIns } from "../sessions/service.ts";

type Consumer = components["schemas"]["PortalConsumer"];
type ConsumerSession = components["schemas"]["PortalConsumerSession"];

const CONSUMER_ENTITY = "portal.consumer";
const CONSUMER_SESSION_ENTITY = "portal.consumer_session";

/** Secrets handed to browsers (cookies, invitation links) are stored only as this digest. */
export const digest = (secret: string) => createHash("sha256").update(secret).digest("hex");

export interface ConsumerFilters extends ListParams {
  status?: ("active" | "revoked")[];
}

export interface ConsumerSessionFilters extends ListParams {
  consumer_id?: string[];
  status?: ("active" | "expired" | "revoked")[];
}

/** Who signs in: an OIDC identity (`iss sub`) or the invitation being accepted. */
export interface SignInIdentity {
  method: "oidc" | "invitation";
  identity: string;
  subject: string | null;
  name: string | null;
  email: string | null;
  groups: string[];
}

/** A signed-in consumer, as the portal pages see them. */
export interface SignedIn {
  consumer: Row<"portal_consumers">;
  consumerSessionId: string;
  /** The cookie's secret: only ever in the cookie and in the CSRF token derived from it. */
  token: string;
}

/**
 * A portal's consumers and their consumer sessions (sign-ins). Every rule that takes something away from a
 * consumer (revoking them or one of their sign-ins, a group losing access) ends the sessions it leaves them no
 * right to, in the same transaction, so their connection URLs stop at once (the gateway reads the status on
 * every request).
 */
export class PortalConsumerService {
  constructor(
    private readonly db: Db,
    private readonly portals: PortalService,
  ) {}

  async list(instanceId: string, portalId: string, filters: ConsumerFilters) {
    await this.portals.find(instanceId, portalId);
    let query = this.db.selectFrom("portal_consumers").selectAll().where("portal_id", "=", portalId);
    if (filters.status) query = query.where("status", "in", filters.status);
    const { rows, pagination } = await paginate(query, "portal_consumers.id", filters);
    return { items: rows.map(consumerToApi), pagination };
  }

  async get(instanceId: string, portalId: string, id: string): Promise<Consumer> {
    return consumerToApi(await this.find(instanceId, portalId, id));
  }

  async revoke(instanceId: string, portalId: string, id: string): Promise<Consumer> {
    await this.find(instanceId, portalId, id);
    const row = await this.db.transaction().execute(async (trx) => {
      const now = new Date();
      const revoked = await trx
        .updateTable("portal_consumers")
        .set({ status: "revoked", updated_at: now })
        .where("id", "=", id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx
        .updateTable("portal_consumer_sessions")
        .set({ revoked_at: now })
        .where("consumer_id", "=", id)
        .where("revoked_at", "is", null)
        .execute();
      await this.endSessionsWhere(trx, "consumer_id", id, "The portal consumer was revoked.");
      // Their own OAuth connections (and sign-ins still under way) go with their access.
      await trx.deleteFrom("oauth_flows").where("consumer_id", "=", id).execute();
      await trx.deleteFrom("provider_auth_configs").where("consumer_id", "=", id).execute();
      return revoked;
    });
    return consumerToApi(row);
  }

  async listSessions(instanceId: string, portalId: string, filters: ConsumerSessionFilters) {
    await this.portals.find(instanceId, portalId);
    let query = this.db.selectFrom("portal_consumer_sessions").selectAll().where("portal_id", "=", portalId);
    if (filters.consumer_id) query = query.where("consumer_id", "in", filters.consumer_id);
    if (filters.status) {
      const wanted = filters.status;
      query = query.where((eb) =>
        eb.or([
          ...(wanted.includes("revoked") ? [eb("revoked_at", "is not", null)] : []),
          ...(wanted.includes("expired")
            ? [eb.and([eb("revoked_at", "is", null), eb("expires_at", "<=", sql<Date>`now()`)])]
            : []),
          ...(wanted.includes("active")
            ? [eb.and([eb("revoked_at", "is", null), eb("expires_at", ">", sql<Date>`now()`)])]
            : []),
        ]),
      );
    }
    const { rows, pagination } = await paginate(query, "portal_consumer_sessions.id", filters);
    return { items: rows.map(sessionToApi), pagination };
  }

  async revokeSession(instanceId: string, portalId: string, id: string): Promise<ConsumerSession> {
    await this.portals.find(instanceId, portalId);
    const row = await this.db.transaction().execute(async (trx) => {
      const existing = await trx
        .selectFrom("portal_consumer_sessions")
        .selectAll()
        .where("portal_id", "=", portalId)
        .where("id", "=", id)
        .forUpdate()
        .executeTakeFirst();
      if (!existing) throw ApiError.notFound(CONSUMER_SESSION_ENTITY, id);
      if (existing.revoked_at || existing.expires_at.getTime() <= Date.now()) return existing;
      return this.endSignIn(trx, id, "The consumer session it was started in was revoked.");
    });
    return sessionToApi(row);
  }

  /**
   * Signs an identity in to the portal: creates the consumer on first sign-in, refreshes their profile and groups
   * otherwise (ending sessions the new groups no longer allow), and starts a consumer session. A revoked consumer
   * is refused.
   */
  async signIn(portal: Row<"portals">, who: SignInIdentity, trx: Db = this.db): Promise<SignedIn> {
    const now = new Date();
    const consumer = await trx
      .insertInto("portal_consumers")
      .values({
        id: newId("pcn"),
        instance_id: portal.instance_id,
        portal_id: portal.id,
        sign_in_method: who.method,
        identity: who.identity,
        subject: who.subject,
        name: who.name,
        email: who.email,
        consumer_group_ids: JSON.stringify(who.groups),
        last_signed_in_at: now,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) =>
        oc.columns(["portal_id", "identity"]).doUpdateSet({
          name: who.name,
          email: who.email,
          consumer_group_ids: JSON.stringify(who.groups),
          last_signed_in_at: now,
          updated_at: now,
        }),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
    if (consumer.status === "revoked") {
      throw new ApiError("forbidden", "Your access to this portal was revoked.", { entity: CONSUMER_ENTITY });
    }
    await this.endUnentitledSessions(trx, portal.id);
    await endSessionsOfExpiredSignIns(trx, { portalId: portal.id });
    const token = `tpcs_${randomBytes(32).toString("base64url")}`;
    const consumerSessionId = newId("pcs");
    await trx
      .insertInto("portal_consumer_sessions")
      .values({
        id: consumerSessionId,
        instance_id: portal.instance_id,
        portal_id: portal.id,
        consumer_id: consumer.id,
        token_hash: digest(token),
        expires_at: new Date(now.getTime() + portal.session_expiry_seconds * 1000),
        created_at: now,
      })
      .execute();
    return { consumer, consumerSessionId, token };
  }

  /** Whether any of these consumer groups has access to something on the portal (else a sign-in is refused). */
  async hasAnyAccess(portalId: string, groups: string[]): Promise<boolean> {
    if (groups.length === 0) return false;
    const row = await this.db
      .selectFrom("portal_consumer_access")
      .select("id")
      .where("portal_id", "=", portalId)
      .where("consumer_group_id", "in", groups)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Records an existing consumer's current groups without signing them in (their sign-in was refused): sessions
   * their old groups allowed and the new ones do not end now, not at their next successful sign-in.
   */
  async refreshGroups(portalId: string, identity: string, groups: string[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable("portal_consumers")
        .set({ consumer_group_ids: JSON.stringify(groups), updated_at: new Date() })
        .where("portal_id", "=", portalId)
        .where("identity", "=", identity)
        .executeTakeFirst();
      if (updated.numUpdatedRows > 0n) await this.endUnentitledSessions(trx, portalId);
    });
  }

  /** The active consumer behind a portal cookie, or null (unknown, expired, revoked, or another portal's). */
  async authenticate(portalId: string, token: string): Promise<SignedIn | null> {
    const row = await this.db
      .selectFrom("portal_consumer_sessions as cs")
      .innerJoin("portal_consumers as c", "c.id", "cs.consumer_id")
      .selectAll("c")
      .select("cs.id as consumer_session_id")
      .where("cs.token_hash", "=", digest(token))
      .where("cs.portal_id", "=", portalId)
      .where("cs.revoked_at", "is", null)
      .where("cs.expires_at", ">", sql<Date>`now()`)
      .where("c.status", "=", "active")
      .executeTakeFirst();
    if (!row) return null;
    const { consumer_session_id, ...consumer } = row;
    return { consumer, consumerSessionId: consumer_session_id, token };
  }

  /** Signing out revokes the consumer session, like the API does. */
  async signOut(consumerSessionId: string): Promise<void> {
    await this.db
      .transaction()
      .execute((trx) => this.endSignIn(trx, consumerSessionId, "The consumer signed out of the portal."));
  }

  /**
   * Ends every consumer-started session of the portal whose consumer is no longer entitled to its template: the
   * consumer is revoked, or none of their groups has access to the template on the portal any more.
   */
  async endUnentitledSessions(trx: Db, portalId: string): Promise<string[]> {
    const rows = await trx
      .selectFrom("sessions as s")
      .select("s.id")
      .where("s.portal_id", "=", portalId)
      .where("s.status", "!=", "deleted")
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("portal_consumer_access as a")
              .innerJoin("portal_consumers as c", "c.id", "s.consumer_id")
              .select(sql`1`.as("one"))
              .whereRef("a.portal_id", "=", "s.portal_id")
              .whereRef("a.session_template_id", "=", "s.portal_template_id")
              .where("c.status", "=", "active")
              .where(sql<boolean>`c.consumer_group_ids ? a.consumer_group_id`),
          ),
        ),
      )
      .execute();
    return endSessions(
      trx,
      rows.map((r) => r.id),
      "The portal consumer no longer has access to the session's template.",
    );
  }

  private async endSignIn(trx: Db, consumerSessionId: string, message: string) {
    const row = await trx
      .updateTable("portal_consumer_sessions")
      .set({ revoked_at: new Date() })
      .where("id", "=", consumerSessionId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await this.endSessionsWhere(trx, "consumer_session_id", consumerSessionId, message);
    return row;
  }

  private async endSessionsWhere(trx: Db, column: "consumer_id" | "consumer_session_id", id: string, message: string) {
    const rows = await trx.selectFrom("sessions").select("id").where(column, "=", id).execute();
    await endSessions(
      trx,
      rows.map((r) => r.id),
      message,
    );
  }

  async find(instanceId: string, portalId: string, id: string): Promise<Row<"portal_consumers">> {
    await this.portals.find(instanceId, portalId);
    const row = await this.db
      .selectFrom("portal_consumers")
      .selectAll()
      .where("portal_id", "=", portalId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(CONSUMER_ENTITY, id);
    return row;
  }
}

function consumerToApi(r: Row<"portal_consumers">): Consumer {
  return {
    object: "portal.consumer",
    id: r.id,
    portal_id: r.portal_id,
    status: r.status,
    sign_in_method: r.sign_in_method,
    subject: r.subject,
    name: r.name,
    email: r.email,
    consumer_group_ids: r.consumer_group_ids,
    last_signed_in_at: r.last_signed_in_at ? iso(r.last_signed_in_at) : null,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

function sessionToApi(r: Row<"portal_consumer_sessions">): ConsumerSession {
  const status = r.revoked_at ? "revoked" : r.expires_at.getTime() <= Date.now() ? "expired" : "active";
  return {
    object: "portal.consumer_session",
    id: r.id,
    portal_id: r.portal_id,
    consumer_id: r.consumer_id,
    status,
    expires_at: iso(r.expires_at),
    revoked_at: r.revoked_at ? iso(r.revoked_at) : null,
    created_at: iso(r.created_at),
  };
}
