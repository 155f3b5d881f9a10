import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { createRemote } from "../../custom-providers/support.ts";
import { catalogProvider } from "../../support/catalog-fixtures.ts";
import { useTestServer } from "../../support/fixture.ts";
import { seedCatalogProvider } from "../../support/seed.ts";

const t = useTestServer();

const NOWHERE = "http://127.0.0.1:9/mcp";

describe("provider listings: happy paths", () => {
  it("lists the catalog's listings and gets one, with its provider's name, description and slug", async () => {
    const github = await catalogProvider(t.db, "github");
    const page = await unwrap(t.client.GET("/provider-listings", { params: { query: { limit: 100 } } }));
    const listing = page.items.find((l) => l.provider_id === github.providerId);
    expect(listing).toEqual({
      object: "provider.listing",
      id: expect.stringMatching(/^plg_[0-9a-z]{26}$/),
      provider_id: github.providerId,
      name: "GitHub",
      description: expect.stringContaining("GitHub"),
      slug: "github",
    });
    const got = await unwrap(
      t.client.GET("/provider-listings/{provider_listing_id}", {
        params: { path: { provider_listing_id: listing?.id ?? "" } },
      }),
    );
    expect(got).toEqual(listing);
    // The provider names the same listing.
    const provider = await unwrap(
      t.client.GET("/providers/{provider_id}", { params: { path: { provider_id: github.providerId } } }),
    );
    expect(provider.provider_listing_id).toBe(listing?.id);
  });

  it("includes the instance's custom providers, and the listing is what provider groups take", async () => {
    const custom = await createRemote(t, NOWHERE, "Listed tools", { description: "Mine" });
    const page = await unwrap(t.client.GET("/provider-listings", { params: { query: { limit: 100 } } }));
    const listing = page.items.find((l) => l.provider_id === custom.provider.id);
    expect(listing).toMatchObject({ name: "Listed tools", description: "Mine", slug: custom.provider.slug });
    const group = await unwrap(t.client.POST("/provider-groups", { body: { name: "Mine" } }));
    const held = await unwrap(
      t.client.POST("/provider-groups/{provider_group_id}/listings", {
        params: { path: { provider_group_id: group.id } },
        body: { provider_listing_id: listing?.id ?? "" },
      }),
    );
    expect(held.listings).toEqual([listing]);
  });

  it("pages through listings with limit, cursors, after, before and order", async () => {
    const seeded: string[] = [];
    for (let i = 0; i < 4; i++) seeded.push((await seedCatalogProvider(t.db, `Paged ${i}`)).listingId);
    const all = (await unwrap(t.client.GET("/provider-listings", { params: { query: { limit: 100 } } }))).items.map(
      (l) => l.id,
    );
    expect(all).toEqual([...all].sort());
    expect(all.slice(-4)).toEqual(seeded);
    const list = (query: Record<string, unknown>) => unwrap(t.client.GET("/provider-listings", { params: { query } }));
    const first = await list({ after: all.at(-5), limit: 2 });
    expect(first.items.map((l) => l.id)).toEqual(seeded.slice(0, 2));
    expect(first.pagination).toMatchObject({ has_more_before: true, has_more_after: true });
    const next = await list({ cursor: first.pagination.next_cursor, limit: 2 });
    expect(next.items.map((l) => l.id)).toEqual(seeded.slice(2));
    expect(next.pagination).toMatchObject({ has_more_after: false, next_cursor: null });
    const back = await list({ cursor: next.pagination.previous_cursor, limit: 2 });
    expect(back.items.map((l) => l.id)).toEqual(seeded.slice(0, 2));
    expect((await list({ before: seeded[1], limit: 1 })).items.map((l) => l.id)).toEqual([seeded[0]]);
    expect((await list({ order: "desc", limit: 2 })).items.map((l) => l.id)).toEqual([seeded[3], seeded[2]]);
    const iterated: string[] = [];
    for await (const l of t.client.paginate("/provider-listings", { params: { query: { limit: 3 } } })) {
      iterated.push(l.id);
    }
    expect(iterated).toEqual(all);
  });
});
