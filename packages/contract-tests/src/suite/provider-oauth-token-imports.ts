import { oauthDeployment } from "./provider-oauth-setups.ts";
import { defineSuite } from "./types.ts";

export const providerOAuthTokenImports = defineSuite({
  tag: "Provider OAuth token imports",
  async run(ctx) {
    const { client, other } = ctx;
    const mine = await oauthDeployment(ctx, client, "token imports, mine");
    const theirs = await oauthDeployment(ctx, other, "token imports, theirs");
    const collection = "/provider-oauth/token-imports";
    const itemPath = "/provider-oauth/token-imports/{take_in_id}";
    const token = { access_token: "contract-access-token-not-real" };

    // createProviderOAuthTokenImport
    const created = await ctx.ok(
      "createProviderOAuthTokenImport",
      201,
      client.POST(collection, {
        body: {
          ...token,
          server_deployment_id: mine.path.provider_deployment_id,
          note: "Made by the contract tests",
          metadata: { team: "qa" },
          expires_at: new Date(Date.now() + 3_600_000).toISOString(),
          id_token: "contract.id.token",
          scope: "repo",
          token_type: "Bearer",
        },
      }),
    );
    await ctx.ok(
      "createProviderOAuthTokenImport",
      201,
      client.POST(collection, { body: { ...token, connection_id: created.connection_id } }),
      { label: "201 into an existing connection" },
    );
    await ctx.check(
      "createProviderOAuthTokenImport",
      400,
      client.POST(collection, {
        body: {
          ...token,
          server_deployment_id: mine.path.provider_deployment_id,
          connection_id: created.connection_id,
        },
      }),
      { code: "bad_request", label: "400 both server_deployment_id and connection_id" },
    );
    await ctx.check("createProviderOAuthTokenImport", 400, client.POST(collection, { body: token }), {
      code: "bad_request",
      label: "400 neither server_deployment_id nor connection_id",
    });
    await ctx.notFound("createProviderOAuthTokenImport", {}, "unknown deployment", {
      ...token,
      server_deployment_id: ctx.unknownId("provider_deployment_id"),
    });
    await ctx.notFound("createProviderOAuthTokenImport", {}, "another tenant's deployment", {
      ...token,
      server_deployment_id: theirs.path.provider_deployment_id,
    });
    await ctx.standardErrors("createProviderOAuthTokenImport");
    const theirImport = await ctx.ok(
      "createProviderOAuthTokenImport",
      201,
      other.POST(collection, { body: { ...token, server_deployment_id: theirs.path.provider_deployment_id } }),
      { label: "201 as the other tenant" },
    );

    // listProviderOAuthTokenImports
    await ctx.ok("listProviderOAuthTokenImports", 200, client.GET(collection, { params: { query: { limit: 1 } } }));
    await ctx.standardErrors("listProviderOAuthTokenImports");

    // getProviderOAuthTokenImport
    const item = { take_in_id: created.id };
    const unknownItem = { take_in_id: ctx.unknownId("take_in_id") };
    const theirItem = { take_in_id: theirImport.id };
    await ctx.ok("getProviderOAuthTokenImport", 200, client.GET(itemPath, { params: { path: item } }));
    await ctx.notFound("getProviderOAuthTokenImport", unknownItem, "unknown id");
    await ctx.notFound("getProviderOAuthTokenImport", theirItem, "another tenant's import");
    await ctx.standardErrors("getProviderOAuthTokenImport", item);

    // updateProviderOAuthTokenImport: the first import was revoked by the second, so it is a 409.
    const latest = await ctx.ok(
      "createProviderOAuthTokenImport",
      201,
      client.POST(collection, { body: { ...token, server_deployment_id: mine.path.provider_deployment_id } }),
      { label: "201 a fresh connection to update" },
    );
    await ctx.ok(
      "updateProviderOAuthTokenImport",
      200,
      client.PATCH(itemPath, {
        params: { path: { take_in_id: latest.id } },
        body: { access_token: "contract-replacement-token", note: null, metadata: null, scope: null },
      }),
    );
    await ctx.check(
      "updateProviderOAuthTokenImport",
      409,
      client.PATCH(itemPath, { params: { path: item }, body: { note: "x" } }),
      { code: "conflict", label: "409 revoked import" },
    );
    await ctx.notFound("updateProviderOAuthTokenImport", unknownItem, "unknown id", { note: "x" });
    await ctx.notFound("updateProviderOAuthTokenImport", theirItem, "another tenant's import", { note: "x" });
    await ctx.standardErrors("updateProviderOAuthTokenImport", { take_in_id: latest.id });
  },
});
