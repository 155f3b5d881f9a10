import { oauthDeployment } from "./provider-oauth-setups.ts";
import { defineSuite } from "./types.ts";

export const providerSetupSessions = defineSuite({
  tag: "Provider setup sessions",
  async run(ctx) {
    const { client, other } = ctx;
    const mine = await oauthDeployment(ctx, client, "setup sessions, mine");
    const theirs = await oauthDeployment(ctx, other, "setup sessions, theirs");
    const unknownDeployment = { provider_deployment_id: ctx.unknownId("provider_deployment_id") };
    const collection = "/provider-deployments/{provider_deployment_id}/setup-sessions";
    const itemPath = "/provider-deployments/{provider_deployment_id}/setup-sessions/{provider_setup_session_id}";
    const body = { providerAuthMethodId: mine.oauthMethodId };

    // createProviderSetupSession
    const session = await ctx.ok(
      "createProviderSetupSession",
      201,
      client.POST(collection, {
        params: { path: mine.path },
        body: {
          ...body,
          providerAuthCredentialsId: mine.credentialsId,
          redirectUrl: "https://app.example.test/done",
          name: "Contract session",
          description: "Made by the contract tests",
          metadata: { team: "qa" },
        },
      }),
    );
    if (mine.tokenMethodId) {
      await ctx.ok(
        "createProviderSetupSession",
        201,
        client.POST(collection, { params: { path: mine.path }, body: { providerAuthMethodId: mine.tokenMethodId } }),
        { label: "201 token auth method" },
      );
      await ctx.check(
        "createProviderSetupSession",
        400,
        client.POST(collection, {
          params: { path: mine.path },
          body: { providerAuthMethodId: mine.tokenMethodId, providerAuthCredentialsId: mine.credentialsId },
        }),
        { code: "invalid_data", label: "400 credentials with a token method" },
      );
    }
    await ctx.notFound("createProviderSetupSession", unknownDeployment, "unknown deployment", body);
    await ctx.notFound("createProviderSetupSession", theirs.path, "another tenant's deployment", body);
    await ctx.notFound("createProviderSetupSession", mine.path, "unknown auth method", {
      providerAuthMethodId: ctx.unknownId("provider_deployment_id").replace(/^pde_/, "pam_"),
    });
    await ctx.standardErrors("createProviderSetupSession", mine.path);
    const theirSession = await ctx.ok(
      "createProviderSetupSession",
      201,
      other.POST(collection, { params: { path: theirs.path }, body: { providerAuthMethodId: theirs.oauthMethodId } }),
      { label: "201 as the other tenant" },
    );

    // listProviderSetupSessions
    await ctx.ok(
      "listProviderSetupSessions",
      200,
      client.GET(collection, {
        params: {
          path: mine.path,
          query: { limit: 1, status: "pending", provider_auth_method_id: [mine.oauthMethodId] },
        },
      }),
    );
    await ctx.notFound("listProviderSetupSessions", unknownDeployment, "unknown deployment");
    await ctx.notFound("listProviderSetupSessions", theirs.path, "another tenant's deployment");
    await ctx.standardErrors("listProviderSetupSessions", mine.path);

    // getProviderSetupSession
    const item = { ...mine.path, provider_setup_session_id: session.id };
    const unknownItem = { ...mine.path, provider_setup_session_id: ctx.unknownId("provider_setup_session_id") };
    const theirItem = { ...theirs.path, provider_setup_session_id: theirSession.id };
    await ctx.ok("getProviderSetupSession", 200, client.GET(itemPath, { params: { path: item } }));
    await ctx.notFound("getProviderSetupSession", unknownItem, "unknown id");
    await ctx.notFound("getProviderSetupSession", theirItem, "another tenant's session");
    await ctx.standardErrors("getProviderSetupSession", item);

    // updateProviderSetupSession
    await ctx.ok(
      "updateProviderSetupSession",
      200,
      client.PATCH(itemPath, { params: { path: item }, body: { name: null, description: null, metadata: null } }),
    );
    await ctx.notFound("updateProviderSetupSession", unknownItem, "unknown id", { name: "x" });
    await ctx.notFound("updateProviderSetupSession", theirItem, "another tenant's session", { name: "x" });
    await ctx.standardErrors("updateProviderSetupSession", item);

    // deleteProviderSetupSession
    await ctx.ok("deleteProviderSetupSession", 200, client.DELETE(itemPath, { params: { path: item } }));
    await ctx.notFound("deleteProviderSetupSession", item, "already deleted");
    await ctx.notFound("deleteProviderSetupSession", theirItem, "another tenant's session");
    await ctx.standardErrors("deleteProviderSetupSession", item);
  },
});
