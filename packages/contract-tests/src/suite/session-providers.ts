import { deploymentRef, deploymentWithConfig } from "./sessions.ts";
import { defineSuite } from "./types.ts";

export const sessionProviders = defineSuite({
  tag: "Session providers",
  async run(ctx) {
    const { client, other } = ctx;
    const mine = await deploymentWithConfig(ctx, client, "session providers");
    const second = await deploymentWithConfig(ctx, client, "session providers, second");
    const theirs = await deploymentWithConfig(ctx, other, "session providers, other tenant");
    const entry = { provider_deployment: deploymentRef(mine.deployment.id) };
    const session = await ctx.ok("createSession", 201, client.POST("/sessions", { body: { providers: entry } }), {
      label: "201 session for providers",
    });
    const ended = await ctx.ok("createSession", 201, client.POST("/sessions", { body: { providers: entry } }), {
      label: "201 session to end",
    });
    await ctx.ok(
      "deleteSession",
      200,
      client.DELETE("/sessions/{session_id}", { params: { path: { session_id: ended.id } } }),
      {
        label: "200 end a session",
      },
    );
    const theirSession = await ctx.ok(
      "createSession",
      201,
      other.POST("/sessions", { body: { providers: { provider_deployment: deploymentRef(theirs.deployment.id) } } }),
      { label: "201 session (other tenant)" },
    );
    const sessionPath = { session_id: session.id };
    const theirSessionPath = { session_id: theirSession.id };
    const unknownSession = { session_id: ctx.unknownId("session_id") };

    // createSessionProvider
    const added = await ctx.ok(
      "createSessionProvider",
      201,
      client.POST("/sessions/{session_id}/providers", {
        params: { path: sessionPath },
        body: {
          provider_deployment: deploymentRef(second.deployment.id),
          provider_config: { type: "reference", provider_config_id: second.config.id },
          tool_filters: { tool_keys: ["echo"] },
          name: "Contract provider",
        },
      }),
    );
    await ctx.check(
      "createSessionProvider",
      400,
      client.POST("/sessions/{session_id}/providers", {
        params: { path: sessionPath },
        body: { ...entry, provider_config: { type: "reference", provider_config_id: second.config.id } },
      }),
      { code: "invalid_data", label: "400 config of another deployment" },
    );
    await ctx.check(
      "createSessionProvider",
      404,
      client.POST("/sessions/{session_id}/providers", {
        params: { path: sessionPath },
        body: { provider_deployment: deploymentRef(theirs.deployment.id) },
      }),
      { code: "not_found", label: "404 another tenant's deployment" },
    );
    await ctx.check(
      "createSessionProvider",
      409,
      client.POST("/sessions/{session_id}/providers", { params: { path: { session_id: ended.id } }, body: entry }),
      { code: "conflict", label: "409 deleted session" },
    );
    await ctx.notFound("createSessionProvider", unknownSession, "unknown session", entry);
    await ctx.notFound("createSessionProvider", theirSessionPath, "another tenant's session", entry);
    await ctx.standardErrors("createSessionProvider", sessionPath);

    // listSessionProviders
    await ctx.ok(
      "listSessionProviders",
      200,
      client.GET("/sessions/{session_id}/providers", {
        params: { path: sessionPath, query: { limit: 1, status: "active", provider_id: [added.provider_id] } },
      }),
    );
    await ctx.notFound("listSessionProviders", unknownSession, "unknown session");
    await ctx.notFound("listSessionProviders", theirSessionPath, "another tenant's session");
    await ctx.standardErrors("listSessionProviders", sessionPath);

    // getSessionProvider
    const item = { ...sessionPath, session_provider_id: added.id };
    const unknown = { ...sessionPath, session_provider_id: ctx.unknownId("session_provider_id") };
    const theirItem = { ...theirSessionPath, session_provider_id: theirSession.provider_deployments[0]?.id ?? "" };
    await ctx.ok(
      "getSessionProvider",
      200,
      client.GET("/sessions/{session_id}/providers/{session_provider_id}", { params: { path: item } }),
    );
    await ctx.notFound("getSessionProvider", unknown, "unknown id");
    await ctx.notFound("getSessionProvider", theirItem, "another tenant's provider");
    await ctx.standardErrors("getSessionProvider", item);

    // updateSessionProvider
    await ctx.ok(
      "updateSessionProvider",
      200,
      client.PATCH("/sessions/{session_id}/providers/{session_provider_id}", {
        params: { path: item },
        body: { name: "Renamed provider", description: null, metadata: null },
      }),
    );
    await ctx.notFound("updateSessionProvider", unknown, "unknown id", { name: "x" });
    await ctx.notFound("updateSessionProvider", theirItem, "another tenant's provider", { name: "x" });
    await ctx.standardErrors("updateSessionProvider", item);

    // deleteSessionProvider
    await ctx.ok(
      "deleteSessionProvider",
      200,
      client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", { params: { path: item } }),
    );
    await ctx.check(
      "deleteSessionProvider",
      409,
      client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", { params: { path: item } }),
      { code: "conflict", label: "409 already removed" },
    );
    await ctx.notFound("deleteSessionProvider", unknown, "unknown id");
    await ctx.notFound("deleteSessionProvider", theirItem, "another tenant's provider");
    await ctx.standardErrors("deleteSessionProvider", item);
  },
});
