import type { ProviderAuthConfigsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ProviderDeploymentService } from "../provider-deployments/service.ts";
import type { ProviderAuthConfigService } from "./service.ts";

export const providerAuthConfigHandlers = (
  deployments: ProviderDeploymentService,
  authConfigs: ProviderAuthConfigService,
): ProviderAuthConfigsHandlers<RequestContext> => {
  const deployment = (ctx: RequestContext, id: string) => deployments.ref(ctx.instanceId, id);
  return {
    listProviderAuthConfigs: async ({ path, query }, ctx) =>
      authConfigs.listFiltered(await deployment(ctx, path.provider_deployment_id), query),
    getProviderAuthConfig: async ({ path }, ctx) =>
      authConfigs.get(await deployment(ctx, path.provider_deployment_id), path.provider_auth_config_id),
    createProviderAuthConfig: async ({ path, body }, ctx) =>
      authConfigs.create(await deployment(ctx, path.provider_deployment_id), body),
    updateProviderAuthConfig: async ({ path, body }, ctx) =>
      authConfigs.update(await deployment(ctx, path.provider_deployment_id), path.provider_auth_config_id, body),
    deleteProviderAuthConfig: async ({ path }, ctx) =>
      authConfigs.delete(await deployment(ctx, path.provider_deployment_id), path.provider_auth_config_id),
  };
};
