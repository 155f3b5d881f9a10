import { seedListing } from "../seed.ts";
import { checkMisses, deploymentPair } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const providerConfigs = defineSuite({
  tag: "Provider configs",
  async run(ctx) {
    const { client, other } = ctx;
    const { mine, theirs, deploymentMisses } = await deploymentPair(ctx, "configs");
    // A provider without any version: its deployment has no config schema to validate against (the 409s).
    const { providerId: versionless } = await seedListing(ctx, null, "Contract versionless");
    const stranded = await ctx.ok(
      "createProviderDeployment",
      201,
      client.POST("/provider-deployments", { body: { name: "No runnable version", provider_id: versionless } }),
      { label: "201 deployment of a provider without versions" },
    );
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
    await checkMisses(ctx, "getProviderConfigSchema", mine, deploymentMisses);

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
    await checkMisses(ctx, "createProviderConfig", mine, deploymentMisses, inline("x"));
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
    await checkMisses(ctx, "listProviderConfigs", mine, deploymentMisses);

    // getProviderConfig
    const item = { ...mine, provider_config_id: config.id };
    await ctx.ok(
      "getProviderConfig",
      200,
      client.GET("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: item },
      }),
    );
    await checkMisses(ctx, "getProviderConfig", item, [
      [{ ...mine, provider_config_id: ctx.unknownId("provider_config_id") }, "unknown id"],
      [{ ...theirs, provider_config_id: theirConfig.id }, "another tenant's config"],
      [{ ...mine, provider_config_id: theirConfig.id }, "another tenant's config id under my deployment"],
    ]);

    // updateProviderConfig
    await ctx.ok(
      "updateProviderConfig",
      200,
      client.PATCH("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: item },
        body: { name: "Renamed config", description: null, metadata: null },
      }),
    );
    await checkMisses(ctx, "updateProviderConfig", item, [
      [{ ...mine, provider_config_id: ctx.unknownId("provider_config_id") }, "unknown id"],
      [{ ...theirs, provider_config_id: theirConfig.id }, "another tenant's config"],
    ]);

    // deleteProviderConfig (its 409 needs a session or session template using the config: not until sessions land)
    await ctx.ok(
      "deleteProviderConfig",
      200,
      client.DELETE("/provider-deployments/{provider_deployment_id}/configs/{provider_config_id}", {
        params: { path: item },
      }),
    );
    await checkMisses(ctx, "deleteProviderConfig", item, [
      [item, "already deleted"],
      [{ ...theirs, provider_config_id: theirConfig.id }, "another tenant's config"],
    ]);
  },
});
