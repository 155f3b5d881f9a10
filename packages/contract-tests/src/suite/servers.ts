import { catalogServerId, seedOwnServer } from "../seed.ts";
import { checkMisses } from "./fixtures.ts";
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
    await checkMisses(ctx, "getServer", catalog, [
      [{ server_id: ctx.unknownId("server_id") }, "unknown id"],
      [theirs, "another tenant's server"],
    ]);
  },
});
