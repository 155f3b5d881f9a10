import { checkMisses } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const portals = defineSuite({
  tag: "Portals",
  async run(ctx) {
    const { client, other } = ctx;

    // createPortal
    const portal = await ctx.ok(
      "createPortal",
      201,
      client.POST("/portals", { body: { name: "Contract portal", description: "Made by the contract tests" } }),
    );
    await ctx.check("createPortal", 400, client.POST("/portals", { body: { name: "" } }), {
      code: "invalid_data",
      label: "400 empty name",
    });
    await ctx.standardErrors("createPortal");
    const theirs = await ctx.ok("createPortal", 201, other.POST("/portals", { body: { name: "Theirs" } }), {
      label: "201 as the other tenant",
    });
    const mine = { portal_id: portal.id };
    const theirPath = { portal_id: theirs.id };
    const unknown = { portal_id: ctx.unknownId("portal_id") };

    // listPortals
    const page = await ctx.ok("listPortals", 200, client.GET("/portals", { params: { query: { limit: 1 } } }), {
      label: "200 first page",
    });
    await ctx.ok(
      "listPortals",
      200,
      client.GET("/portals", {
        params: { query: { order: "desc", cursor: page.pagination.next_cursor ?? undefined } },
      }),
      { label: "200 desc" },
    );
    await ctx.check("listPortals", 400, client.GET("/portals", { params: { query: { cursor: "not-a-cursor" } } }), {
      code: "bad_request",
      label: "400 malformed cursor",
    });
    await ctx.standardErrors("listPortals");

    // getPortal
    await ctx.ok("getPortal", 200, client.GET("/portals/{portal_id}", { params: { path: mine } }));
    await checkMisses(ctx, "getPortal", mine, [
      [unknown, "unknown id"],
      [theirPath, "another tenant's portal"],
    ]);

    // updatePortal
    await ctx.ok(
      "updatePortal",
      200,
      client.PATCH("/portals/{portal_id}", {
        params: { path: mine },
        body: { brand_name: "Contract brand", session_expiry_time_in_seconds: 3600, status: "archived" },
      }),
    );
    await ctx.ok(
      "updatePortal",
      200,
      client.PATCH("/portals/{portal_id}", {
        params: { path: mine },
        body: { brand_name: null, description: null, status: "active" },
      }),
      { label: "200 clearing fields" },
    );
    await ctx.check(
      "updatePortal",
      400,
      client.PATCH("/portals/{portal_id}", { params: { path: mine }, body: { session_expiry_time_in_seconds: 10 } }),
      { code: "invalid_data", label: "400 expiry below the minimum" },
    );
    await checkMisses(ctx, "updatePortal", mine, [
      [unknown, "unknown id"],
      [theirPath, "another tenant's portal"],
    ]);

    // deletePortal
    await ctx.ok("deletePortal", 200, client.DELETE("/portals/{portal_id}", { params: { path: mine } }));
    await checkMisses(ctx, "deletePortal", mine, [
      [mine, "already deleted"],
      [theirPath, "another tenant's portal"],
    ]);
  },
});
