import { catalogServerId, seedOwnServer } from "../seed.ts";
import { checkMisses, expectAbsent } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const servers = defineSuite({
  tag: "Servers",
  async run(ctx) {
    const { client } = ctx;
    // Servers come from the catalog (loaded at start); an instance's own servers come from custom providers,
    // which have no API yet, so the other tenant's server is a seeded copy of a catalog server.
    const catalog = { server_id: await catalogServerId(ctx) };
    const theirs = { server_id: await seedOwnServer(ctx, ctx.tenants[1].instanceId) };
    const own = { server_id: await seedOwnServer(ctx, ctx.tenants[0].instanceId) };

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
