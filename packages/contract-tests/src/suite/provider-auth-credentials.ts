import { authMethods } from "../seed.ts";
import { checkMisses, deploymentPair } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const providerAuthCredentials = defineSuite({
  tag: "Provider auth credentials",
  async run(ctx) {
    const { client, other } = ctx;
    const { providerId, mine, theirs, deploymentMisses } = await deploymentPair(ctx, "auth credentials");
    const body = (name: string) => ({
      name,
      config: {
        type: "oauth" as const,
        clientId: "contract-client",
        clientSecret: "contract-secret-not-real",
        scopes: ["repo"],
      },
    });

    // createProviderAuthCredentials
    const credentials = await ctx.ok(
      "createProviderAuthCredentials",
      201,
      client.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
        params: { path: mine },
        body: { ...body("Contract OAuth app"), description: "Made by the contract tests", metadata: { team: "qa" } },
      }),
    );
    await ctx.check(
      "createProviderAuthCredentials",
      400,
      client.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
        params: { path: mine },
        body: { name: "No config" } as never,
      }),
      { code: "invalid_data", label: "400 without config" },
    );
    await checkMisses(ctx, "createProviderAuthCredentials", mine, deploymentMisses, body("x"));
    const theirCredentials = await ctx.ok(
      "createProviderAuthCredentials",
      201,
      other.POST("/provider-deployments/{provider_deployment_id}/auth-credentials", {
        params: { path: theirs },
        body: body("Theirs"),
      }),
      { label: "201 as the other tenant" },
    );

    // listProviderAuthCredentials
    await ctx.ok(
      "listProviderAuthCredentials",
      200,
      client.GET("/provider-deployments/{provider_deployment_id}/auth-credentials", {
        params: { path: mine, query: { limit: 1, id: [credentials.id] } },
      }),
    );
    await checkMisses(ctx, "listProviderAuthCredentials", mine, deploymentMisses);

    // getProviderAuthCredentials
    const item = { ...mine, provider_auth_credentials_id: credentials.id };
    const unknownItem = { ...mine, provider_auth_credentials_id: ctx.unknownId("provider_auth_credentials_id") };
    const theirItem = { ...theirs, provider_auth_credentials_id: theirCredentials.id };
    const itemPath = "/provider-deployments/{provider_deployment_id}/auth-credentials/{provider_auth_credentials_id}";
    await ctx.ok("getProviderAuthCredentials", 200, client.GET(itemPath, { params: { path: item } }));
    await checkMisses(ctx, "getProviderAuthCredentials", item, [
      [unknownItem, "unknown id"],
      [theirItem, "another tenant's credentials"],
    ]);

    // updateProviderAuthCredentials
    await ctx.ok(
      "updateProviderAuthCredentials",
      200,
      client.PATCH(itemPath, {
        params: { path: item },
        body: { name: "Renamed app", description: null, metadata: null },
      }),
    );
    await checkMisses(ctx, "updateProviderAuthCredentials", item, [
      [unknownItem, "unknown id"],
      [theirItem, "another tenant's credentials"],
    ]);

    // deleteProviderAuthCredentials: refused while an auth config uses them.
    const { oauth } = await authMethods(ctx, providerId);
    if (oauth) {
      const authConfig = await ctx.ok(
        "createProviderAuthConfig",
        201,
        client.POST("/provider-deployments/{provider_deployment_id}/auth-configs", {
          params: { path: mine },
          body: {
            name: "Uses the credentials",
            provider_auth_method_id: oauth,
            credentials: { type: "reference", provider_auth_credentials_id: credentials.id },
          },
        }),
        { label: "201 auth config holding the credentials" },
      );
      await ctx.check("deleteProviderAuthCredentials", 409, client.DELETE(itemPath, { params: { path: item } }), {
        code: "conflict",
        label: "409 an auth config uses them",
      });
      await ctx.ok(
        "deleteProviderAuthConfig",
        200,
        client.DELETE("/provider-deployments/{provider_deployment_id}/auth-configs/{provider_auth_config_id}", {
          params: { path: { ...mine, provider_auth_config_id: authConfig.id } },
        }),
        { label: "200 freeing the credentials" },
      );
    } else {
      ctx.log(`no OAuth auth method on ${providerId}: the 409 of deleteProviderAuthCredentials is not exercised`);
    }
    await ctx.ok("deleteProviderAuthCredentials", 200, client.DELETE(itemPath, { params: { path: item } }));
    await checkMisses(ctx, "deleteProviderAuthCredentials", item, [
      [item, "already deleted"],
      [theirItem, "another tenant's credentials"],
    ]);
  },
});
