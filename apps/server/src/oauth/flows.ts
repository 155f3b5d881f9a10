import { ApiError } from "@toolplane/server-stubs";
import type { components } from "@toolplane/types";
import type { Db } from "../db/database.ts";
import type { JsonObject, OAuthFlowConfig, OAuthFlowStatus, Row } from "../db/schema.ts";
import { newId } from "../lib/ids.ts";
import { type ListParams, paginate } from "../lib/pagination.ts";
import { describedPatch } from "../lib/patch.ts";
import { iso } from "../lib/time.ts";
import type { DeploymentRef } from "../resources/provider-deployments/service.ts";
import { randomToken } from "./token-endpoint.ts";

type SetupAuthConfig = components["schemas"]["ProviderSetupAuthConfig"];
type SetupCredentials = components["schemas"]["ProviderSetupCredentials"];
type AuthMethod = components["schemas"]["ProviderAuthMethod"];

export type FlowKind = Row<"oauth_flows">["kind"];
export type FlowRow = Row<"oauth_flows">;

/** An unfinished setup or session expires one hour after creation. */
export const FLOW_TTL_MS = 3_600_000;
export const FINAL_STATUSES: OAuthFlowStatus[] = ["completed", "failed", "expired"];
export const EXPIRED_REASON = "The setup link expired before the sign-in was completed.";

export const FLOW_ENTITY: Record<FlowKind, string> = {
  oauth_setup: "provider.oauth_setup",
  setup_session: "provider.setup_session",
};
const ID_PREFIX: Record<FlowKind, string> = { oauth_setup: "poas", setup_session: "pas" };
const PAGE_SEGMENT: Record<FlowKind, string> = { oauth_setup: "setups", setup_session: "setup-sessions" };
export const kindOfPageSegment = (segment: string): FlowKind | undefined =>
  segment === "setups" ? "oauth_setup" : segment === "setup-sessions" ? "setup_session" : undefined;

const isFinal = (status: OAuthFlowStatus) => FINAL_STATUSES.includes(status);

/** The status a reader sees: an unfinished flow past `expires_at` is expired even before anything wrote that. */
export function effectiveStatus(row: FlowRow, now = new Date()): { status: OAuthFlowStatus; reason: string | null } {
  if (!isFinal(row.status) && row.expires_at.getTime() <= now.getTime()) {
    return { status: "expired", reason: EXPIRED_REASON };
  }
  return { status: row.status, reason: row.failure_reason };
}

/** The page users visit: the id names the flow, the random key makes the URL unguessable. */
export function flowUrl(publicUrl: string, row: FlowRow, status: OAuthFlowStatus): string | null {
  if (isFinal(status)) return null;
  return `${publicUrl}/oauth/${PAGE_SEGMENT[row.kind]}/${row.id}/start?token=${row.start_key}`;
}

/** What the API shows besides the row itself: the embedded objects a flow references. */
export interface FlowEmbeds {
  authConfigs: Map<string, SetupAuthConfig>;
  credentials: Map<string, SetupCredentials>;
  methods: Map<string, AuthMethod>;
  deploymentNames: Map<string, string | null>;
}

/** The API view of an auth method row (also embedded in providers, see resources/providers). */
export const toAuthMethod = (m: Row<"provider_auth_methods">): AuthMethod => ({
  object: "provider.auth_method",
  id: m.id,
  type: m.type,
  name: m.name,
  description: m.description,
  input_schema: m.input_schema,
  scopes: m.scopes.map((s) => ({
    object: "provider.auth_method.scope",
    id: s.id,
    scope: s.scope,
    name: s.name ?? s.scope,
    description: s.description,
  })),
  provider_id: m.provider_id,
  // Catalog methods always name their version; a method kept after its version was removed names the provider.
  provider_specification_id: m.provider_version_id ?? m.provider_id,
  created_at: iso(m.created_at),
  updated_at: iso(m.updated_at),
});

export interface NewFlow {
  kind: FlowKind;
  method: Row<"provider_auth_methods">;
  credentialsId: string | null;
  name: string | null;
  description?: string | null;
  metadata?: JsonObject | null;
  redirectUrl?: string | null;
  isEphemeral?: boolean;
  config?: OAuthFlowConfig;
  /** The auth config a re-authentication replaces the credentials of (see reauth.ts). */
  repairs?: string;
  /** The portal consumer the flow connects (their own auth config), if a portal started it. */
  consumerId?: string;
}

/**
 * The rows of OAuth setups and setup sessions, scoped to a deployment (another deployment's or instance's id is
 * a 404), and the lookups both resources share. The browser side of the flow is in flow-runner.ts.
 */
export class OAuthFlowStore {
  constructor(private readonly db: Db) {}

  private scoped(deployment: DeploymentRef, kind: FlowKind) {
    return this.db
      .selectFrom("oauth_flows")
      .selectAll()
      .where("instance_id", "=", deployment.instanceId)
      .where("provider_deployment_id", "=", deployment.id)
      .where("kind", "=", kind);
  }

  /**
   * Ephemeral setups are deleted when they reach a final state (by the callback); one that expired unfinished
   * is deleted here, the next time its deployment's setups are read.
   */
  private async sweepEphemeral(deployment: DeploymentRef) {
    await this.db
      .deleteFrom("oauth_flows")
      .where("provider_deployment_id", "=", deployment.id)
      .where("is_ephemeral", "=", true)
      .where((eb) => eb.or([eb("status", "in", FINAL_STATUSES), eb("expires_at", "<=", new Date())]))
      .execute();
  }

  async list(
    deployment: DeploymentRef,
    kind: FlowKind,
    params: ListParams,
    narrow = (q: ReturnType<typeof this.scoped>) => q,
  ) {
    await this.sweepEphemeral(deployment);
    return paginate(narrow(this.scoped(deployment, kind)), "oauth_flows.id", params);
  }

  async find(deployment: DeploymentRef, kind: FlowKind, id: string): Promise<FlowRow> {
    await this.sweepEphemeral(deployment);
    const row = await this.scoped(deployment, kind).where("id", "=", id).executeTakeFirst();
    if (!row) throw ApiError.notFound(FLOW_ENTITY[kind], id);
    return row;
  }

  async update(
    deployment: DeploymentRef,
    kind: FlowKind,
    id: string,
    body: { name?: string | null; description?: string | null; metadata?: JsonObject | null },
  ): Promise<FlowRow> {
    await this.find(deployment, kind, id);
    return this.db
      .updateTable("oauth_flows")
      .set(describedPatch(body))
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  async delete(deployment: DeploymentRef, kind: FlowKind, id: string): Promise<FlowRow> {
    const row = await this.db
      .deleteFrom("oauth_flows")
      .where("instance_id", "=", deployment.instanceId)
      .where("provider_deployment_id", "=", deployment.id)
      .where("kind", "=", kind)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw ApiError.notFound(FLOW_ENTITY[kind], id);
    return row;
  }

  async insert(deployment: DeploymentRef, flow: NewFlow): Promise<FlowRow> {
    const now = new Date();
    return this.db
      .insertInto("oauth_flows")
      .values({
        id: newId(ID_PREFIX[flow.kind]),
        kind: flow.kind,
        instance_id: deployment.instanceId,
        provider_id: deployment.providerId,
        provider_deployment_id: deployment.id,
        provider_auth_method_id: flow.method.id,
        provider_auth_credentials_id: flow.credentialsId,
        provider_auth_config_id: null,
        status: "pending",
        failure_reason: null,
        is_ephemeral: flow.isEphemeral ?? false,
        name: flow.name,
        description: flow.description ?? null,
        metadata: flow.metadata == null ? null : JSON.stringify(flow.metadata),
        redirect_url: flow.redirectUrl ?? null,
        config: JSON.stringify(flow.config ?? {}),
        consumer_id: flow.consumerId ?? null,
        start_key: randomToken(),
        state_hash: null,
        state_used_at: null,
        verifier_ciphertext: null,
        repairs_provider_auth_config_id: flow.repairs ?? null,
        expires_at: new Date(now.getTime() + FLOW_TTL_MS),
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /**
   * The provider's auth method: the named one (404 unless it is the deployment provider's) or its first `oauth` or
   * `mcp_oauth` one.
   */
  async method(deployment: DeploymentRef, methodId: string | undefined, field: string) {
    let query = this.db
      .selectFrom("provider_auth_methods")
      .selectAll()
      .where("provider_id", "=", deployment.providerId);
    query = methodId
      ? query.where("id", "=", methodId)
      : query.where("type", "in", ["oauth", "mcp_oauth"]).orderBy("id");
    const method = await query.executeTakeFirst();
    if (method) return method;
    if (methodId) throw ApiError.notFound("provider.auth_method", methodId);
    throw new ApiError("invalid_data", "The deployment's provider has no OAuth auth method.", {
      entity: "body",
      errors: [{ code: "required", message: "the provider has no oauth auth method to default to", path: [field] }],
    });
  }

  /** The deployment's auth credentials: the named ones (404 unless the deployment's) or its newest. */
  async credentialsId(deployment: DeploymentRef, credentialsId: string | undefined, field: string) {
    let query = this.db
      .selectFrom("provider_auth_credentials")
      .select("id")
      .where("instance_id", "=", deployment.instanceId)
      .where("provider_deployment_id", "=", deployment.id);
    query = credentialsId ? query.where("id", "=", credentialsId) : query.orderBy("id", "desc");
    const row = await query.executeTakeFirst();
    if (row) return row.id;
    if (credentialsId) throw ApiError.notFound("provider.auth_credentials", credentialsId);
    throw new ApiError(
      "invalid_data",
      "The deployment has no auth credentials (OAuth app) to run the flow with; create some first.",
      {
        entity: "body",
        errors: [{ code: "required", message: "the deployment has no auth credentials to default to", path: [field] }],
      },
    );
  }

  /** Loads what the rows reference, in one query per kind of object. */
  async embeds(rows: FlowRow[]): Promise<FlowEmbeds> {
    const ids = (pick: (r: FlowRow) => string | null) => [
      ...new Set(rows.map(pick).filter((v): v is string => v !== null)),
    ];
    const configIds = ids((r) => r.provider_auth_config_id);
    const credentialIds = ids((r) => r.provider_auth_credentials_id);
    const methodIds = ids((r) => r.provider_auth_method_id);
    const deploymentIds = ids((r) => r.provider_deployment_id);
    const [configs, credentials, methods, deployments] = await Promise.all([
      configIds.length
        ? this.db.selectFrom("provider_auth_configs").selectAll().where("id", "in", configIds).execute()
        : [],
      credentialIds.length
        ? this.db.selectFrom("provider_auth_credentials").selectAll().where("id", "in", credentialIds).execute()
        : [],
      methodIds.length
        ? this.db.selectFrom("provider_auth_methods").selectAll().where("id", "in", methodIds).execute()
        : [],
      deploymentIds.length
        ? this.db.selectFrom("provider_deployments").select(["id", "name"]).where("id", "in", deploymentIds).execute()
        : [],
    ]);
    return {
      authConfigs: new Map(
        configs.map((c) => [
          c.id,
          {
            object: "provider.auth_config",
            id: c.id,
            status: c.status,
            type: c.type,
            name: c.name,
            description: c.description,
            metadata: c.metadata,
            provider_id: c.provider_id,
            provider_deployment_id: c.provider_deployment_id,
            provider_auth_method_id: c.provider_auth_method_id,
            created_at: iso(c.created_at),
            updated_at: iso(c.updated_at),
          },
        ]),
      ),
      credentials: new Map(
        credentials.map((c) => [
          c.id,
          {
            object: "provider.auth_credentials",
            id: c.id,
            type: c.type,
            name: c.name,
            description: c.description,
            metadata: c.metadata,
            provider_id: c.provider_id,
            client_id: c.client_id,
            created_at: iso(c.created_at),
            updated_at: iso(c.updated_at),
          },
        ]),
      ),
      methods: new Map(methods.map((m) => [m.id, toAuthMethod(m)])),
      deploymentNames: new Map(deployments.map((d) => [d.id, d.name])),
    };
  }
}
