import { checkMisses, deploymentPair } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const providerConfigVaults = defineSuite({
  tag: "Provider config vaults",
  async run(ctx) {
    const { client, other } = ctx;
    const { mine, theirs, deploymentMisses } = await deploymentPair(ctx, "vaults");
    const body = { name: "Contract vault", data: { api_key: "sk_contract_example" } };

    // createProviderConfigVault
    const vault = await ctx.ok(
      "createProviderConfigVault",
      201,
      client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
        params: { path: mine },
        body: { ...body, description: "Made by the contract tests", metadata: { env: "qa" } },
      }),
    );
    await ctx.check(
      "createProviderConfigVault",
      400,
      client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
        params: { path: mine },
        body: { name: "No data" } as never,
      }),
      { code: "invalid_data", label: "400 without data" },
    );
    await checkMisses(ctx, "createProviderConfigVault", mine, deploymentMisses, body);
    const theirVault = await ctx.ok(
      "createProviderConfigVault",
      201,
      other.POST("/provider-deployments/{provider_deployment_id}/config-vaults", { params: { path: theirs }, body }),
      { label: "201 as the other tenant" },
    );

    // listProviderConfigVaults
    await ctx.ok(
      "listProviderConfigVaults",
      200,
      client.GET("/provider-deployments/{provider_deployment_id}/config-vaults", {
        params: { path: mine, query: { limit: 1 } },
      }),
    );
    await checkMisses(ctx, "listProviderConfigVaults", mine, deploymentMisses);

    // getProviderConfigVault
    const item = { ...mine, provider_config_vault_id: vault.id };
    const unknownVault = { ...mine, provider_config_vault_id: ctx.unknownId("provider_config_vault_id") };
    const theirItem = { ...theirs, provider_config_vault_id: theirVault.id };
    await ctx.ok(
      "getProviderConfigVault",
      200,
      client.GET("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: item },
      }),
    );
    await checkMisses(ctx, "getProviderConfigVault", item, [
      [unknownVault, "unknown id"],
      [theirItem, "another tenant's vault"],
    ]);

    // updateProviderConfigVault
    await ctx.ok(
      "updateProviderConfigVault",
      200,
      client.PATCH("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: item },
        body: { name: "Renamed vault", description: null, metadata: null },
      }),
    );
    await checkMisses(ctx, "updateProviderConfigVault", item, [
      [unknownVault, "unknown id"],
      [theirItem, "another tenant's vault"],
    ]);

    // deleteProviderConfigVault
    await ctx.ok(
      "deleteProviderConfigVault",
      200,
      client.DELETE("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: item },
      }),
    );
    await checkMisses(ctx, "deleteProviderConfigVault", item, [
      [item, "already deleted"],
      [theirItem, "another tenant's vault"],
    ]);
  },
});
