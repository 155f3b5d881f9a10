import type { SuiteContext } from "../context.ts";
import { checkMisses, portalPair } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

/** Accepts an invitation through the portal's pages, as a browser would: a consumer and a consumer session. */
async function acceptThroughPage(ctx: SuiteContext, link: string) {
  const url = new URL(new URL(link).pathname, ctx.serverUrl);
  const shown = await fetch(url);
  const cookie = shown.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  const csrf = /name="csrf" value="([^"]+)"/.exec(await shown.text())?.[1] ?? "";
  const accepted = await fetch(url, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ csrf }).toString(),
  });
  if (accepted.status !== 303) throw new Error(`accepting the invitation answered ${accepted.status}`);
}

export const portalConsumers = defineSuite({
  tag: "Portal consumers",
  async run(ctx) {
    const { client } = ctx;
    const { mine, theirs, portalMisses } = await portalPair(ctx, "consumers");
    const invitation = await ctx.ok(
      "createPortalInvitation",
      201,
      client.POST("/portals/{portal_id}/invitations", {
        params: { path: mine },
        body: { consumer_group_id: "members" },
      }),
      { label: "201 invitation to accept" },
    );
    await acceptThroughPage(ctx, invitation.url ?? "");

    // listPortalConsumers
    const consumers = await ctx.ok(
      "listPortalConsumers",
      200,
      client.GET("/portals/{portal_id}/consumers", { params: { path: mine, query: { status: ["active"] } } }),
    );
    await ctx.check(
      "listPortalConsumers",
      400,
      client.GET("/portals/{portal_id}/consumers", { params: { path: mine, query: { status: ["gone" as "active"] } } }),
      { code: "invalid_data", label: "400 unknown status" },
    );
    await checkMisses(ctx, "listPortalConsumers", mine, portalMisses);
    const consumerId = consumers.items[0]?.id ?? "";

    // listPortalConsumerSessions
    const signIns = await ctx.ok(
      "listPortalConsumerSessions",
      200,
      client.GET("/portals/{portal_id}/consumer-sessions", {
        params: { path: mine, query: { consumer_id: [consumerId] } },
      }),
    );
    await ctx.check(
      "listPortalConsumerSessions",
      400,
      client.GET("/portals/{portal_id}/consumer-sessions", { params: { path: mine, query: { limit: 101 } } }),
      { code: "invalid_data", label: "400 limit above the maximum" },
    );
    await checkMisses(ctx, "listPortalConsumerSessions", mine, portalMisses);

    // revokePortalConsumerSession
    const signIn = { ...mine, consumer_session_id: signIns.items[0]?.id ?? "" };
    await ctx.ok(
      "revokePortalConsumerSession",
      200,
      client.DELETE("/portals/{portal_id}/consumer-sessions/{consumer_session_id}", { params: { path: signIn } }),
    );
    await checkMisses(ctx, "revokePortalConsumerSession", signIn, [
      [{ ...mine, consumer_session_id: ctx.unknownId("consumer_session_id") }, "unknown consumer session"],
      [{ portal_id: theirs.id, consumer_session_id: signIn.consumer_session_id }, "another tenant's portal"],
    ]);

    // getPortalConsumer, revokePortalConsumer
    const item = { ...mine, consumer_id: consumerId };
    const itemMisses: [Record<string, string>, string][] = [
      [{ ...mine, consumer_id: ctx.unknownId("consumer_id") }, "unknown consumer"],
      [{ portal_id: theirs.id, consumer_id: consumerId }, "another tenant's portal"],
    ];
    await ctx.ok(
      "getPortalConsumer",
      200,
      client.GET("/portals/{portal_id}/consumers/{consumer_id}", { params: { path: item } }),
    );
    await checkMisses(ctx, "getPortalConsumer", item, itemMisses);
    await ctx.ok(
      "revokePortalConsumer",
      200,
      client.DELETE("/portals/{portal_id}/consumers/{consumer_id}", { params: { path: item } }),
    );
    await checkMisses(ctx, "revokePortalConsumer", item, itemMisses);
  },
});
