import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { createRemote } from "../../custom-providers/support.ts";
import { useTestServer } from "../../support/fixture.ts";
import { expectNotFound, expectSameAsUnknown, expectUnauthorizedEverywhere } from "../../support/security.ts";
import { seedCatalogProvider } from "../../support/seed.ts";

const t = useTestServer();

const NOWHERE = "http://127.0.0.1:9/mcp";
const UNKNOWN = "plg_00000000000000000000000000";

describe("provider listings: security", () => {
  it("refuses requests without a valid key with 401", async () => {
    const { listingId } = await seedCatalogProvider(t.db, "Guarded");
    await expectUnauthorizedEverywhere(t, [
      ["/provider-listings", { method: "GET" }],
      [`/provider-listings/${listingId}`, { method: "GET" }],
      [`/provider-listings/${UNKNOWN}`, { method: "GET" }],
    ]);
  });

  it("hides another instance's custom provider listing: a 404 like an unknown id, never listed", async () => {
    const owner = await t.createTenant("owner");
    const theirs = await createRemote({ ...t, client: owner.client }, NOWHERE, "Private listing");
    const theirListing = (
      await unwrap(
        owner.client.GET("/providers/{provider_id}", { params: { path: { provider_id: theirs.provider.id } } }),
      )
    ).provider_listing_id;
    if (!theirListing) throw new Error("the custom provider has no listing");

    const get = await t.client.GET("/provider-listings/{provider_listing_id}", {
      params: { path: { provider_listing_id: theirListing } },
    });
    await expectNotFound([get], "provider.listing", ["Private listing"]);
    const unknown = await t.client.GET("/provider-listings/{provider_listing_id}", {
      params: { path: { provider_listing_id: UNKNOWN } },
    });
    expectSameAsUnknown(get, theirListing, unknown, UNKNOWN);

    for (const query of [{ limit: 100 }, { after: theirListing }, { before: theirListing, order: "desc" as const }]) {
      const page = await unwrap(t.client.GET("/provider-listings", { params: { query } }));
      expect(
        page.items.map((l) => l.id),
        JSON.stringify(query),
      ).not.toContain(theirListing);
      expect(JSON.stringify(page)).not.toContain("Private listing");
    }
    const ownerPage = await unwrap(owner.client.GET("/provider-listings", { params: { query: { limit: 100 } } }));
    expect(ownerPage.items.map((l) => l.id)).toContain(theirListing);
  });
});
