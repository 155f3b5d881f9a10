import type { ProviderAuthCredentialsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ProviderDeploymentService } from "../provider-deployments/service.ts";
import type { ProviderAuthCredentialsService } from "./service.ts";

export const providerAuthCredentialsHandlers = (
  deployments: ProviderDeploymentService,
  credentials: ProviderAuthCredentialsService,
): ProviderAuthCredentialsHandlers<RequestContext> => {
  const deployment = (ctx: RequestContext, id: string) => deployments.ref(ctx.instanceId, id);
  return {
    listProviderAuthCredentials: async ({ path, query }, ctx) =>
      credentials.listFiltered(await deployment(ctx, path.provider_deployment_id), query),
    getProviderAuthCredentials: async ({ path }, ctx) =>
      credentials.get(await deployment(ctx, path.provider_deployment_id), path.provider_auth_credentials_id),
    createProviderAuthCredentials: async ({ path, body }, ctx) =>
      credentials.create(await deployment(ctx, path.provider_deployment_id), body),
    updateProviderAuthCredentials: async ({ path, body }, ctx) =>
      credentials.update(await deployment(ctx, path.provider_deployment_id), path.provider_auth_credentials_id, body),
    deleteProviderAuthCredentials: async ({ path }, ctx) =>
      credentials.delete(await deployment(ctx, path.provider_deployment_id), path.provider_auth_credentials_id),
  };
};
