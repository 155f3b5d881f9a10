import { checkMisses, portalPair } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const portalInvitations = defineSuite({
  tag: "Portal invitations",
  async run(ctx) {
    const { client } = ctx;
    const { mine, theirs, portalMisses } = await portalPair(ctx, "invitations");

    // createPortalInvitation
    const invitation = await ctx.ok(
      "createPortalInvitation",
      201,
      client.POST("/portals/{portal_id}/invitations", {
        params: { path: mine },
        body: { consumer_group_id: "contract-members", expires_in_seconds: 3600 },
      }),
    );
    await ctx.check(
      "createPortalInvitation",
      400,
      client.POST("/portals/{portal_id}/invitations", {
        params: { path: mine },
        body: { consumer_group_id: "contract-members", expires_in_seconds: 1 },
      }),
      { code: "invalid_data", label: "400 expiry below the minimum" },
    );
    await checkMisses(ctx, "createPortalInvitation", mine, portalMisses, { consumer_group_id: "g" });
    const archived = await ctx.ok(
      "createPortal",
      201,
      client.POST("/portals", { body: { name: "Archived invites" } }),
      {
        label: "201 portal to archive",
      },
    );
    await ctx.ok(
      "updatePortal",
      200,
      client.PATCH("/portals/{portal_id}", {
        params: { path: { portal_id: archived.id } },
        body: { status: "archived" },
      }),
      { label: "200 archive a portal" },
    );
    await ctx.check(
      "createPortalInvitation",
      409,
      client.POST("/portals/{portal_id}/invitations", {
        params: { path: { portal_id: archived.id } },
        body: { consumer_group_id: "g" },
      }),
      { code: "conflict", label: "409 archived portal" },
    );

    // listPortalInvitations
    await ctx.ok(
      "listPortalInvitations",
      200,
      client.GET("/portals/{portal_id}/invitations", { params: { path: mine } }),
    );
    await ctx.check(
      "listPortalInvitations",
      400,
      client.GET("/portals/{portal_id}/invitations", { params: { path: mine, query: { limit: 0 } } }),
      { code: "invalid_data", label: "400 limit 0" },
    );
    await checkMisses(ctx, "listPortalInvitations", mine, portalMisses);

    // getPortalInvitation
    const item = { ...mine, invitation_id: invitation.id };
    await ctx.ok(
      "getPortalInvitation",
      200,
      client.GET("/portals/{portal_id}/invitations/{invitation_id}", { params: { path: item } }),
    );
    await checkMisses(ctx, "getPortalInvitation", item, [
      [{ ...mine, invitation_id: ctx.unknownId("invitation_id") }, "unknown invitation"],
      [{ portal_id: theirs.id, invitation_id: invitation.id }, "another tenant's portal"],
    ]);

    // revokePortalInvitation
    await ctx.ok(
      "revokePortalInvitation",
      200,
      client.DELETE("/portals/{portal_id}/invitations/{invitation_id}", { params: { path: item } }),
    );
    await checkMisses(ctx, "revokePortalInvitation", item, [
      [{ ...mine, invitation_id: ctx.unknownId("invitation_id") }, "unknown invitation"],
      [{ portal_id: theirs.id, invitation_id: invitation.id }, "another tenant's portal"],
    ]);
  },
});
