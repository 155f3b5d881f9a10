import { CONTRACT_REMOTE, customProviderFixture, customProviderMisses } from "./custom-providers.ts";
import { checkMisses } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const customProviderVersions = defineSuite({
  tag: "Custom provider versions",
  async run(ctx) {
    const { client, other } = ctx;
    const mine = await customProviderFixture(ctx, client, "versions");
    const theirs = await customProviderFixture(ctx, other, "versions, other tenant");
    const misses = customProviderMisses(ctx, theirs.path);
    const body = { from: CONTRACT_REMOTE };

    // createCustomProviderVersion
    const v2 = await ctx.ok(
      "createCustomProviderVersion",
      201,
      client.POST("/custom-providers/{custom_provider_id}/versions", {
        params: { path: mine.path },
        body: {
          from: { ...CONTRACT_REMOTE, protocol: "sse" },
          config: {
            schema: { type: "object", properties: { key: { type: "string" } } },
            transformer: '{"headers":{"Authorization":"Bearer {{config.key}}"}}',
          },
        },
      }),
    );
    await ctx.check(
      "createCustomProviderVersion",
      400,
      client.POST("/custom-providers/{custom_provider_id}/versions", {
        params: { path: mine.path },
        body: { from: { type: "container", image_ref: "ghcr.io/acme/mcp:1" } },
      }),
      { code: "invalid_data", label: "400 from.type differs from the custom provider's" },
    );
    const archived = await customProviderFixture(ctx, client, "archived");
    await ctx.ok(
      "updateCustomProvider",
      200,
      client.PATCH("/custom-providers/{custom_provider_id}", {
        params: { path: archived.path },
        body: { status: "archived" },
      }),
      { label: "200 archive (for versions)" },
    );
    await ctx.check(
      "createCustomProviderVersion",
      409,
      client.POST("/custom-providers/{custom_provider_id}/versions", { params: { path: archived.path }, body }),
      { code: "conflict", label: "409 archived custom provider" },
    );
    await checkMisses(ctx, "createCustomProviderVersion", mine.path, misses, body);

    // listCustomProviderVersions
    await ctx.ok(
      "listCustomProviderVersions",
      200,
      client.GET("/custom-providers/{custom_provider_id}/versions", {
        params: { path: mine.path, query: { status: ["queued", "deploying"], ids: [v2.id], limit: 5 } },
      }),
    );
    await ctx.check(
      "listCustomProviderVersions",
      400,
      client.GET("/custom-providers/{custom_provider_id}/versions", {
        params: { path: mine.path, query: { status: ["done" as never] } },
      }),
      { code: "invalid_data", label: "400 unknown status" },
    );
    await checkMisses(ctx, "listCustomProviderVersions", mine.path, misses);

    // getCustomProviderVersion
    const item = { ...mine.path, custom_provider_version_id: v2.id };
    await ctx.ok(
      "getCustomProviderVersion",
      200,
      client.GET("/custom-providers/{custom_provider_id}/versions/{custom_provider_version_id}", {
        params: { path: item },
      }),
    );
    const theirVersions = await ctx.ok(
      "listCustomProviderVersions",
      200,
      other.GET("/custom-providers/{custom_provider_id}/versions", { params: { path: theirs.path } }),
      { label: "200 as the other tenant" },
    );
    await checkMisses(ctx, "getCustomProviderVersion", item, [
      [{ ...mine.path, custom_provider_version_id: ctx.unknownId("custom_provider_version_id") }, "unknown version"],
      [
        { ...mine.path, custom_provider_version_id: theirVersions.items[0]?.id ?? "" },
        "another tenant's version under my custom provider",
      ],
      [{ ...theirs.path, custom_provider_version_id: theirVersions.items[0]?.id ?? "" }, "another tenant's version"],
    ]);
  },
});
