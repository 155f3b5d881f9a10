import { catalogListingId } from "../seed.ts";
import { customProviderFixture } from "./custom-providers.ts";
import { checkMisses, expectAbsent } from "./fixtures.ts";
import { defineSuite } from "./types.ts";

export const providerListings = defineSuite({
  tag: "Provider listings",
  async run(ctx) {
    const { client, other } = ctx;
    const listingId = await catalogListingId(ctx);
    const theirs = await customProviderFixture(ctx, other, "provider listings, other tenant");
    const theirProvider = await ctx.ok(
      "getProvider",
      200,
      other.GET("/providers/{provider_id}", { params: { path: { provider_id: theirs.cp.provider.id } } }),
      { label: "200 the other tenant's custom provider (for its listing)" },
    );
    const theirListing = theirProvider.provider_listing_id ?? ctx.unknownId("provider_listing_id");

    // listProviderListings
    const all = await ctx.ok(
      "listProviderListings",
      200,
      client.GET("/provider-listings", { params: { query: { limit: 100 } } }),
      { label: "200 catalog and own listings" },
    );
    expectAbsent(all, theirListing, "listProviderListings");
    const page = await ctx.ok(
      "listProviderListings",
      200,
      client.GET("/provider-listings", { params: { query: { limit: 1, order: "desc" } } }),
      { label: "200 first page, desc" },
    );
    await ctx.ok(
      "listProviderListings",
      200,
      client.GET("/provider-listings", { params: { query: { cursor: page.pagination.next_cursor ?? "" } } }),
      { label: "200 next page by cursor" },
    );
    await ctx.check(
      "listProviderListings",
      400,
      client.GET("/provider-listings", { params: { query: { after: listingId, cursor: "x" } } }),
      { code: "bad_request", label: "400 after and cursor" },
    );
    await ctx.standardErrors("listProviderListings");

    // getProviderListing
    const mine = { provider_listing_id: listingId };
    await ctx.ok(
      "getProviderListing",
      200,
      client.GET("/provider-listings/{provider_listing_id}", { params: { path: mine } }),
    );
    await checkMisses(ctx, "getProviderListing", mine, [
      [{ provider_listing_id: ctx.unknownId("provider_listing_id") }, "unknown id"],
      [{ provider_listing_id: theirListing }, "another tenant's custom provider listing"],
    ]);
  },
});
