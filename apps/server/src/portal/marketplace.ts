import { ApiError } from "@toolplane/server-stubs";
import { sql } from "kysely";
import type { Db } from "../db/database.ts";
import type { CatalogTool, Row } from "../db/schema.ts";
import type { SignedIn } from "../resources/portal-consumers/service.ts";
import { endSessions, type SessionService } from "../resources/sessions/service.ts";

export interface MarketplaceTemplate {
  id: string;
  name: string;
  description: string | null;
  providers: { name: string; description: string | null; tools: CatalogTool[] }[];
}

export interface ConsumerSessionView {
  id: string;
  name: string | null;
  templateName: string | null;
  status: string;
  connectionUrl: string;
  createdAt: Date;
}

export interface ToolCallView {
  sessionName: string | null;
  toolKey: string;
  status: string;
  createdAt: Date;
}

/**
 * What a signed-in consumer may see and do on a portal: the templates their groups have access to, sessions
 * started from them, and their own sessions and tool calls. Every query is bound to the consumer, so another
 * consumer's ids are a 404 like unknown ones.
 */
export class Marketplace {
  constructor(
    private readonly db: Db,
    private readonly sessions: SessionService,
    private readonly publicUrl: string,
  ) {}

  /** The templates any of the consumer's groups has access to on the portal, with providers and their tools. */
  async templates(portalId: string, consumer: Row<"portal_consumers">, templateId?: string) {
    let query = this.db
      .selectFrom("session_templates as t")
      .select(["t.id", "t.name", "t.description"])
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom("portal_consumer_access as a")
            .select(sql`1`.as("one"))
            .whereRef("a.session_template_id", "=", "t.id")
            .where("a.portal_id", "=", portalId)
            .where(
              "a.consumer_group_id",
              "in",
              consumer.consumer_group_ids.length ? consumer.consumer_group_ids : [""],
            ),
        ),
      )
      .orderBy("t.name")
      .orderBy("t.id");
    if (templateId) query = query.where("t.id", "=", templateId);
    const templates = await query.execute();
    if (templates.length === 0) return [];
    const providers = await this.db
      .selectFrom("session_template_providers as tp")
      .innerJoin("providers as p", "p.id", "tp.provider_id")
      .innerJoin("provider_deployments as d", "d.id", "tp.provider_deployment_id")
      .leftJoin("provider_versions as v", (join) =>
        join.on(sql<boolean>`v.id = coalesce(d.locked_version_id, p.current_version_id)`),
      )
      .select(["tp.session_template_id", "p.name", "p.description", "v.tools", "tp.tool_filters"])
      .where(
        "tp.session_template_id",
        "in",
        templates.map((t) => t.id),
      )
      .orderBy("tp.id")
      .execute();
    return templates.map(
      (t): MarketplaceTemplate => ({
        ...t,
        providers: providers
          .filter((p) => p.session_template_id === t.id)
          .map((p) => {
            const allowed = p.tool_filters?.tool_keys;
            const tools = (p.tools ?? []).filter((tool) => !allowed || allowed.includes(tool.name));
            return { name: p.name, description: p.description, tools };
          }),
      }),
    );
  }

  /** Starts a session from a template the consumer has access to; the result carries the secret, shown once. */
  async startSession(portal: Row<"portals">, who: SignedIn, templateId: string, name: string | null) {
    if (portal.status !== "active") throw new ApiError("not_found", "This portal is not available.");
    const [template] = await this.templates(portal.id, who.consumer, templateId);
    if (!template) throw new ApiError("not_found", "You have no access to this server on this portal.");
    return this.sessions.create(
      portal.instance_id,
      { name: name ?? template.name, providers: { session_template_id: template.id } },
      {
        consumer_id: who.consumer.id,
        consumer_session_id: who.consumerSessionId,
        portal_id: portal.id,
        portal_template_id: template.id,
      },
    );
  }

  async ownSessions(consumerId: string): Promise<ConsumerSessionView[]> {
    const rows = await this.db
      .selectFrom("sessions as s")
      .leftJoin("session_templates as t", "t.id", "s.portal_template_id")
      .select(["s.id", "s.name", "s.status", "s.created_at", "t.name as template_name"])
      .where("s.consumer_id", "=", consumerId)
      .where("s.status", "!=", "deleted")
      .orderBy("s.id", "desc")
      .execute();
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      templateName: r.template_name,
      status: r.status,
      connectionUrl: `${this.publicUrl}/mcp/${r.id}`,
      createdAt: r.created_at,
    }));
  }

  async rename(consumerId: string, sessionId: string, name: string): Promise<void> {
    const renamed = await this.db
      .updateTable("sessions")
      .set({ name, updated_at: new Date() })
      .where("id", "=", sessionId)
      .where("consumer_id", "=", consumerId)
      .where("status", "!=", "deleted")
      .executeTakeFirst();
    if (renamed.numUpdatedRows === 0n) throw new ApiError("not_found", "You have no such connection.");
  }

  async end(consumerId: string, sessionId: string): Promise<void> {
    const ended = await this.db.transaction().execute(async (trx) => {
      const own = await trx
        .selectFrom("sessions")
        .select("id")
        .where("id", "=", sessionId)
        .where("consumer_id", "=", consumerId)
        .executeTakeFirst();
      return own ? endSessions(trx, [own.id], "The consumer ended the session.") : [];
    });
    if (ended.length === 0) throw new ApiError("not_found", "You have no such connection.");
  }

  async recentToolCalls(consumerId: string, limit = 20): Promise<ToolCallView[]> {
    const rows = await this.db
      .selectFrom("tool_calls as c")
      .innerJoin("sessions as s", "s.id", "c.session_id")
      .select(["s.name as session_name", "c.tool_key", "c.status", "c.created_at"])
      .where("s.consumer_id", "=", consumerId)
      .orderBy("c.id", "desc")
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      sessionName: r.session_name,
      toolKey: r.tool_key,
      status: r.status,
      createdAt: r.created_at,
    }));
  }
}
