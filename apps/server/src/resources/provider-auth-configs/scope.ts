import type { Row } from "../../db/schema.ts";
import type { DeploymentRef, ProviderDeploymentService } from "../provider-deployments/service.ts";
import type { ProviderAuthConfigService } from "./service.ts";

export interface AuthConfigScope {
  deployment: DeploymentRef;
  authConfig: Row<"provider_auth_configs">;
}

/** Resolves `<dep>/auth-configs/:id/…` paths: both must be this instance's and belong together, else 404. */
export const authConfigScope =
  (deployments: ProviderDeploymentService, authConfigs: ProviderAuthConfigService) =>
  async (
    instanceId: string,
    path: { provider_deployment_id: string; provider_auth_config_id: string },
  ): Promise<AuthConfigScope> => {
    const deployment = await deployments.ref(instanceId, path.provider_deployment_id);
    return { deployment, authConfig: await authConfigs.find(deployment, path.provider_auth_config_id) };
  };
