import type { ToolplaneClient } from "@toolplane/client";
import type { SuiteContext } from "../context.ts";
import { authMethods, catalogProvider } from "../seed.ts";
import type { OperationId } from "../spec.ts";

type Path = Record<string, string>;
/** A path an operation must answer 404 for, and how the report names it. */
export type Miss = [path: Path, label: string];

/** A deployment of `providerId` created as `who` (checked); `label` names it in the report. */
export function deploy(ctx: SuiteContext, who: ToolplaneClient, providerId: string, label: string) {
  return ctx.ok(
    "createProviderDeployment",
    201,
    who.POST("/provider-deployments", { body: { name: `Deployment (${label})`, provider_id: providerId } }),
    { label: `201 deployment (${label})` },
  );
}

/**
 * A deployment of the catalog provider for each tenant, and the deployment paths every suite of a deployment's
 * sub-resources uses: mine, the other tenant's, and one that does not exist.
 */
export async function deploymentPair(ctx: SuiteContext, label: string) {
  const { providerId } = await catalogProvider(ctx);
  const deployment = await deploy(ctx, ctx.client, providerId, label);
  const theirDeployment = await deploy(ctx, ctx.other, providerId, `${label}, other tenant`);
  const theirs = { provider_deployment_id: theirDeployment.id };
  const unknownDeployment = { provider_deployment_id: ctx.unknownId("provider_deployment_id") };
  const deploymentMisses: Miss[] = [
    [unknownDeployment, "unknown deployment"],
    [theirs, "another tenant's deployment"],
  ];
  return { providerId, mine: { provider_deployment_id: deployment.id }, theirs, unknownDeployment, deploymentMisses };
}

/** A portal for each tenant, and the paths of a portal's sub-resources: mine and the misses (unknown, theirs). */
export async function portalPair(ctx: SuiteContext, name: string) {
  const portal = await ctx.ok("createPortal", 201, ctx.client.POST("/portals", { body: { name } }), {
    label: `201 portal for ${name}`,
  });
  const theirs = await ctx.ok("createPortal", 201, ctx.other.POST("/portals", { body: { name } }), {
    label: `201 portal for ${name}, other tenant`,
  });
  const portalMisses: Miss[] = [
    [{ portal_id: ctx.unknownId("portal_id") }, "unknown portal"],
    [{ portal_id: theirs.id }, "another tenant's portal"],
  ];
  return { mine: { portal_id: portal.id }, theirs, portalMisses };
}

/**
 * The 404 each of `misses` (an unknown id, another tenant's id: `[path, label]`) answers for the operation,
 * then the standard error checks on `mine`.
 */
export async function checkMisses(
  ctx: SuiteContext,
  operationId: OperationId,
  mine: Path,
  misses: Miss[],
  body?: unknown,
) {
  for (const [path, label] of misses) await ctx.notFound(operationId, path, label, body);
  await ctx.standardErrors(operationId, mine);
}

/** A deployment of `providerId` as `who` with OAuth auth credentials (checked). */
export async function deployWithCredentials(
  ctx: SuiteContext,
  who: ToolplaneClient,
  providerId: string,
  label: string,
) {
  const deployment = await deploy(ctx, who, providerId, label);
  const path = { provider_deployment_id: deployment.id };
  const credentials = await ctx.ok(
    "createProviderAuthCredentials",
    201,
    who.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
      params: { path },
      body: {
        name: `OAuth app (${label})`,
        config: { type: "oauth", clientId: "contract-client", clientSecret: "not-a-real-secret", scopes: ["repo"] },
      },
    }),
    { label: `201 credentials (${label})` },
  );
  return { path, credentialsId: credentials.id };
}

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
  const { path: deploymentPath, credentialsId } = await deployWithCredentials(ctx, who, providerId, label);
  const authConfig = await ctx.ok(
    "createProviderAuthConfig",
    201,
    who.POST("/provider-deployments/{provider_deployment_id}/auth-configs", {
      params: { path: deploymentPath },
      body: {
        name: `Connection (${label})`,
        provider_auth_method_id: oauth,
        credentials: { type: "reference", provider_auth_credentials_id: credentialsId },
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

/** Tenancy in lists: a page must not hold another tenant's row (the suite stops with the reason otherwise). */
export function expectAbsent(page: { items: { id: string }[] }, id: string, label: string) {
  if (page.items.some((item) => item.id === id)) throw new Error(`${label}: the list shows ${id}`);
}
