import type { ToolplaneClient } from "@toolplane/client";
import type { SuiteContext } from "../context.ts";
import { checkMisses, type Miss } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

/** Nothing listens here; the contract server runs no deployment job runner, so versions stay `queued`. */
export const CONTRACT_REMOTE = { type: "remote" as const, remote_url: "http://127.0.0.1:9/mcp" };

/** A remote custom provider made by `who`, with its environments' ids. */
export async function customProviderFixture(ctx: SuiteContext, who: ToolplaneClient, label: string) {
  const cp = await ctx.ok(
    "createCustomProvider",
    201,
    who.POST("/custom-providers", { body: { name: `Custom ${label}`, from: CONTRACT_REMOTE } }),
    { label: `201 custom provider (${label})` },
  );
  const env = (name: string) => cp.environments.find((e) => e.name === name)?.id ?? "";
  return { cp, path: { custom_provider_id: cp.id }, development: env("development"), production: env("production") };
}

/** Paths of custom providers a suite's operations must answer 404 for. */
export function customProviderMisses(ctx: SuiteContext, theirs: { custom_provider_id: string }): Miss[] {
  return [
    [{ custom_provider_id: ctx.unknownId("custom_provider_id") }, "unknown custom provider"],
    [theirs, "another tenant's custom provider"],
  ];
}

export const customProviders = defineSuite({
  tag: "Custom providers",
  async run(ctx) {
    const { client, other } = ctx;

    // createCustomProvider
    const mine = await customProviderFixture(ctx, client, "remote");
    await ctx.ok(
      "createCustomProvider",
      201,
      client.POST("/custom-providers", {
        body: {
          name: "Contract function",
          description: "Made by the contract tests",
          metadata: { env: "qa" },
          from: {
            type: "function",
            runtime: "node20",
            files: [{ path: "index.mjs", content: "process.exit(0);\n" }],
            timeout_ms: 5000,
            memory_mb: 64,
          },
          config: {
            schema: { type: "object", properties: { token: { type: "string" } } },
            transformer: '{"env":{"TOKEN":"{{config.token}}"}}',
          },
        },
      }),
      { label: "201 function with config" },
    );
    await ctx.ok(
      "createCustomProvider",
      201,
      client.POST("/custom-providers", {
        body: {
          name: "Contract container",
          from: { type: "container", image_ref: "ghcr.io/acme/mcp:1", username: "bot", password: "pw-contract" },
        },
      }),
      { label: "201 container with registry credentials" },
    );
    await ctx.check(
      "createCustomProvider",
      400,
      client.POST("/custom-providers", {
        body: { name: "Bad transformer", from: CONTRACT_REMOTE, config: { schema: {}, transformer: "not json" } },
      }),
      { code: "invalid_data", label: "400 transformer not JSON" },
    );
    await ctx.check(
      "createCustomProvider",
      400,
      client.POST("/custom-providers", {
        body: {
          name: "No entrypoint",
          from: { type: "function", runtime: "node20", files: [{ path: "main.mjs", content: "" }] },
        },
      }),
      { code: "invalid_data", label: "400 entrypoint not among files" },
    );
    await ctx.standardErrors("createCustomProvider");
    const theirs = await customProviderFixture(ctx, other, "other tenant");
    const misses = customProviderMisses(ctx, theirs.path);

    // listCustomProviders
    await ctx.ok(
      "listCustomProviders",
      200,
      client.GET("/custom-providers", {
        params: { query: { search: "custom", status: ["active"], type: ["remote", "function"], limit: 2 } },
      }),
    );
    await ctx.ok(
      "listCustomProviders",
      200,
      client.GET("/custom-providers", { params: { query: { ids: [mine.cp.id, theirs.cp.id], order: "desc" } } }),
      { label: "200 by ids (the other tenant's left out)" },
    );
    await ctx.check(
      "listCustomProviders",
      400,
      client.GET("/custom-providers", { params: { query: { type: ["lambda" as never] } } }),
      { code: "invalid_data", label: "400 unknown type" },
    );
    await ctx.standardErrors("listCustomProviders");

    // getCustomProvider
    await ctx.ok(
      "getCustomProvider",
      200,
      client.GET("/custom-providers/{custom_provider_id}", { params: { path: mine.path } }),
    );
    await checkMisses(ctx, "getCustomProvider", mine.path, misses);

    // updateCustomProvider
    await ctx.ok(
      "updateCustomProvider",
      200,
      client.PATCH("/custom-providers/{custom_provider_id}", {
        params: { path: mine.path },
        body: { name: "Renamed custom", description: null, metadata: { v: 2 }, status: "archived" },
      }),
    );
    await ctx.ok(
      "updateCustomProvider",
      200,
      client.PATCH("/custom-providers/{custom_provider_id}", {
        params: { path: mine.path },
        body: { status: "active" },
      }),
      { label: "200 reactivate" },
    );
    await ctx.check(
      "updateCustomProvider",
      400,
      client.PATCH("/custom-providers/{custom_provider_id}", {
        params: { path: mine.path },
        body: { status: "deleted" as never },
      }),
      { code: "invalid_data", label: "400 unknown status" },
    );
    await checkMisses(ctx, "updateCustomProvider", mine.path, misses, { name: "x" });
  },
});
