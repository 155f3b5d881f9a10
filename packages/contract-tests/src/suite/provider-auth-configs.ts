import { authMethods, catalogProvider } from "../seed.ts";
import { checkMisses, deployWithCredentials } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const providerAuthConfigs = defineSuite({
  tag: "Provider auth configs",
  async run(ctx) {
    const { client, other } = ctx;
    const { providerId } = await catalogProvider(ctx);
    const { oauth, token } = await authMethods(ctx, providerId);
    if (!oauth)
      throw new Error(`The catalog provider ${providerId} has no OAuth auth method to create auth configs with`);

    const setUp = (who: typeof client, label: string) =>
      deployWithCredentials(ctx, who, providerId, `auth configs, ${label}`);
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
    await checkMisses(
      ctx,
      "createProviderAuthConfig",
      mine,
      [
        [unknownDeployment, "unknown deployment"],
        [theirs, "another tenant's deployment"],
      ],
      body("x"),
    );
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
    await checkMisses(ctx, "listProviderAuthConfigs", mine, [
      [unknownDeployment, "unknown deployment"],
      [theirs, "another tenant's deployment"],
    ]);

    // getProviderAuthConfig
    const item = { ...mine, provider_auth_config_id: authConfig.id };
    const unknownItem = { ...mine, provider_auth_config_id: ctx.unknownId("provider_auth_config_id") };
    const theirItem = { ...theirs, provider_auth_config_id: theirConfig.id };
    await ctx.ok("getProviderAuthConfig", 200, client.GET(itemPath, { params: { path: item } }));
    await checkMisses(ctx, "getProviderAuthConfig", item, [
      [unknownItem, "unknown id"],
      [theirItem, "another tenant's auth config"],
    ]);

    // updateProviderAuthConfig
    await ctx.ok(
      "updateProviderAuthConfig",
      200,
      client.PATCH(itemPath, {
        params: { path: item },
        body: { name: "Renamed connection", description: null, metadata: null },
      }),
    );
    await checkMisses(ctx, "updateProviderAuthConfig", item, [
      [unknownItem, "unknown id"],
      [theirItem, "another tenant's auth config"],
    ]);

    // deleteProviderAuthConfig (its 409 needs an active session using it: not until sessions land)
    await ctx.ok("deleteProviderAuthConfig", 200, client.DELETE(itemPath, { params: { path: item } }));
    await checkMisses(ctx, "deleteProviderAuthConfig", item, [
      [item, "already deleted"],
      [theirItem, "another tenant's auth config"],
    ]);
  },
});
