import { catalogListingId } from "../seed.ts";
import { checkMisses } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const providerGroups = defineSuite({
  tag: "Provider groups",
  async run(ctx) {
    const { client, other } = ctx;
    const listingId = await catalogListingId(ctx);

    // createProviderGroup
    const group = await ctx.ok(
      "createProviderGroup",
      201,
      client.POST("/provider-groups", { body: { name: "Contract group", description: "Made by the contract tests" } }),
    );
    await ctx.ok("createProviderGroup", 201, client.POST("/provider-groups", { body: { name: "Second group" } }), {
      label: "201 without description",
    });
    // Idempotency-Key: the repeat answers the first 201 again (same group), marked Idempotent-Replayed.
    const once = { body: { name: "Idempotent group" }, headers: { "Idempotency-Key": "contract-create-group" } };
    const first = await ctx.ok("createProviderGroup", 201, client.POST("/provider-groups", once), {
      label: "201 with an Idempotency-Key",
    });
    const replay = await ctx.check("createProviderGroup", 201, client.POST("/provider-groups", once), {
      label: "201 replayed for the same Idempotency-Key",
    });
    if (replay.data?.id !== first.id || replay.response.headers.get("idempotent-replayed") !== "true") {
      throw new Error(
        "createProviderGroup: the repeat with the same Idempotency-Key was not the replayed first answer",
      );
    }
    await ctx.check("createProviderGroup", 400, client.POST("/provider-groups", { body: { name: "" } }), {
      code: "invalid_data",
      label: "400 empty name",
    });
    await ctx.standardErrors("createProviderGroup");
    const theirs = await ctx.ok(
      "createProviderGroup",
      201,
      other.POST("/provider-groups", { body: { name: "Theirs" } }),
      {
        label: "201 as the other tenant",
      },
    );
    const mine = { provider_group_id: group.id };
    const theirPath = { provider_group_id: theirs.id };
    const unknown = { provider_group_id: ctx.unknownId("provider_group_id") };

    // listProviderGroups
    const page = await ctx.ok(
      "listProviderGroups",
      200,
      client.GET("/provider-groups", { params: { query: { limit: 1 } } }),
      {
        label: "200 first page",
      },
    );
    await ctx.ok(
      "listProviderGroups",
      200,
      client.GET("/provider-groups", { params: { query: { limit: 1, cursor: page.pagination.next_cursor ?? "" } } }),
      { label: "200 next page by cursor" },
    );
    await ctx.ok(
      "listProviderGroups",
      200,
      client.GET("/provider-groups", { params: { query: { order: "desc", after: group.id } } }),
      { label: "200 desc after an id" },
    );
    await ctx.check(
      "listProviderGroups",
      400,
      client.GET("/provider-groups", { params: { query: { cursor: "not-a-cursor" } } }),
      { code: "bad_request", label: "400 malformed cursor" },
    );
    await ctx.check(
      "listProviderGroups",
      400,
      client.GET("/provider-groups", { params: { query: { after: group.id, before: group.id } } }),
      { code: "bad_request", label: "400 after and before" },
    );
    await ctx.standardErrors("listProviderGroups");

    // getProviderGroup
    await ctx.ok(
      "getProviderGroup",
      200,
      client.GET("/provider-groups/{provider_group_id}", { params: { path: mine } }),
    );
    await checkMisses(ctx, "getProviderGroup", mine, [
      [unknown, "unknown id"],
      [theirPath, "another tenant's group"],
    ]);

    // updateProviderGroup
    await ctx.ok(
      "updateProviderGroup",
      200,
      client.PATCH("/provider-groups/{provider_group_id}", {
        params: { path: mine },
        body: { name: "Renamed group", description: null },
      }),
    );
    await checkMisses(ctx, "updateProviderGroup", mine, [
      [unknown, "unknown id"],
      [theirPath, "another tenant's group"],
    ]);

    // addProviderGroupListing
    const listingBody = { provider_listing_id: listingId };
    await ctx.ok(
      "addProviderGroupListing",
      201,
      client.POST("/provider-groups/{provider_group_id}/listings", { params: { path: mine }, body: listingBody }),
    );
    await ctx.check(
      "addProviderGroupListing",
      409,
      client.POST("/provider-groups/{provider_group_id}/listings", { params: { path: mine }, body: listingBody }),
      { code: "conflict", label: "409 listing already held" },
    );
    await ctx.notFound("addProviderGroupListing", unknown, "unknown group", listingBody);
    await ctx.notFound("addProviderGroupListing", theirPath, "another tenant's group", listingBody);
    await checkMisses(ctx, "addProviderGroupListing", mine, [[mine, "unknown listing"]], {
      provider_listing_id: ctx.unknownId("provider_listing_id"),
    });

    // removeProviderGroupListing
    const held = { ...mine, provider_listing_id: listingId };
    await ctx.ok(
      "removeProviderGroupListing",
      200,
      client.DELETE("/provider-groups/{provider_group_id}/listings/{provider_listing_id}", { params: { path: held } }),
    );
    await checkMisses(ctx, "removeProviderGroupListing", held, [
      [held, "listing no longer held"],
      [{ ...theirPath, provider_listing_id: listingId }, "another tenant's group"],
    ]);
  },
});
