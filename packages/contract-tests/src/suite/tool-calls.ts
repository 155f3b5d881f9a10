import type { ToolplaneClient } from "@toolplane/client";
import type { SuiteContext } from "../context.ts";
import { catalogProviderId } from "../seed.ts";
import { startMcpToolCalls } from "./mcp-tool-calls.ts";
import { defineSuite } from "./types.ts";

/**
 * A session with one provider, the built-in `everything` MCP server (stdio, shipped with the server), created
 * through the API as `who`: its tools are real, so the tool calls below reach a real upstream.
 */
async function everythingSession(ctx: SuiteContext, who: ToolplaneClient, label: string) {
  const providerId = await catalogProviderId(ctx, "everything");
  const deployment = await ctx.ok(
    "createProviderDeployment",
    201,
    who.POST("/provider-deployments", { body: { name: `Everything (${label})`, provider_id: providerId } }),
    { label: `201 deployment (${label})` },
  );
  return ctx.ok(
    "createSession",
    201,
    who.POST("/sessions", {
      body: { providers: { provider_deployment: { type: "reference", provider_deployment_id: deployment.id } } },
    }),
    { label: `201 session (${label})` },
  );
}

export const toolCalls = defineSuite({
  tag: "Tool calls",
  async run(ctx) {
    // Calls over MCP first: their task works at its upstream while the API's calls are checked.
    const overMcp = await startMcpToolCalls(ctx);
    try {
      await checkApiToolCalls(ctx);
      await overMcp.checkRecords();
    } finally {
      await overMcp.close();
    }
  },
});

/** Every operation of the tag, with calls made through the API (`POST /sessions/{session_id}/tool-calls`). */
async function checkApiToolCalls(ctx: SuiteContext) {
  const { client, other } = ctx;
  const session = await everythingSession(ctx, client, "tool calls");
  const theirSession = await everythingSession(ctx, other, "tool calls, other tenant");
  const mine = { session_id: session.id };
  const theirs = { session_id: theirSession.id };
  const unknownSession = { session_id: ctx.unknownId("session_id") };
  const body = { tool_id: "echo", input: { message: "contract" } };

  // createSessionToolCall
  const call = await ctx.ok(
    "createSessionToolCall",
    201,
    client.POST("/sessions/{session_id}/tool-calls", {
      params: { path: mine },
      body: { ...body, metadata: { suite: "contract" } },
    }),
  );
  await ctx.check(
    "createSessionToolCall",
    201,
    client.POST("/sessions/{session_id}/tool-calls", {
      params: { path: mine },
      body: { tool_id: "get-sum", input: { a: "not a number" } },
    }),
    { label: "201 failed call (the upstream rejects the input)" },
  );
  await ctx.check(
    "createSessionToolCall",
    400,
    client.POST("/sessions/{session_id}/tool-calls", {
      params: { path: mine },
      body: { tool_id: "echo" } as never,
    }),
    { code: "invalid_data", label: "400 without input" },
  );
  await ctx.check(
    "createSessionToolCall",
    404,
    client.POST("/sessions/{session_id}/tool-calls", {
      params: { path: mine },
      body: { tool_id: "no-such-tool", input: {} },
    }),
    { code: "not_found", label: "404 unknown tool key" },
  );
  await ctx.notFound("createSessionToolCall", unknownSession, "unknown session", body);
  await ctx.notFound("createSessionToolCall", theirs, "another tenant's session", body);
  const archived = await everythingSession(ctx, client, "archived");
  // The API has no archive operation yet: the status is set in the database.
  await ctx.db.updateTable("sessions").set({ status: "archived" }).where("id", "=", archived.id).execute();
  await ctx.check(
    "createSessionToolCall",
    409,
    client.POST("/sessions/{session_id}/tool-calls", { params: { path: { session_id: archived.id } }, body }),
    { code: "conflict", label: "409 session not active" },
  );
  await ctx.standardErrors("createSessionToolCall", mine);
  const theirCall = await ctx.ok(
    "createSessionToolCall",
    201,
    other.POST("/sessions/{session_id}/tool-calls", { params: { path: theirs }, body }),
    { label: "201 as the other tenant" },
  );

  // listToolCalls
  await ctx.ok("listToolCalls", 200, client.GET("/tool-calls", { params: { query: { limit: 1 } } }));
  await ctx.ok(
    "listToolCalls",
    200,
    client.GET("/tool-calls", {
      params: { query: { tool_id: ["echo", "get-sum"], session_provider_id: [call.session_provider_id ?? ""] } },
    }),
    { label: "200 filtered" },
  );
  await ctx.standardErrors("listToolCalls");

  // getToolCall
  await ctx.ok(
    "getToolCall",
    200,
    client.GET("/tool-calls/{tool_call_id}", { params: { path: { tool_call_id: call.id } } }),
  );
  await ctx.notFound("getToolCall", { tool_call_id: ctx.unknownId("tool_call_id") }, "unknown id");
  await ctx.notFound("getToolCall", { tool_call_id: theirCall.id }, "another tenant's call");
  await ctx.standardErrors("getToolCall", { tool_call_id: call.id });

  // listSessionToolCalls
  await ctx.ok(
    "listSessionToolCalls",
    200,
    client.GET("/sessions/{session_id}/tool-calls", { params: { path: mine, query: { order: "desc" } } }),
  );
  await ctx.notFound("listSessionToolCalls", unknownSession, "unknown session");
  await ctx.notFound("listSessionToolCalls", theirs, "another tenant's session");
  await ctx.standardErrors("listSessionToolCalls", mine);

  // getSessionToolCall
  const item = { ...mine, tool_call_id: call.id };
  await ctx.ok(
    "getSessionToolCall",
    200,
    client.GET("/sessions/{session_id}/tool-calls/{tool_call_id}", { params: { path: item } }),
  );
  await ctx.notFound("getSessionToolCall", { ...mine, tool_call_id: ctx.unknownId("tool_call_id") }, "unknown id");
  await ctx.notFound("getSessionToolCall", { ...theirs, tool_call_id: theirCall.id }, "another tenant's call");
  await ctx.notFound(
    "getSessionToolCall",
    { session_id: archived.id, tool_call_id: call.id },
    "a call of another session",
  );
  await ctx.standardErrors("getSessionToolCall", item);
}
