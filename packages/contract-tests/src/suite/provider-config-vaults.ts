import { catalogProvider } from "../seed.ts";
import { defineSuite } from "./types.ts";

export const providerConfigVaults = defineSuite({
  tag: "Provider config vaults",
  async run(ctx) {
    const { client, other } = ctx;
    const { providerId } = await catalogProvider(ctx);
    const deployment = await ctx.ok(
      "createProviderDeployment",
      201,
      client.POST("/provider-deployments", { body: { name: "Vaults deployment", provider_id: providerId } }),
      { label: "201 deployment for vaults" },
    );
    const theirDeployment = await ctx.ok(
      "createProviderDeployment",
      201,
      other.POST("/provider-deployments", { body: { name: "Their vaults deployment", provider_id: providerId } }),
      { label: "201 deployment for vaults (other tenant)" },
    );
    const mine = { provider_deployment_id: deployment.id };
    const theirs = { provider_deployment_id: theirDeployment.id };
    const unknownDeployment = { provider_deployment_id: ctx.unknownId("provider_deployment_id") };
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
    await ctx.notFound("createProviderConfigVault", unknownDeployment, "unknown deployment", body);
    await ctx.notFound("createProviderConfigVault", theirs, "another tenant's deployment", body);
    await ctx.standardErrors("createProviderConfigVault", mine);
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
    await ctx.notFound("listProviderConfigVaults", unknownDeployment, "unknown deployment");
    await ctx.notFound("listProviderConfigVaults", theirs, "another tenant's deployment");
    await ctx.standardErrors("listProviderConfigVaults", mine);

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
    await ctx.notFound("getProviderConfigVault", unknownVault, "unknown id");
    await ctx.notFound("getProviderConfigVault", theirItem, "another tenant's vault");
    await ctx.standardErrors("getProviderConfigVault", item);

    // updateProviderConfigVault
    await ctx.ok(
      "updateProviderConfigVault",
      200,
      client.PATCH("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: item },
        body: { name: "Renamed vault", description: null, metadata: null },
      }),
    );
    await ctx.notFound("updateProviderConfigVault", unknownVault, "unknown id");
    await ctx.notFound("updateProviderConfigVault", theirItem, "another tenant's vault");
    await ctx.standardErrors("updateProviderConfigVault", item);

    // deleteProviderConfigVault
    await ctx.ok(
      "deleteProviderConfigVault",
      200,
      client.DELETE("/provider-deployments/{provider_deployment_id}/config-vaults/{provider_config_vault_id}", {
        params: { path: item },
      }),
    );
    await ctx.notFound("deleteProviderConfigVault", item, "already deleted");
    await ctx.notFound("deleteProviderConfigVault", theirItem, "another tenant's vault");
    await ctx.standardErrors("deleteProviderConfigVault", item);
  },
});
