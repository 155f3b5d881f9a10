import type { ToolplaneClient } from "@toolplane/client";
import type { SuiteContext } from "../context.ts";
import { catalogServerId } from "../seed.ts";
import { customProviderFixture } from "./custom-providers.ts";
import { checkMisses, expectAbsent } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

/** The server a custom provider made by `who` gets (found through its provider in the server's database). */
async function customServerId(ctx: SuiteContext, who: ToolplaneClient, label: string): Promise<string> {
  const { cp } = await customProviderFixture(ctx, who, label);
  const row = await ctx.db
    .selectFrom("servers")
    .select("id")
    .where("provider_id", "=", cp.provider.id)
    .executeTakeFirstOrThrow();
  return row.id;
}

export const servers = defineSuite({
  tag: "Servers",
  async run(ctx) {
    const { client } = ctx;
    // Servers come from the catalog (loaded at start) and from custom providers (one each, owned by the instance).
    const catalog = { server_id: await catalogServerId(ctx) };
    const theirs = { server_id: await customServerId(ctx, ctx.other, "server, other tenant") };
    const own = { server_id: await customServerId(ctx, client, "server") };

    await ctx.ok("getServer", 200, client.GET("/servers/{server_id}", { params: { path: catalog } }), {
      label: "200 catalog server",
    });
    await ctx.ok("getServer", 200, client.GET("/servers/{server_id}", { params: { path: own } }), {
      label: "200 the instance's own server",
    });
    await ctx.ok("getServer", 200, ctx.other.GET("/servers/{server_id}", { params: { path: theirs } }), {
      label: "200 the other tenant's own server",
    });

    const all = await ctx.ok("listServers", 200, client.GET("/servers", { params: { query: { limit: 100 } } }), {
      label: "200 catalog and own servers",
    });
    expectAbsent(all, theirs.server_id, "listServers");
    const page = await ctx.ok("listServers", 200, client.GET("/servers", { params: { query: { limit: 1 } } }), {
      label: "200 first page",
    });
    await ctx.ok(
      "listServers",
      200,
      client.GET("/servers", { params: { query: { limit: 1, cursor: page.pagination.next_cursor ?? "" } } }),
      { label: "200 next page by cursor" },
    );
    await ctx.ok(
      "listServers",
      200,
      client.GET("/servers", { params: { query: { order: "desc", before: own.server_id } } }),
      {
        label: "200 desc before an id",
      },
    );
    await ctx.check("listServers", 400, client.GET("/servers", { params: { query: { cursor: "not-a-cursor" } } }), {
      code: "bad_request",
      label: "400 malformed cursor",
    });
    await ctx.standardErrors("listServers");

    await checkMisses(ctx, "getServer", catalog, [
      [{ server_id: ctx.unknownId("server_id") }, "unknown id"],
      [theirs, "another tenant's server"],
    ]);
  },
});
