import type { ProviderSetupSessionsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ProviderDeploymentService } from "../provider-deployments/service.ts";
import type { ProviderSetupSessionService } from "./service.ts";

export const providerSetupSessionHandlers = (
  deployments: ProviderDeploymentService,
  sessions: ProviderSetupSessionService,
): ProviderSetupSessionsHandlers<RequestContext> => {
  const deployment = (ctx: RequestContext, id: string) => deployments.ref(ctx.instanceId, id);
  return {
    listProviderSetupSessions: async ({ path, query }, ctx) =>
      sessions.list(await deployment(ctx, path.provider_deployment_id), query),
    getProviderSetupSession: async ({ path }, ctx) =>
      sessions.get(await deployment(ctx, path.provider_deployment_id), path.provider_setup_session_id),
    createProviderSetupSession: async ({ path, body }, ctx) =>
      sessions.create(await deployment(ctx, path.provider_deployment_id), body),
    updateProviderSetupSession: async ({ path, body }, ctx) =>
      sessions.update(await deployment(ctx, path.provider_deployment_id), path.provider_setup_session_id, body),
    deleteProviderSetupSession: async ({ path }, ctx) =>
      sessions.delete(await deployment(ctx, path.provider_deployment_id), path.provider_setup_session_id),
  };
};
