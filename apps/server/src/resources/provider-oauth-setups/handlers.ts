import type { ProviderOAuthSetupsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ProviderDeploymentService } from "../provider-deployments/service.ts";
import type { ProviderOAuthSetupService } from "./service.ts";

export const providerOAuthSetupHandlers = (
  deployments: ProviderDeploymentService,
  setups: ProviderOAuthSetupService,
): ProviderOAuthSetupsHandlers<RequestContext> => {
  const deployment = (ctx: RequestContext, id: string) => deployments.ref(ctx.instanceId, id);
  return {
    listProviderOAuthSetups: async ({ path, query }, ctx) =>
      setups.list(await deployment(ctx, path.provider_deployment_id), query),
    getProviderOAuthSetup: async ({ path }, ctx) =>
      setups.get(await deployment(ctx, path.provider_deployment_id), path.provider_oauth_setup_id),
    createProviderOAuthSetup: async ({ path, body }, ctx) =>
      setups.create(await deployment(ctx, path.provider_deployment_id), body),
    updateProviderOAuthSetup: async ({ path, body }, ctx) =>
      setups.update(await deployment(ctx, path.provider_deployment_id), path.provider_oauth_setup_id, body),
  };
};
