import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../../db/database.ts";
import type { Row } from "../../db/schema.ts";
import { newId } from "../../lib/ids.ts";
import { type ListParams, paginate } from "../../lib/pagination.ts";
import { describedPatch } from "../../lib/patch.ts";
import { iso } from "../../lib/time.ts";
import { providerColumns, resolveTarget } from "../sessions/provider-entries.ts";
import { failWaitingCalls, SESSION_ENTITY, type SessionService } from "../sessions/service.ts";

type SessionProvider = components["schemas"]["SessionProvider"];
type SessionProviderCreate = components["schemas"]["SessionProviderCreate"];
type SessionProviderUpdate = components["schemas"]["SessionProviderUpdate"];

const ENTITY = "session.provider";

export interface SessionProviderFilters extends ListParams {
  provider_id?: string[];
  status?: "active" | "error" | "removed";
}

export class SessionProviderService {
  constructor(
    private readonly db: Db,
    private readonly sessions: SessionService,
  ) {}

  async list(instanceId: string, sessionId: string, filters: SessionProviderFilters) {
    await this.sessions.find(instanceId, sessionId);
    let query = this.scoped(instanceId, sessionId);
    if (filters.provider_id) query = query.where("provider_id", "in", filters.provider_id);
    if (filters.status) query = query.where("status", "=", filters.status);
    const { rows, pagination } = await paginate(query, "session_providers.id", filters);
    return { items: rows.map(toApi), pagination };
  }

  async get(instanceId: string, sessionId: string, id: string): Promise<SessionProvider> {
    await this.sessions.find(instanceId, sessionId);
    return toApi(await this.find(instanceId, sessionId, id));
  }

  /** Adds a provider to an active session; the session row is locked so a concurrent delete cannot interleave. */
  async create(instanceId: string, sessionId: string, body: SessionProviderCreate): Promise<SessionProvider> {
    const row = await this.db.transaction().execute(async (trx) => {
      const session = await trx
        .selectFrom("sessions")
        .select("status")
        .where("instance_id", "=", instanceId)
        .where("id", "=", sessionId)
        .forUpdate()
        .executeTakeFirst();
      if (!session) throw ApiError.notFound(SESSION_ENTITY, sessionId);
      if (session.status !== "active") throw notActive(sessionId, session.status, "added to");
      const target = await resolveTarget(trx, instanceId, body, []);
      const now = new Date();
      return trx
        .insertInto("session_providers")
        .values({
          id: newId("spv"),
          instance_id: instanceId,
          session_id: sessionId,
          session_template_id: null,
          ...providerColumns({
            ...target,
            session_template_id: null,
            name: body.name ?? null,
            description: body.description ?? null,
            metadata: body.metadata ?? null,
          }),
          created_at: now,
          updated_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
    return toApi(row);
  }

  async update(
    instanceId: string,
    sessionId: string,
    id: string,
    body: SessionProviderUpdate,
  ): Promise<SessionProvider> {
    await this.sessions.find(instanceId, sessionId);
    const row = await this.db
      .updateTable("session_providers")
      .set(describedPatch(body))
      .where("instance_id", "=", instanceId)
      .where("session_id", "=", sessionId)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(ENTITY, id);
    return toApi(row);
  }

  /**
   * Marks the provider removed; the gateway re-reads the session per request, so its tools leave at once.
   * Its calls still waiting for the upstream fail.
   */
  async delete(instanceId: string, sessionId: string, id: string): Promise<SessionProvider> {
    return this.db.transaction().execute(async (trx) => {
      const session = await trx
        .selectFrom("sessions")
        .select("status")
        .where("instance_id", "=", instanceId)
        .where("id", "=", sessionId)
        .forUpdate()
        .executeTakeFirst();
      if (!session) throw ApiError.notFound(SESSION_ENTITY, sessionId);
      const provider = await this.find(instanceId, sessionId, id, trx);
      if (session.status !== "active") throw notActive(sessionId, session.status, "removed from");
      if (provider.status === "removed") {
        throw new ApiError("conflict", `Session provider ${id} is already removed.`, { entity: ENTITY });
      }
      const row = await trx
        .updateTable("session_providers")
        .set({ status: "removed", updated_at: new Date() })
        .where("id", "=", id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await failWaitingCalls(
        trx,
        "session_provider_id",
        id,
        "The provider was removed from the session while the call was waiting.",
      );
      return toApi(row);
    });
  }

  private scoped(instanceId: string, sessionId: string, db: Db = this.db) {
    return db
      .selectFrom("session_providers")
      .selectAll()
      .where("instance_id", "=", instanceId)
      .where("session_id", "=", sessionId);
  }

  private async find(instanceId: string, sessionId: string, id: string, db: Db = this.db) {
    const row = await this.scoped(instanceId, sessionId, db).where("id", "=", id).executeTakeFirst();
    if (!row) throw ApiError.notFound(ENTITY, id);
    return row;
  }
}

const notActive = (sessionId: string, status: string, action: string) =>
  new ApiError("conflict", `Session ${sessionId} is ${status}: providers can only be ${action} an active session.`, {
    entity: SESSION_ENTITY,
  });

function toApi(r: Row<"session_providers">): SessionProvider {
  return {
    object: "session.provider",
    id: r.id,
    name: r.name,
    description: r.description,
    status: r.status,
    metadata: r.metadata,
    session_id: r.session_id,
    provider_id: r.provider_id,
    provider_deployment_id: r.provider_deployment_id,
    provider_config_id: r.provider_config_id,
    provider_auth_config_id: r.provider_auth_config_id,
    session_template_id: r.session_template_id,
    tool_filters: r.tool_filters,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}
