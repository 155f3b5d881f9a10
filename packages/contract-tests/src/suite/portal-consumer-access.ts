import { seedSessionTemplate } from "../seed.ts";
import { checkMisses } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const portalConsumerAccess = defineSuite({
  tag: "Portal consumer access",
  async run(ctx) {
    const { client, other } = ctx;
    const [a, b] = ctx.tenants;
    // Session templates have no API yet (sessions issue): seeded rows, one per tenant.
    const template = await seedSessionTemplate(ctx, a.instanceId, "Contract template");
    const theirTemplate = await seedSessionTemplate(ctx, b.instanceId, "Their template");

    const portal = await ctx.ok("createPortal", 201, client.POST("/portals", { body: { name: "Access portal" } }), {
      label: "201 portal for consumer access",
    });
    const theirPortal = await ctx.ok("createPortal", 201, other.POST("/portals", { body: { name: "Their portal" } }), {
      label: "201 portal for consumer access (other tenant)",
    });
    const mine = { portal_id: portal.id };
    const theirs = { portal_id: theirPortal.id };
    const unknownPortal = { portal_id: ctx.unknownId("portal_id") };
    const grant = (templateId: string, group = "cgr_contract") => ({
      consumer_group_id: group,
      access: { type: "server_deployment_template" as const, server_deployment_template_id: templateId },
    });

    // createPortalConsumerAccess
    const access = await ctx.ok(
      "createPortalConsumerAccess",
      201,
      client.POST("/portals/{portal_id}/consumer-access", { params: { path: mine }, body: grant(template) }),
    );
    await ctx.check(
      "createPortalConsumerAccess",
      409,
      client.POST("/portals/{portal_id}/consumer-access", { params: { path: mine }, body: grant(template) }),
      { code: "conflict", label: "409 same group and template twice" },
    );
    await ctx.notFound(
      "createPortalConsumerAccess",
      mine,
      "unknown session template",
      grant(ctx.unknownId("session_template_id")),
    );
    await ctx.notFound("createPortalConsumerAccess", mine, "another tenant's session template", grant(theirTemplate));
    await checkMisses(
      ctx,
      "createPortalConsumerAccess",
      mine,
      [
        [unknownPortal, "unknown portal"],
        [theirs, "another tenant's portal"],
      ],
      grant(template),
    );
    const theirAccess = await ctx.ok(
      "createPortalConsumerAccess",
      201,
      other.POST("/portals/{portal_id}/consumer-access", { params: { path: theirs }, body: grant(theirTemplate) }),
      { label: "201 as the other tenant" },
    );

    // listPortalConsumerAccess
    await ctx.ok(
      "listPortalConsumerAccess",
      200,
      client.GET("/portals/{portal_id}/consumer-access", { params: { path: mine } }),
    );
    await ctx.ok(
      "listPortalConsumerAccess",
      200,
      client.GET("/portals/{portal_id}/consumer-access", {
        params: {
          path: mine,
          query: { consumer_group_id: ["cgr_contract"], type: ["server_deployment_template"], limit: 1, order: "desc" },
        },
      }),
      { label: "200 filtered" },
    );
    await checkMisses(ctx, "listPortalConsumerAccess", mine, [
      [unknownPortal, "unknown portal"],
      [theirs, "another tenant's portal"],
    ]);

    // getPortalConsumerAccess
    const item = { ...mine, consumer_access_id: access.id };
    await ctx.ok(
      "getPortalConsumerAccess",
      200,
      client.GET("/portals/{portal_id}/consumer-access/{consumer_access_id}", { params: { path: item } }),
    );
    await checkMisses(ctx, "getPortalConsumerAccess", item, [
      [{ ...mine, consumer_access_id: ctx.unknownId("consumer_access_id") }, "unknown id"],
      [{ ...theirs, consumer_access_id: theirAccess.id }, "another tenant's access"],
      [{ ...mine, consumer_access_id: theirAccess.id }, "another tenant's access id on my portal"],
    ]);

    // deletePortalConsumerAccess
    await ctx.ok(
      "deletePortalConsumerAccess",
      200,
      client.DELETE("/portals/{portal_id}/consumer-access/{consumer_access_id}", { params: { path: item } }),
    );
    await checkMisses(ctx, "deletePortalConsumerAccess", item, [
      [item, "already deleted"],
      [{ ...theirs, consumer_access_id: theirAccess.id }, "another tenant's access"],
    ]);
  },
});
