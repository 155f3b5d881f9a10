import { catalogProvider, seedListing } from "../seed.ts";
import { defineSuite } from "./types.ts";

export const providerConfigs = defineSuite({
  tag: "Provider configs",
  async run(ctx) {
    const { client, other } = ctx;
    const { providerId } = await catalogProvider(ctx);
    const deployment = await ctx.ok(
      "createProviderDeployment",
      201,
      client.POST("/provider-deployments", { body: { name: "Configs deployment", provider_id: providerId } }),
      { label: "201 deployment for configs" },
    );
    const theirDeployment = await ctx.ok(
      "createProviderDeployment",
      201,
      other.POST("/provider-deployments", { body: { name: "Their configs deployment", provider_id: providerId } }),
      { label: "201 deployment for configs (other tenant)" },
    );
    // A provider without any version: its deployment has no config schema to validate against (the 409s).
    const { providerId: versionless } = await seedListing(ctx, null, "Contract versionless");
    const stranded = await ctx.ok(
      "createProviderDeployment",
      201,
      client.POST("/provider-deployments", { body: { name: "No runnable version", provider_id: versionless } }),
      { label: "201 deployment of a provider without versions" },
    );
    const mine = { provider_deployment_id: deployment.id };
    const theirs = { provider_deployment_id: theirDeployment.id };
    const unknownDeployment = { provider_deployment_id: ctx.unknownId("provider_deployment_id") };
    const inline = (name: string, data: Record<string, unknown> = {}) => ({
      name,
      config: { type: "inline" as const, data },
    });

    // getProviderConfigSchema
    await ctx.ok(
      "getProviderConfigSchema",
      200,
      client.GET("/provider-deployments/{provider_deployment_id}/config-schema", { params: { path: mine } }),
    );
    await ctx.check(
      "getProviderConfigSchema",
      409,
      client.GET("/provider-deployments/{provider_deployment_id}/config-schema", {
        params: { path: { provider_deployment_id: stranded.id } },
      }),
      { code: "conflict", label: "409 no runnable version" },
    );
    await ctx.notFound("getProviderConfigSchema", unknownDeployment, "unknown deployment");
    await ctx.notFound("getProviderConfigSchema", theirs, "another tenant's deployment");
    await ctx.standardErrors("getProviderConfigSchema", mine);

    // createProviderConfig
    const config = await ctx.ok(
      "createProviderConfig",
      201,
      client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: mine },
        body: { ...inline("Contract config"), description: "Made by the contract tests", metadata: { env: "qa" } },
      }),
    );
    const vault = await ctx.ok(
      "createProviderConfigVault",
      201,
      client.POST("/provider-deployments/{provider_deployment_id}/config-vaults", {
        params: { path: mine },
        body: { name: "Vault for a config", data: {} },
      }),
      { label: "201 vault for a config" },
    );
    await ctx.ok(
      "createProviderConfig",
      201,
      client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: mine },
        body: { name: "From a vault", config: { type: "vault", provider_config_vault_id: vault.id } },
      }),
      { label: "201 from a vault" },
    );
    await ctx.check(
      "createProviderConfig",
      400,
      client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: mine },
        body: inline("Breaks the config schema", { not_a_setting: 1 }),
      }),
      { code: "invalid_data", label: "400 data breaks the config schema" },
    );
    await ctx.check(
      "createProviderConfig",
      409,
      client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: { provider_deployment_id: stranded.id } },
        body: inline("No schema"),
      }),
      { code: "conflict", label: "409 no runnable version" },
    );
    await ctx.notFound("createProviderConfig", mine, "unknown vault", {
      name: "Unknown vault",
      config: { type: "vault", provider_config_vault_id: ctx.unknownId("provider_config_vault_id") },
    });
    await ctx.notFound("createProviderConfig", unknownDeployment, "unknown deployment", inline("x"));
    await ctx.notFound("createProviderConfig", theirs, "another tenant's deployment", inline("x"));
    await ctx.standardErrors("createProviderConfig", mine);
    const theirConfig = await ctx.ok(
      "createProviderConfig",
      201,
      other.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: theirs },
        body: inline("Theirs"),
      }),
      { label: "201 as the other tenant" },
    );

    // listProviderConfigs
    await ctx.ok(
      "listProviderConfigs",
      200,
      client.GET("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: mine, query: { limit: 1, order: "desc" } },
      }),
    );
    await ctx.notFound("listProviderConfigs", unknownDeployment, "unknown deployment");
    await ctx.notFound("listProviderConfigs", theirs, "another tenant's deployment");
    await ctx.standardErrors("listProviderConfigs", mine);

    // getProviderConfig
    const item = { ...mine, provider_config_id: config.id };
    await ctx.ok(
      "getProviderConfig",
      200,
      client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: item },
      }),
    );
    await ctx.notFound(
      "getProviderConfig",
      { ...mine, provider_config_id: ctx.unknownId("provider_config_id") },
      "unknown id",
    );
    await ctx.notFound(
      "getProviderConfig",
      { ...theirs, provider_config_id: theirConfig.id },
      "another tenant's config",
    );
    await ctx.notFound(
      "getProviderConfig",
      { ...mine, provider_config_id: theirConfig.id },
      "another tenant's config id under my deployment",
    );
    await ctx.standardErrors("getProviderConfig", item);

    // updateProviderConfig
    await ctx.ok(
      "updateProviderConfig",
      200,
      client.PATCH("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: item },
        body: { name: "Renamed config", description: null, metadata: null },
      }),
    );
    await ctx.notFound(
      "updateProviderConfig",
      { ...mine, provider_config_id: ctx.unknownId("provider_config_id") },
      "unknown id",
    );
    await ctx.notFound(
      "updateProviderConfig",
      { ...theirs, provider_config_id: theirConfig.id },
      "another tenant's config",
    );
    await ctx.standardErrors("updateProviderConfig", item);

    // deleteProviderConfig (its 409 needs a session or session template using the config: not until sessions land)
    await ctx.ok(
      "deleteProviderConfig",
      200,
      client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: item },
      }),
    );
    await ctx.notFound("deleteProviderConfig", item, "already deleted");
    await ctx.notFound(
      "deleteProviderConfig",
      { ...theirs, provider_config_id: theirConfig.id },
      "another tenant's config",
    );
    await ctx.standardErrors("deleteProviderConfig", item);
  },
});
