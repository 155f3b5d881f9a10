import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import { sql } from "kysely";
import type { Db } from "../db/database.ts";
import type { CatalogTool, OAuthFlowStatus, Row } from "../db/schema.ts";
import { answeredRecords } from "../mcp/answered-records.ts";
import { effectiveStatus } from "../oauth/flows.ts";
import type { SignedIn } from "../resources/portal-consumers/service.ts";
import type { ProviderDeploymentService } from "../resources/provider-deployments/service.ts";
import type { ProviderSetupSessionService } from "../resources/provider-setup-sessions/service.ts";
import { endSessions, type SessionService } from "../resources/sessions/service.ts";

/** What choosing a template leads to: the session, or first the consumer's own sign-in at one of its providers. */
export type Started =
  | { type: "session"; session: components["schemas"]["Session"] }
  | { type: "connect"; url: string; providerName: string };

/** A setup session the portal ran for the consumer, as its return page tells it. */
export interface OwnConnectionFlow {
  status: OAuthFlowStatus;
  failureReason: string | null;
  providerName: string;
}

export interface MarketplaceTemplate {
  id: string;
  name: string;
  description: string | null;
  providers: MarketplaceProvider[];
}

export interface MarketplaceProvider {
  name: string;
  description: string | null;
  tools: CatalogTool[];
  deploymentId: string;
  /**
   * Set when the provider needs the consumer's own OAuth connection (the template names no auth config for it and
   * its provider signs in with OAuth): the method a setup session runs, and the consumer's own active auth config.
   */
  ownAccount: { methodId: string; authConfigId: string | null } | null;
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
    private readonly deployments: ProviderDeploymentService,
    private readonly setupSessions: ProviderSetupSessionService,
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
      // The provider's first OAuth method (the one a setup session defaults to), when the template names no auth
      // config: the consumer connects their own account with it.
      .leftJoinLateral(
        (eb) =>
          eb
            .selectFrom("provider_auth_methods as m")
            .select("m.id as method_id")
            .whereRef("m.provider_id", "=", "tp.provider_id")
            .where("m.type", "in", ["oauth", "mcp_oauth"])
            .orderBy("m.id")
            .limit(1)
            .as("m"),
        (join) => join.on("tp.provider_auth_config_id", "is", null),
      )
      .select([
        "tp.session_template_id",
        "tp.provider_deployment_id",
        "p.name",
        "p.description",
        "v.tools",
        "tp.tool_filters",
        "m.method_id",
      ])
      .where(
        "tp.session_template_id",
        "in",
        templates.map((t) => t.id),
      )
      .orderBy("tp.id")
      .execute();
    const own = await this.ownAuthConfigs(
      consumer.id,
      providers.filter((p) => p.method_id).map((p) => p.provider_deployment_id),
    );
    return templates.map(
      (t): MarketplaceTemplate => ({
        ...t,
        providers: providers
          .filter((p) => p.session_template_id === t.id)
          .map((p) => {
            const allowed = p.tool_filters?.tool_keys;
            const tools = (p.tools ?? []).filter((tool) => !allowed || allowed.includes(tool.name));
            return {
              name: p.name,
              description: p.description,
              tools,
              deploymentId: p.provider_deployment_id,
              ownAccount: p.method_id
                ? { methodId: p.method_id, authConfigId: own.get(p.provider_deployment_id) ?? null }
                : null,
            };
          }),
      }),
    );
  }

  /**
   * Starts a session from a template the consumer has access to; the result carries the secret, shown once. A
   * template provider without an auth config whose provider signs in with OAuth needs the consumer's own
   * connection: while one is missing, the result is a setup session for the consumer to complete first (it returns
   * to the portal's `connected` page), and the session is then made with the consumer's own auth configs.
   */
  async startSession(portal: Row<"portals">, who: SignedIn, templateId: string, name: string | null): Promise<Started> {
    if (portal.status !== "active") throw new ApiError("not_found", "This portal is not available.");
    const [template] = await this.templates(portal.id, who.consumer, templateId);
    if (!template) throw new ApiError("not_found", "You have no access to this server on this portal.");
    const missing = template.providers.find((p) => p.ownAccount && !p.ownAccount.authConfigId);
    if (missing?.ownAccount) {
      const back = new URL(`${this.publicUrl}/p/${portal.id}/templates/${template.id}/connected`);
      if (name) back.searchParams.set("name", name);
      const setup = await this.setupSessions
        .create(
          await this.deployments.ref(portal.instance_id, missing.deploymentId),
          {
            providerAuthMethodId: missing.ownAccount.methodId,
            name: `${template.name} (portal connection)`,
            redirectUrl: back.href,
          },
          who.consumer.id,
        )
        .catch((error: unknown) => {
          // The only body error here is the deployment's missing OAuth app: the API's wording is for its admin.
          if (!(error instanceof ApiError && error.code === "invalid_data")) throw error;
          throw new ApiError(
            "conflict",
            `${missing.name} cannot be connected yet: the portal's administrator has not set up how to sign in to ` +
              "it (an OAuth app on its deployment). Ask them to add one, then try again.",
          );
        });
      return { type: "connect", url: setup.url ?? "", providerName: missing.name };
    }
    const own = new Map(
      template.providers.flatMap((p): [string, string][] =>
        p.ownAccount?.authConfigId ? [[p.deploymentId, p.ownAccount.authConfigId]] : [],
      ),
    );
    const session = await this.sessions.create(
      portal.instance_id,
      { name: name ?? template.name, providers: { session_template_id: template.id } },
      {
        consumer_id: who.consumer.id,
        consumer_session_id: who.consumerSessionId,
        portal_id: portal.id,
        portal_template_id: template.id,
      },
      own,
    );
    return { type: "session", session };
  }

  /** The consumer's own active auth configs for these deployments, the newest per deployment; never another's. */
  private async ownAuthConfigs(consumerId: string, deploymentIds: string[]): Promise<Map<string, string>> {
    const configs = deploymentIds.length
      ? await this.db
          .selectFrom("provider_auth_configs")
          .select(["id", "provider_deployment_id"])
          .where("consumer_id", "=", consumerId)
          .where("provider_deployment_id", "in", [...new Set(deploymentIds)])
          .where("status", "=", "active")
          .orderBy("id", "desc")
          .execute()
      : [];
    const own = new Map<string, string>();
    for (const c of configs) if (!own.has(c.provider_deployment_id)) own.set(c.provider_deployment_id, c.id);
    return own;
  }

  /** A setup session the portal ran for this consumer (another consumer's, or an unknown id, is undefined). */
  async ownConnectionFlow(consumerId: string, setupSessionId: string): Promise<OwnConnectionFlow | undefined> {
    const row = await this.db
      .selectFrom("oauth_flows as f")
      .innerJoin("providers as p", "p.id", "f.provider_id")
      .selectAll("f")
      .select("p.name as provider_name")
      .where("f.id", "=", setupSessionId)
      .where("f.kind", "=", "setup_session")
      .where("f.consumer_id", "=", consumerId)
      .executeTakeFirst();
    if (!row) return undefined;
    const { status, reason } = effectiveStatus(row);
    return { status, failureReason: reason, providerName: row.provider_name };
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
    await answeredRecords.written();
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
