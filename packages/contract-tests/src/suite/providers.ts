import { catalogProvider } from "../seed.ts";
import { customProviderFixture } from "./custom-providers.ts";
import { checkMisses, expectAbsent } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const providers = defineSuite({
  tag: "Providers",
  async run(ctx) {
    const { client, other } = ctx;
    const { providerId } = await catalogProvider(ctx);
    const mine = await customProviderFixture(ctx, client, "provider catalog");
    const theirs = await customProviderFixture(ctx, other, "provider catalog, other tenant");
    const theirProvider = theirs.cp.provider.id;

    // listProviders
    const all = await ctx.ok("listProviders", 200, client.GET("/providers", { params: { query: { limit: 100 } } }), {
      label: "200 catalog and own custom providers",
    });
    expectAbsent(all, theirProvider, "listProviders");
    const page = await ctx.ok("listProviders", 200, client.GET("/providers", { params: { query: { limit: 1 } } }), {
      label: "200 first page",
    });
    await ctx.ok(
      "listProviders",
      200,
      client.GET("/providers", { params: { query: { limit: 1, cursor: page.pagination.next_cursor ?? "" } } }),
      { label: "200 next page by cursor" },
    );
    await ctx.ok(
      "listProviders",
      200,
      client.GET("/providers", {
        params: { query: { search: "Custom", type: ["custom"], publisher: [mine.cp.provider.publisher.slug] } },
      }),
      { label: "200 search, type and publisher filters" },
    );
    const byId = await ctx.ok(
      "listProviders",
      200,
      client.GET("/providers", { params: { query: { id: [providerId, theirProvider], order: "desc" } } }),
      { label: "200 by id (the other tenant's left out)" },
    );
    expectAbsent(byId, theirProvider, "listProviders by id");
    await ctx.check(
      "listProviders",
      400,
      client.GET("/providers", { params: { query: { type: ["builtin" as never] } } }),
      { code: "invalid_data", label: "400 unknown type" },
    );
    await ctx.check("listProviders", 400, client.GET("/providers", { params: { query: { cursor: "not-a-cursor" } } }), {
      code: "bad_request",
      label: "400 malformed cursor",
    });
    await ctx.check(
      "listProviders",
      400,
      client.GET("/providers", { params: { query: { after: providerId, before: providerId } } }),
      { code: "bad_request", label: "400 after and before" },
    );
    await ctx.standardErrors("listProviders");

    // getProvider
    await ctx.ok(
      "getProvider",
      200,
      client.GET("/providers/{provider_id}", { params: { path: { provider_id: providerId } } }),
      {
        label: "200 catalog provider",
      },
    );
    await ctx.ok(
      "getProvider",
      200,
      client.GET("/providers/{provider_id}", { params: { path: { provider_id: mine.cp.provider.id } } }),
      { label: "200 own custom provider" },
    );
    await checkMisses(ctx, "getProvider", { provider_id: providerId }, [
      [{ provider_id: ctx.unknownId("provider_id") }, "unknown id"],
      [{ provider_id: theirProvider }, "another tenant's custom provider"],
    ]);
  },
});
