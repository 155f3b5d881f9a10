import type { ToolplaneClient } from "@toolplane/client";
import type { SuiteContext } from "../context.ts";
import { catalogProvider } from "../seed.ts";
import { defineSuite } from "./types.ts";

export const deploymentRef = (id: string) => ({ type: "reference" as const, provider_deployment_id: id });

/** A deployment of a catalog provider with an inline config, created through the API as `who`. */
export async function deploymentWithConfig(ctx: SuiteContext, who: ToolplaneClient, label: string) {
  const { providerId } = await catalogProvider(ctx);
  const deployment = await ctx.ok(
    "createProviderDeployment",
    201,
    who.POST("/provider-deployments", { body: { name: `Deployment (${label})`, provider_id: providerId } }),
    { label: `201 deployment (${label})` },
  );
  const config = await ctx.ok(
    "createProviderConfig",
    201,
    who.POST("/provider-deployments/{provider_deployment_id}/configs", {
      params: { path: { provider_deployment_id: deployment.id } },
      body: { name: `Config (${label})`, config: { type: "inline", data: {} } },
    }),
    { label: `201 config (${label})` },
  );
  return { deployment, config };
}

export const sessions = defineSuite({
  tag: "Sessions",
  async run(ctx) {
    const { client, other } = ctx;
    const mine = await deploymentWithConfig(ctx, client, "sessions");
    const second = await deploymentWithConfig(ctx, client, "sessions, second");
    const theirs = await deploymentWithConfig(ctx, other, "sessions, other tenant");
    const entry = { provider_deployment: deploymentRef(mine.deployment.id) };

    // createSession
    const session = await ctx.ok(
      "createSession",
      201,
      client.POST("/sessions", {
        body: {
          name: "Contract session",
          metadata: { env: "qa" },
          providers: [
            { ...entry, provider_config: { type: "reference", provider_config_id: mine.config.id } },
            { provider_deployment: deploymentRef(second.deployment.id), tool_filters: { tool_keys: ["echo"] } },
          ],
        },
      }),
    );
    await ctx.ok("createSession", 201, client.POST("/sessions", { body: { providers: entry } }), {
      label: "201 single entry",
    });
    await ctx.check(
      "createSession",
      400,
      client.POST("/sessions", {
        body: {
          providers: { ...entry, provider_config: { type: "reference", provider_config_id: second.config.id } },
        },
      }),
      { code: "invalid_data", label: "400 config of another deployment" },
    );
    await ctx.check("createSession", 400, client.POST("/sessions", { body: { providers: [{}] } }), {
      code: "invalid_data",
      label: "400 entry without deployment or template",
    });
    await ctx.check(
      "createSession",
      404,
      client.POST("/sessions", { body: { providers: { provider_deployment: deploymentRef(theirs.deployment.id) } } }),
      { code: "not_found", label: "404 another tenant's deployment" },
    );
    await ctx.check(
      "createSession",
      404,
      client.POST("/sessions", { body: { providers: { session_template_id: ctx.unknownId("session_template_id") } } }),
      { code: "not_found", label: "404 unknown template" },
    );
    await ctx.standardErrors("createSession");
    const theirSession = await ctx.ok(
      "createSession",
      201,
      other.POST("/sessions", { body: { providers: { provider_deployment: deploymentRef(theirs.deployment.id) } } }),
      { label: "201 as the other tenant" },
    );

    // listSessions
    await ctx.ok("listSessions", 200, client.GET("/sessions", { params: { query: { limit: 1 } } }));
    await ctx.ok(
      "listSessions",
      200,
      client.GET("/sessions", {
        params: { query: { status: ["active"], provider_deployment_id: [mine.deployment.id], order: "desc" } },
      }),
      { label: "200 filtered" },
    );
    await ctx.standardErrors("listSessions");

    // getSession
    const item = { session_id: session.id };
    const unknown = { session_id: ctx.unknownId("session_id") };
    const theirItem = { session_id: theirSession.id };
    await ctx.ok("getSession", 200, client.GET("/sessions/{session_id}", { params: { path: item } }));
    await ctx.notFound("getSession", unknown, "unknown id");
    await ctx.notFound("getSession", theirItem, "another tenant's session");
    await ctx.standardErrors("getSession", item);

    // updateSession
    await ctx.ok(
      "updateSession",
      200,
      client.PATCH("/sessions/{session_id}", {
        params: { path: item },
        body: { name: "Renamed session", description: null, metadata: null },
      }),
    );
    await ctx.notFound("updateSession", unknown, "unknown id", { name: "x" });
    await ctx.notFound("updateSession", theirItem, "another tenant's session", { name: "x" });
    await ctx.standardErrors("updateSession", item);

    // deleteSession
    await ctx.ok("deleteSession", 200, client.DELETE("/sessions/{session_id}", { params: { path: item } }));
    await ctx.check("deleteSession", 409, client.DELETE("/sessions/{session_id}", { params: { path: item } }), {
      code: "conflict",
      label: "409 already deleted",
    });
    await ctx.check(
      "updateSession",
      409,
      client.PATCH("/sessions/{session_id}", { params: { path: item }, body: { name: "Too late" } }),
      { code: "conflict", label: "409 deleted session" },
    );
    await ctx.notFound("deleteSession", unknown, "unknown id");
    await ctx.notFound("deleteSession", theirItem, "another tenant's session");
    await ctx.standardErrors("deleteSession", item);
  },
});
