import { catalogProvider } from "../seed.ts";
import { customProviderFixture } from "./custom-providers.ts";
import { checkMisses } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const providerVersions = defineSuite({
  tag: "Provider versions",
  async run(ctx) {
    const { client, other } = ctx;
    const { providerId, currentVersionId } = await catalogProvider(ctx);
    const mine = { provider_id: providerId };
    const theirs = await customProviderFixture(ctx, other, "provider versions, other tenant");
    const theirPath = { provider_id: theirs.cp.provider.id };
    const theirVersions = await ctx.ok(
      "listProviderVersions",
      200,
      other.GET("/providers/{provider_id}/versions", { params: { path: theirPath } }),
      { label: "200 the other tenant's custom provider versions" },
    );
    const theirVersion = theirVersions.items[0]?.id ?? ctx.unknownId("provider_version_id");
    const unknownProvider = { provider_id: ctx.unknownId("provider_id") };

    // listProviderVersions
    const page = await ctx.ok(
      "listProviderVersions",
      200,
      client.GET("/providers/{provider_id}/versions", { params: { path: mine, query: { limit: 1 } } }),
      { label: "200 first page" },
    );
    await ctx.ok(
      "listProviderVersions",
      200,
      client.GET("/providers/{provider_id}/versions", {
        params: { path: mine, query: { order: "desc", after: page.items[0]?.id ?? currentVersionId } },
      }),
      { label: "200 desc after an id" },
    );
    await ctx.check(
      "listProviderVersions",
      400,
      client.GET("/providers/{provider_id}/versions", { params: { path: mine, query: { cursor: "nope" } } }),
      { code: "bad_request", label: "400 malformed cursor" },
    );
    await checkMisses(ctx, "listProviderVersions", mine, [
      [unknownProvider, "unknown provider"],
      [theirPath, "another tenant's custom provider"],
    ]);

    // getProviderVersion
    const version = { ...mine, provider_version_id: currentVersionId };
    await ctx.ok(
      "getProviderVersion",
      200,
      client.GET("/providers/{provider_id}/versions/{provider_version_id}", { params: { path: version } }),
    );
    await checkMisses(ctx, "getProviderVersion", version, [
      [{ ...mine, provider_version_id: ctx.unknownId("provider_version_id") }, "unknown version"],
      [{ ...unknownProvider, provider_version_id: currentVersionId }, "unknown provider"],
      [{ ...theirPath, provider_version_id: theirVersion }, "another tenant's custom provider version"],
      [{ ...mine, provider_version_id: theirVersion }, "another tenant's version under a catalog provider"],
    ]);
  },
});
