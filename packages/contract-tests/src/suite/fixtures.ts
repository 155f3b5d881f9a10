import type { ToolplaneClient } from "@toolplane/client";
import type { SuiteContext } from "../context.ts";
import { authMethods, catalogProvider } from "../seed.ts";

export interface AuthConfigFixture {
  /** `{provider_deployment_id, provider_auth_config_id}`: the path of the auth config's sub-resources. */
  path: { provider_deployment_id: string; provider_auth_config_id: string };
  oauthMethodId: string;
  tokenMethodId: string | undefined;
}

/**
 * A deployment of a catalog provider with an OAuth auth method, auth credentials and an auth config (status
 * `pending`, no tokens yet), created through the API as `who` (each call checked).
 */
export async function createAuthConfig(
  ctx: SuiteContext,
  who: ToolplaneClient,
  label: string,
): Promise<AuthConfigFixture> {
  const { providerId } = await catalogProvider(ctx);
  const { oauth, token } = await authMethods(ctx, providerId);
  if (!oauth) throw new Error(`The catalog provider ${providerId} has no OAuth auth method`);
  const deployment = await ctx.ok(
    "createProviderDeployment",
    201,
    who.POST("/provider-deployments", { body: { name: `Deployment (${label})`, provider_id: providerId } }),
    { label: `201 deployment (${label})` },
  );
  const deploymentPath = { provider_deployment_id: deployment.id };
  const credentials = await ctx.ok(
    "createProviderAuthCredentials",
    201,
    who.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
      params: { path: deploymentPath },
      body: {
        name: `OAuth app (${label})`,
        config: { type: "oauth", clientId: "contract-client", clientSecret: "not-a-real-secret", scopes: ["repo"] },
      },
    }),
    { label: `201 credentials (${label})` },
  );
  const authConfig = await ctx.ok(
    "createProviderAuthConfig",
    201,
    who.POST("/provider-deployments/{provider_deployment_id}/auth-configs", {
      params: { path: deploymentPath },
      body: {
        name: `Connection (${label})`,
        provider_auth_method_id: oauth,
        credentials: { type: "reference", provider_auth_credentials_id: credentials.id },
      },
    }),
    { label: `201 auth config (${label})` },
  );
  return {
    path: { ...deploymentPath, provider_auth_config_id: authConfig.id },
    oauthMethodId: oauth,
    tokenMethodId: token,
  };
}

/** OAuth tokens as an auth import takes them (fake values). */
export const TOKENS = {
  access_token: "contract-access-token-not-real",
  refresh_token: "contract-refresh-token-not-real",
  token_type: "Bearer",
  scope: "repo",
  expires_at: "2099-01-01T00:00:00.000Z",
};
