import { catalogProvider } from "../seed.ts";
import { checkMisses } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const providerDeployments = defineSuite({
  tag: "Provider deployments",
  async run(ctx) {
    const { client, other } = ctx;
    const { providerId, currentVersionId } = await catalogProvider(ctx);
    const deploy = (name: string) => ({ name, provider_id: providerId });

    // createProviderDeployment
    const deployment = await ctx.ok(
      "createProviderDeployment",
      201,
      client.POST("/provider-deployments", {
        body: { ...deploy("Contract deployment"), description: "Made by the contract tests", metadata: { team: "qa" } },
      }),
    );
    await ctx.ok(
      "createProviderDeployment",
      201,
      client.POST("/provider-deployments", {
        body: { ...deploy("Pinned deployment"), locked_provider_version_id: currentVersionId },
      }),
      { label: "201 pinned to a version" },
    );
    await ctx.check(
      "createProviderDeployment",
      400,
      client.POST("/provider-deployments", { body: { ...deploy(""), metadata: { team: "qa" } } }),
      { code: "invalid_data", label: "400 empty name" },
    );
    await ctx.notFound("createProviderDeployment", {}, "unknown provider", {
      name: "Nowhere",
      provider_id: "pro_00000000000000000000000000",
    });
    await ctx.notFound("createProviderDeployment", {}, "unknown version", {
      ...deploy("Unknown version"),
      locked_provider_version_id: "prv_00000000000000000000000000",
    });
    await ctx.notFound("createProviderDeployment", {}, "unknown default config", {
      ...deploy("Unknown config"),
      config: { type: "reference", provider_config_id: ctx.unknownId("provider_config_id") },
    });
    await ctx.standardErrors("createProviderDeployment");
    const theirs = await ctx.ok(
      "createProviderDeployment",
      201,
      other.POST("/provider-deployments", { body: deploy("Theirs") }),
      {
        label: "201 as the other tenant",
      },
    );
    const mine = { provider_deployment_id: deployment.id };
    const theirPath = { provider_deployment_id: theirs.id };
    const unknown = { provider_deployment_id: ctx.unknownId("provider_deployment_id") };

    // listProviderDeployments
    await ctx.ok(
      "listProviderDeployments",
      200,
      client.GET("/provider-deployments", { params: { query: { limit: 1 } } }),
      {
        label: "200 first page",
      },
    );
    await ctx.ok(
      "listProviderDeployments",
      200,
      client.GET("/provider-deployments", {
        params: { query: { provider_id: [providerId], search: "contract", status: "active", order: "desc" } },
      }),
      { label: "200 filtered" },
    );
    await ctx.standardErrors("listProviderDeployments");

    // getProviderDeployment
    await ctx.ok(
      "getProviderDeployment",
      200,
      client.GET("/provider-deployments/{provider_deployment_id}", { params: { path: mine } }),
    );
    await checkMisses(ctx, "getProviderDeployment", mine, [
      [unknown, "unknown id"],
      [theirPath, "another tenant's deployment"],
    ]);

    // updateProviderDeployment
    await ctx.ok(
      "updateProviderDeployment",
      200,
      client.PATCH("/provider-deployments/{provider_deployment_id}", {
        params: { path: mine },
        body: { name: "Renamed deployment", description: null, metadata: null },
      }),
    );
    await checkMisses(ctx, "updateProviderDeployment", mine, [
      [unknown, "unknown id"],
      [theirPath, "another tenant's deployment"],
    ]);

    // deleteProviderDeployment: refused while another deployment uses one of its configs as its default.
    const holder = await ctx.ok(
      "createProviderDeployment",
      201,
      client.POST("/provider-deployments", { body: deploy("Config holder") }),
      {
        label: "201 deployment to delete",
      },
    );
    const holderPath = { provider_deployment_id: holder.id };
    const shared = await ctx.ok(
      "createProviderConfig",
      201,
      client.POST("/provider-deployments/{provider_deployment_id}/configs", {
        params: { path: holderPath },
        body: { name: "Shared default", config: { type: "inline", data: {} } },
      }),
      { label: "201 config to share" },
    );
    const user = await ctx.ok(
      "createProviderDeployment",
      201,
      client.POST("/provider-deployments", {
        body: { ...deploy("Config user"), config: { type: "reference", provider_config_id: shared.id } },
      }),
      { label: "201 with another deployment's config as default" },
    );
    await ctx.check(
      "deleteProviderDeployment",
      409,
      client.DELETE("/provider-deployments/{provider_deployment_id}", { params: { path: holderPath } }),
      { code: "conflict", label: "409 its config is another deployment's default" },
    );
    await ctx.ok(
      "deleteProviderDeployment",
      200,
      client.DELETE("/provider-deployments/{provider_deployment_id}", {
        params: { path: { provider_deployment_id: user.id } },
      }),
    );
    await ctx.ok(
      "deleteProviderDeployment",
      200,
      client.DELETE("/provider-deployments/{provider_deployment_id}", { params: { path: holderPath } }),
      {
        label: "200 once nothing uses its config",
      },
    );
    await checkMisses(ctx, "deleteProviderDeployment", mine, [
      [holderPath, "already deleted"],
      [theirPath, "another tenant's deployment"],
    ]);
  },
});
