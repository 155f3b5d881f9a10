import type { ProviderConfigVaultsHandlers } from "@toolplane/server-stubs";
import type { RequestContext } from "../../context.ts";
import type { ProviderDeploymentService } from "../provider-deployments/service.ts";
import type { ProviderConfigVaultService } from "./service.ts";

export const providerConfigVaultHandlers = (
  deployments: ProviderDeploymentService,
  vaults: ProviderConfigVaultService,
): ProviderConfigVaultsHandlers<RequestContext> => {
  const deployment = (ctx: RequestContext, id: string) => deployments.ref(ctx.instanceId, id);
  return {
    listProviderConfigVaults: async ({ path, query }, ctx) =>
      vaults.list(await deployment(ctx, path.provider_deployment_id), query),
    getProviderConfigVault: async ({ path }, ctx) =>
      vaults.get(await deployment(ctx, path.provider_deployment_id), path.provider_config_vault_id),
    createProviderConfigVault: async ({ path, body }, ctx) =>
      vaults.create(await deployment(ctx, path.provider_deployment_id), body),
    updateProviderConfigVault: async ({ path, body }, ctx) =>
      vaults.update(await deployment(ctx, path.provider_deployment_id), path.provider_config_vault_id, body),
    deleteProviderConfigVault: async ({ path }, ctx) =>
      vaults.delete(await deployment(ctx, path.provider_deployment_id), path.provider_config_vault_id),
  };
};
