import type { Db } from "../db/database.ts";
import { FLOW_TTL_MS, flowUrl, OAuthFlowStore } from "./flows.ts";

/**
 * A link handed out has at least this long left; an older pending one is replaced by a new one, so nobody is sent
 * to a link that expires while they sign in.
 */
const MIN_LINK_LIFETIME_MS = FLOW_TTL_MS / 6;

/**
 * Re-authentication links for auth configs whose tokens can no longer be refreshed. A link is the start URL of a
 * setup session (one hour, random key) that signs in again with the config's own auth method and client and, on
 * success, replaces the credentials of that same auth config (see `complete` in flow-runner.ts), so sessions that
 * reference it work again. The URL is a capability: it goes to the session's client, never into logs or records.
 */
export class ReauthLinks {
  private readonly flows: OAuthFlowStore;

  constructor(
    private readonly db: Db,
    private readonly publicUrl: string,
  ) {
    this.flows = new OAuthFlowStore(db);
  }

  /**
   * The link for an OAuth auth config that is `refresh_failed` or `expired`: its pending repair while that has
   * time left, else a new one. Null for a config that is usable, gone or not OAuth, or a plain OAuth one whose
   * deployment has no OAuth app to sign in with.
   */
  async linkFor(instanceId: string, authConfigId: string): Promise<string | null> {
    const config = await this.db
      .selectFrom("provider_auth_configs")
      .selectAll()
      .where("instance_id", "=", instanceId)
      .where("id", "=", authConfigId)
      .where("status", "in", ["refresh_failed", "expired"])
      .executeTakeFirst();
    const method = config
      ? await this.db
          .selectFrom("provider_auth_methods")
          .selectAll()
          .where("id", "=", config.provider_auth_method_id)
          .where("type", "in", ["oauth", "mcp_oauth"])
          .executeTakeFirst()
      : undefined;
    if (!config || !method) return null;
    // A plain OAuth sign-in needs an OAuth app: the config's own, else the deployment's newest (an imported token
    // has none); MCP OAuth registers its client itself.
    const credentialsId =
      config.provider_auth_credentials_id ??
      (method.type === "oauth"
        ? (
            await this.db
              .selectFrom("provider_auth_credentials")
              .select("id")
              .where("provider_deployment_id", "=", config.provider_deployment_id)
              .orderBy("id", "desc")
              .executeTakeFirst()
          )?.id
        : null);
    if (credentialsId === undefined) return null;
    const pending = await this.db
      .selectFrom("oauth_flows")
      .selectAll()
      .where("repairs_provider_auth_config_id", "=", authConfigId)
      .where("status", "in", ["pending", "opened"])
      .where("expires_at", ">", new Date(Date.now() + MIN_LINK_LIFETIME_MS))
      .orderBy("id", "desc")
      .executeTakeFirst();
    const deployment = {
      id: config.provider_deployment_id,
      instanceId,
      providerId: config.provider_id,
      effectiveVersionId: null,
    };
    const row =
      pending ??
      (await this.flows.insert(deployment, {
        kind: "setup_session",
        method,
        credentialsId,
        name: `Re-authentication of ${config.name ?? authConfigId}`,
        description: `Signs auth config ${authConfigId} in again after its tokens could not be refreshed.`,
        repairs: authConfigId,
      }));
    return flowUrl(this.publicUrl, row, row.status);
  }
}
