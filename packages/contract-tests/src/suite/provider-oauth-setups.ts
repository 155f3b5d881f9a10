import type { SuiteContext } from "../context.ts";
import { authMethods, catalogProvider } from "../seed.ts";
import { deployWithCredentials } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

/** A deployment of the catalog's OAuth provider with an OAuth app (auth credentials), as `who`. */
export async function oauthDeployment(ctx: SuiteContext, who: SuiteContext["client"], label: string) {
  const { providerId } = await catalogProvider(ctx);
  const methods = await authMethods(ctx, providerId);
  if (!methods.oauth) throw new Error(`The catalog provider ${providerId} has no OAuth auth method`);
  const { path, credentialsId } = await deployWithCredentials(ctx, who, providerId, `OAuth flows, ${label}`);
  return { path, credentialsId, oauthMethodId: methods.oauth, tokenMethodId: methods.token };
}

export const providerOAuthSetups = defineSuite({
  tag: "Provider OAuth setups",
  async run(ctx) {
    const { client, other } = ctx;
    const mine = await oauthDeployment(ctx, client, "setups, mine");
    const theirs = await oauthDeployment(ctx, other, "setups, theirs");
    const unknownDeployment = { provider_deployment_id: ctx.unknownId("provider_deployment_id") };
    const collection = "/provider-deployments/{provider_deployment_id}/oauth-setups";
    const itemPath = "/provider-deployments/{provider_deployment_id}/oauth-setups/{provider_oauth_setup_id}";
    const body = { name: "Contract setup", config: {} };

    // createProviderOAuthSetup
    const setup = await ctx.ok(
      "createProviderOAuthSetup",
      201,
      client.POST(collection, {
        params: { path: mine.path },
        body: {
          ...body,
          config: { scopes: ["repo"], extra_authorize_params: { prompt: "consent" } },
          description: "Made by the contract tests",
          metadata: { team: "qa" },
          redirect_url: "https://app.example.test/done",
          is_ephemeral: false,
          provider_auth_credentials_id: mine.credentialsId,
          provider_auth_method_id: mine.oauthMethodId,
        },
      }),
    );
    await ctx.check(
      "createProviderOAuthSetup",
      400,
      client.POST(collection, {
        params: { path: mine.path },
        body: { ...body, config: { extra_authorize_params: { state: "x" } } },
      }),
      { code: "invalid_data", label: "400 reserved authorize parameter" },
    );
    if (mine.tokenMethodId) {
      await ctx.check(
        "createProviderOAuthSetup",
        400,
        client.POST(collection, {
          params: { path: mine.path },
          body: { ...body, provider_auth_method_id: mine.tokenMethodId },
        }),
        { code: "invalid_data", label: "400 token auth method" },
      );
    }
    await ctx.notFound("createProviderOAuthSetup", unknownDeployment, "unknown deployment", body);
    await ctx.notFound("createProviderOAuthSetup", theirs.path, "another tenant's deployment", body);
    await ctx.notFound("createProviderOAuthSetup", mine.path, "another deployment's credentials", {
      ...body,
      provider_auth_credentials_id: theirs.credentialsId,
    });
    await ctx.standardErrors("createProviderOAuthSetup", mine.path);
    const theirSetup = await ctx.ok(
      "createProviderOAuthSetup",
      201,
      other.POST(collection, { params: { path: theirs.path }, body }),
      { label: "201 as the other tenant" },
    );

    // listProviderOAuthSetups
    await ctx.ok(
      "listProviderOAuthSetups",
      200,
      client.GET(collection, { params: { path: mine.path, query: { limit: 1, order: "desc" } } }),
    );
    await ctx.notFound("listProviderOAuthSetups", unknownDeployment, "unknown deployment");
    await ctx.notFound("listProviderOAuthSetups", theirs.path, "another tenant's deployment");
    await ctx.standardErrors("listProviderOAuthSetups", mine.path);

    // getProviderOAuthSetup
    const item = { ...mine.path, provider_oauth_setup_id: setup.id };
    const unknownItem = { ...mine.path, provider_oauth_setup_id: ctx.unknownId("provider_oauth_setup_id") };
    const theirItem = { ...theirs.path, provider_oauth_setup_id: theirSetup.id };
    await ctx.ok("getProviderOAuthSetup", 200, client.GET(itemPath, { params: { path: item } }));
    await ctx.notFound("getProviderOAuthSetup", unknownItem, "unknown id");
    await ctx.notFound("getProviderOAuthSetup", theirItem, "another tenant's setup");
    await ctx.standardErrors("getProviderOAuthSetup", item);

    // updateProviderOAuthSetup
    await ctx.ok(
      "updateProviderOAuthSetup",
      200,
      client.PATCH(itemPath, {
        params: { path: item },
        body: { name: "Renamed setup", description: null, metadata: null },
      }),
    );
    await ctx.notFound("updateProviderOAuthSetup", unknownItem, "unknown id", { name: "x" });
    await ctx.notFound("updateProviderOAuthSetup", theirItem, "another tenant's setup", { name: "x" });
    await ctx.standardErrors("updateProviderOAuthSetup", item);
  },
});
