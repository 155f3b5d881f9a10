import { authMethods, catalogProvider } from "../seed.ts";
import { defineSuite } from "./types.ts";

export const providerAuthConfigs = defineSuite({
  tag: "Provider auth configs",
  async run(ctx) {
    const { client, other } = ctx;
    const { providerId } = await catalogProvider(ctx);
    const { oauth, token } = await authMethods(ctx, providerId);
    if (!oauth)
      throw new Error(`The catalog provider ${providerId} has no OAuth auth method to create auth configs with`);

    const setUp = async (who: typeof client, label: string) => {
      const deployment = await ctx.ok(
        "createProviderDeployment",
        201,
        who.POST("/provider-deployments", {
          body: { name: `Auth configs deployment (${label})`, provider_id: providerId },
        }),
        { label: `201 deployment for auth configs (${label})` },
      );
      const path = { provider_deployment_id: deployment.id };
      const credentials = await ctx.ok(
        "createProviderAuthCredentials",
        201,
        who.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
          params: { path },
          body: {
            name: `OAuth app (${label})`,
            config: { type: "oauth", clientId: "contract-client", clientSecret: "not-a-real-secret", scopes: ["repo"] },
          },
        }),
        { label: `201 credentials for auth configs (${label})` },
      );
      return { path, credentialsId: credentials.id };
    };
    const { path: mine, credentialsId } = await setUp(client, "mine");
    const { path: theirs, credentialsId: theirCredentialsId } = await setUp(other, "theirs");
    const unknownDeployment = { provider_deployment_id: ctx.unknownId("provider_deployment_id") };
    const body = (name: string, credentials = credentialsId, method = oauth) => ({
      name,
      provider_auth_method_id: method,
      credentials: { type: "reference" as const, provider_auth_credentials_id: credentials },
    });
    const collection = "/provider-deployments/{provider_deployment_id}/auth-configs";
    const itemPath = "/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}";

    // createProviderAuthConfig
    const authConfig = await ctx.ok(
      "createProviderAuthConfig",
      201,
      client.POST(collection, {
        params: { path: mine },
        body: { ...body("Contract connection"), description: "Made by the contract tests", metadata: { team: "qa" } },
      }),
    );
    if (token) {
      await ctx.check(
        "createProviderAuthConfig",
        400,
        client.POST(collection, { params: { path: mine }, body: body("Token method", credentialsId, token) }),
        {
          code: "invalid_data",
          label: "400 auth method is not OAuth",
        },
      );
    }
    await ctx.notFound(
      "createProviderAuthConfig",
      mine,
      "unknown auth method",
      body("x", credentialsId, "pam_00000000000000000000000000"),
    );
    await ctx.notFound("createProviderAuthConfig", mine, "another tenant's credentials", body("x", theirCredentialsId));
    await ctx.notFound("createProviderAuthConfig", unknownDeployment, "unknown deployment", body("x"));
    await ctx.notFound("createProviderAuthConfig", theirs, "another tenant's deployment", body("x"));
    await ctx.standardErrors("createProviderAuthConfig", mine);
    const theirConfig = await ctx.ok(
      "createProviderAuthConfig",
      201,
      other.POST(collection, { params: { path: theirs }, body: body("Theirs", theirCredentialsId) }),
      { label: "201 as the other tenant" },
    );

    // listProviderAuthConfigs
    await ctx.ok(
      "listProviderAuthConfigs",
      200,
      client.GET(collection, {
        params: {
          path: mine,
          query: { limit: 1, provider_auth_method_id: [oauth], provider_auth_credentials_id: [credentialsId] },
        },
      }),
    );
    await ctx.notFound("listProviderAuthConfigs", unknownDeployment, "unknown deployment");
    await ctx.notFound("listProviderAuthConfigs", theirs, "another tenant's deployment");
    await ctx.standardErrors("listProviderAuthConfigs", mine);

    // getProviderAuthConfig
    const item = { ...mine, provider_auth_config_id: authConfig.id };
    const unknownItem = { ...mine, provider_auth_config_id: ctx.unknownId("provider_auth_config_id") };
    const theirItem = { ...theirs, provider_auth_config_id: theirConfig.id };
    await ctx.ok("getProviderAuthConfig", 200, client.GET(itemPath, { params: { path: item } }));
    await ctx.notFound("getProviderAuthConfig", unknownItem, "unknown id");
    await ctx.notFound("getProviderAuthConfig", theirItem, "another tenant's auth config");
    await ctx.standardErrors("getProviderAuthConfig", item);

    // updateProviderAuthConfig
    await ctx.ok(
      "updateProviderAuthConfig",
      200,
      client.PATCH(itemPath, {
        params: { path: item },
        body: { name: "Renamed connection", description: null, metadata: null },
      }),
    );
    await ctx.notFound("updateProviderAuthConfig", unknownItem, "unknown id");
    await ctx.notFound("updateProviderAuthConfig", theirItem, "another tenant's auth config");
    await ctx.standardErrors("updateProviderAuthConfig", item);

    // deleteProviderAuthConfig (its 409 needs an active session using it: not until sessions land)
    await ctx.ok("deleteProviderAuthConfig", 200, client.DELETE(itemPath, { params: { path: item } }));
    await ctx.notFound("deleteProviderAuthConfig", item, "already deleted");
    await ctx.notFound("deleteProviderAuthConfig", theirItem, "another tenant's auth config");
    await ctx.standardErrors("deleteProviderAuthConfig", item);
  },
});
