import type { ProviderConfigsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ProviderDeploymentService } from "../provider-deployments/service.ts";
import type { ProviderConfigService } from "./service.ts";

export const providerConfigHandlers = (
  deployments: ProviderDeploymentService,
  configs: ProviderConfigService,
): ProviderConfigsHandlers<RequestContext> => {
  const deployment = (ctx: RequestContext, id: string) => deployments.ref(ctx.instanceId, id);
  return {
    listProviderConfigs: async ({ path, query }, ctx) =>
      configs.list(await deployment(ctx, path.provider_deployment_id), query),
    getProviderConfig: async ({ path }, ctx) =>
      configs.get(await deployment(ctx, path.provider_deployment_id), path.provider_config_id),
    createProviderConfig: async ({ path, body }, ctx) =>
      configs.create(await deployment(ctx, path.provider_deployment_id), body),
    updateProviderConfig: async ({ path, body }, ctx) =>
      configs.update(await deployment(ctx, path.provider_deployment_id), path.provider_config_id, body),
    deleteProviderConfig: async ({ path }, ctx) =>
      configs.delete(await deployment(ctx, path.provider_deployment_id), path.provider_config_id),
    getProviderConfigSchema: async ({ path }, ctx) =>
      configs.schema(await deployment(ctx, path.provider_deployment_id)),
  };
};
