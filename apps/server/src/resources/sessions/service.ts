import { createHash, randomBytes } from "node:crypto";
import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import { sql } from "kysely";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { describedPatch } from "../../lib/patch.ts";
import { iso } from "../../lib/time.ts";
import { answeredRecords } from "../../mcp/answered-records.ts";
import { invalid, providerColumns, resolveEntries } from "./provider-entries.ts";

type Session = components["schemas"]["Session"];
type SessionCreate = components["schemas"]["SessionCreate"];
type SessionUpdate = components["schemas"]["SessionUpdate"];
type Preview = components["schemas"]["SessionProviderDeploymentPreview"];

export const SESSION_ENTITY = "session";

export interface SessionFilters extends ListParams {
  status?: ("active" | "archived" | "deleted")[];
  provider_id?: string[];
  provider_deployment_id?: string[];
}

/** Who started a session from a portal (sessions created through the API have none). */
export interface ConsumerOrigin {
  consumer_id: string;
  consumer_session_id: string;
  portal_id: string;
  portal_template_id: string;
}

/** The session's bearer secret: shown once, stored as its SHA-256 (what the gateway compares against). */
export const hashSessionSecret = (secret: string) => createHash("sha256").update(secret).digest("hex");

export class SessionService {
  constructor(
    private readonly db: Db,
    private readonly publicUrl: string,
  ) {}

  async list(instanceId: string, filters: SessionFilters) {
    let query = this.db.selectFrom("sessions as s").selectAll("s").where("s.instance_id", "=", instanceId);
    if (filters.status) query = query.where("s.status", "in", filters.status);
    for (const column of ["provider_id", "provider_deployment_id"] as const) {
      const ids = filters[column];
      if (!ids) continue;
      query = query.where(({ exists, selectFrom }) =>
        exists(
          selectFrom("session_providers as sp")
            .select(sql`1`.as("one"))
            .whereRef("sp.session_id", "=", "s.id")
            .where("sp.status", "!=", "removed")
            .where(`sp.${column}`, "in", ids),
        ),
      );
    }
    const { rows, pagination } = await paginate(query, "s.id", filters);
    return { items: await this.toApi(rows), pagination };
  }

  async find(instanceId: string, id: string): Promise<Row<"sessions">> {
    const row = await this.db
      .selectFrom("sessions")
      .selectAll()
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(SESSION_ENTITY, id);
    return row;
  }

  async get(instanceId: string, id: string): Promise<Session> {
    return this.one(await this.find(instanceId, id));
  }

  /**
   * Creates the session and its providers in one transaction; the response alone carries the secret. A portal
   * passes the consumer's own auth configs by deployment: they fill the providers that have none.
   */
  async create(
    instanceId: string,
    body: SessionCreate,
    origin?: ConsumerOrigin,
    ownAuthConfigs: ReadonlyMap<string, string> = new Map(),
  ): Promise<Session> {
    const secret = `tpss_${randomBytes(24).toString("base64url")}`;
    const row = await this.db.transaction().execute(async (trx) => {
      const providers = (await resolveEntries(trx, instanceId, body.providers)).map((p) => ({
        ...p,
        provider_auth_config_id: p.provider_auth_config_id ?? ownAuthConfigs.get(p.provider_deployment_id) ?? null,
      }));
      if (providers.length === 0) {
        throw invalid("The session has no provider: every entry names a template without providers.", ["providers"]);
      }
      const now = new Date();
      const session = await trx
        .insertInto("sessions")
        .values({
          id: newId("ses"),
          instance_id: instanceId,
          name: body.name ?? null,
          description: body.description ?? null,
          metadata: body.metadata === undefined ? null : JSON.stringify(body.metadata),
          secret_hash: hashSessionSecret(secret),
          ...origin,
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await trx
        .insertInto("session_providers")
        .values(
          providers.map((p) => ({
            id: newId("spv"),
            instance_id: instanceId,
            session_id: session.id,
            session_template_id: p.session_template_id,
            ...providerColumns(p),
            created_at: now,
            updated_at: now,
          })),
        )
        .execute();
      return session;
    });
    return { ...(await this.one(row)), secret };
  }

  async update(instanceId: string, id: string, body: SessionUpdate): Promise<Session> {
    const row = await this.db
      .updateTable("sessions")
      .set(describedPatch(body))
      .where("instance_id", "=", instanceId)
      .where("id", "=", id)
      .where("status", "!=", "deleted")
      .returningAll()
      .executeTakeFirst();
    if (!row) throw await this.missingOrDeleted(instanceId, id, "updated");
    return this.one(row);
  }

  /**
   * Ends the session; the gateway reads the status on every request, so its endpoint stops at once. Calls
   * still waiting for their upstream fail in the same transaction.
   */
  async delete(instanceId: string, id: string): Promise<Session> {
    const row = await this.db.transaction().execute(async (trx) => {
      const ended = await trx
        .updateTable("sessions")
        .set({ status: "deleted", connected_until: null, updated_at: new Date() })
        .where("instance_id", "=", instanceId)
        .where("id", "=", id)
        .where("status", "!=", "deleted")
        .returningAll()
        .executeTakeFirst();
      if (ended) await failWaitingCalls(trx, "session_id", id, "The session was deleted while the call was waiting.");
      return ended;
    });
    if (!row) throw await this.missingOrDeleted(instanceId, id, "deleted");
    return this.one(row);
  }

  /** A 404 for an unknown session, else the 409 of a session that is already deleted. */
  private async missingOrDeleted(instanceId: string, id: string, action: string): Promise<ApiError> {
    await this.find(instanceId, id);
    return new ApiError("conflict", `Session ${id} is deleted and cannot be ${action}.`, { entity: SESSION_ENTITY });
  }

  private async one(row: Row<"sessions">): Promise<Session> {
    const [session] = await this.toApi([row]);
    if (!session) throw new Error("unreachable: one row in, one session out");
    return session;
  }

  /** Sessions with their provider previews and usage, fetched for the whole page at once. */
  private async toApi(rows: Row<"sessions">[]): Promise<Session[]> {
    const ids = rows.map((r) => r.id);
    const providers = ids.length
      ? await this.db
          .selectFrom("session_providers")
          .select(["id", "session_id", "name", "provider_id", "provider_deployment_id"])
          .where("session_id", "in", ids)
          .where("status", "!=", "removed")
          .orderBy("id")
          .execute()
      : [];
    const previews = new Map<string, Preview[]>();
    for (const p of providers) {
      const list = previews.get(p.session_id) ?? [];
      list.push({
        object: "session.provider_deployment#preview",
        id: p.id,
        name: p.name,
        provider_id: p.provider_id,
        provider_deployment_id: p.provider_deployment_id,
      });
      previews.set(p.session_id, list);
    }
    const toolCalls = await this.toolCallCounts(ids);
    const now = Date.now();
    return rows.map((r) => ({
      object: "session",
      id: r.id,
      name: r.name,
      description: r.description,
      status: r.status,
      connection_status:
        r.status === "active" && r.connected_until && new Date(r.connected_until).getTime() > now
          ? "connected"
          : "disconnected",
      usage: { tool_calls: toolCalls.get(r.id) ?? 0, messages: r.message_count },
      metadata: r.metadata,
      connection_url: r.status === "deleted" ? null : `${this.publicUrl}/mcp/${r.id}`,
      secret: null,
      provider_deployments: previews.get(r.id) ?? [],
      consumer_id: r.consumer_id,
      created_at: iso(r.created_at),
      updated_at: iso(r.updated_at),
    }));
  }

  private async toolCallCounts(sessionIds: string[]): Promise<Map<string, number>> {
    if (sessionIds.length === 0) return new Map();
    await answeredRecords.written();
    const rows = await this.db
      .selectFrom("tool_calls")
      .select(["session_id", (eb) => eb.fn.countAll<string>().as("n")])
      .where("session_id", "in", sessionIds)
      .groupBy("session_id")
      .execute();
    return new Map(rows.map((r) => [r.session_id, Number(r.n)]));
  }
}

/**
 * Ends sessions the way a delete does (status `deleted`, their endpoints stop at once, waiting calls fail), for
 * rules that end several at a time (a portal consumer revoked, say). Returns the ids it ended.
 */
export async function endSessions(trx: Db, ids: string[], message: string): Promise<string[]> {
  if (ids.length === 0) return [];
  const ended = await trx
    .updateTable("sessions")
    .set({ status: "deleted", connected_until: null, updated_at: new Date() })
    .where("id", "in", ids)
    .where("status", "!=", "deleted")
    .returning("id")
    .execute();
  for (const { id } of ended) await failWaitingCalls(trx, "session_id", id, message);
  return ended.map((r) => r.id);
}

/**
 * Ends the portal sessions whose consumer session (the sign-in they were started in) has expired: a connection made
 * on a portal lasts as long as that sign-in (see `portal.auth.session_expiry_time_in_seconds`). Run when a session
 * is served, when a consumer signs in to its portal, and periodically by the server; returns the ids it ended.
 */
export async function endSessionsOfExpiredSignIns(
  db: Db,
  scope: { portalId?: string; sessionId?: string } = {},
): Promise<string[]> {
  let query = db
    .selectFrom("sessions as s")
    .innerJoin("portal_consumer_sessions as cs", "cs.id", "s.consumer_session_id")
    .select("s.id")
    .where("s.consumer_session_id", "is not", null)
    .where("s.status", "!=", "deleted")
    .where("cs.expires_at", "<=", sql<Date>`now()`);
  if (scope.portalId) query = query.where("s.portal_id", "=", scope.portalId);
  if (scope.sessionId) query = query.where("s.id", "=", scope.sessionId);
  const rows = await query.execute();
  return endSessions(
    db,
    rows.map((r) => r.id),
    "The portal sign-in the session was started in expired.",
  );
}

/** Fails the tool calls of a session or session provider that still wait for their upstream. */
export async function failWaitingCalls(
  trx: Db,
  column: "session_id" | "session_provider_id",
  id: string,
  message: string,
): Promise<void> {
  await trx
    .updateTable("tool_calls")
    .set({
      status: "failed",
      error: JSON.stringify({ code: "provider_removed", message }),
      completed_at: new Date(),
    })
    .where(column, "=", id)
    .where("status", "=", "waiting_for_response")
    .execute();
}
