import { expect } from "vitest";
import type { TestServer } from "./server.ts";

/** Deployments and their configs and vaults, made through the API as a given tenant. */

type Client = TestServer["client"];

/** Asserts a 201 and returns the created object. */
export async function expectCreated<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const res = await call;
  expect(res.response.status, JSON.stringify(res.error)).toBe(201);
  if (!res.data) throw new Error("no body");
  return res.data;
}

export function deploy(client: Client, providerId: string, name = "GitHub", extra: Record<string, unknown> = {}) {
  return expectCreated(
    client.POST("/provider-deployments", { body: { name, provider_id: providerId, ...extra } as never }),
  );
}

export function createVault(client: Client, deploymentId: string, name: string, data: Record<string, unknown>) {
  return expectCreated(
    client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: { name, data },
    }),
  );
}

export function createInlineConfig(client: Client, deploymentId: string, name: string, data: Record<string, unknown>) {
  return expectCreated(
    client.POST("/provider-deployments/{provider_deployment_id}/configs", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: { name, config: { type: "inline", data } },
    }),
  );
}

export function createVaultConfig(client: Client, deploymentId: string, name: string, vaultId: string) {
  return expectCreated(
    client.POST("/provider-deployments/{provider_deployment_id}/configs", {
      params: { path: { provider_deployment_id: deploymentId } },
      body: { name, config: { type: "vault", provider_config_vault_id: vaultId } },
    }),
  );
}

/** Raw paths of a collection under a deployment (`auth-configs`, `config-vaults`, …) and of its items. */
export const underDeployment = (name: string) => {
  const collection = (deploymentId: string) => `/provider-deployments/${deploymentId}/${name}`;
  return { collection, item: (deploymentId: string, id: string) => `${collection(deploymentId)}/${id}` };
};
