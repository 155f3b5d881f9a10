import type { ProviderDeploymentsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ProviderDeploymentService } from "./service.ts";

export const providerDeploymentHandlers = (
  deployments: ProviderDeploymentService,
): ProviderDeploymentsHandlers<RequestContext> => ({
  listProviderDeployments: ({ query }, ctx) => deployments.list(ctx.instanceId, query),
  getProviderDeployment: ({ path }, ctx) => deployments.get(ctx.instanceId, path.provider_deployment_id),
  createProviderDeployment: ({ body }, ctx) => deployments.create(ctx.instanceId, body),
  updateProviderDeployment: ({ path, body }, ctx) =>
    deployments.update(ctx.instanceId, path.provider_deployment_id, body),
  deleteProviderDeployment: ({ path }, ctx) => deployments.delete(ctx.instanceId, path.provider_deployment_id),
});
