import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../../support/fixture.ts";
import { seedCatalogProvider } from "../../support/seed.ts";

const t = useTestServer();

describe("provider groups: happy paths", () => {
  it("creates, reads, updates and lists a group", async () => {
    const created = await unwrap(
      t.client.POST("/provider-groups", { body: { name: "Engineering Tools", description: "Daily tools" } }),
    );
    expect(created).toMatchObject({
      object: "provider.group",
      name: "Engineering Tools",
      description: "Daily tools",
      slug: "engineering-tools",
      listings: [],
    });
    expect(created.id).toMatch(/^pgr_[0-9a-z]{26}$/);
    expect(created.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const fetched = await unwrap(
      t.client.GET("/provider-groups/{provider_group_id}", { params: { path: { provider_group_id: created.id } } }),
    );
    expect(fetched).toEqual(created);

    const updated = await unwrap(
      t.client.PATCH("/provider-groups/{provider_group_id}", {
        params: { path: { provider_group_id: created.id } },
        body: { name: "Platform", description: null },
      }),
    );
    expect(updated).toMatchObject({ name: "Platform", description: null, slug: "engineering-tools" });
    expect(updated.updated_at >= created.updated_at).toBe(true);

    const list = await unwrap(t.client.GET("/provider-groups"));
    expect(list.items.map((g) => g.id)).toContain(created.id);
  });

  it("keeps slugs unique within the instance", async () => {
    const a = await unwrap(t.client.POST("/provider-groups", { body: { name: "Dup Name" } }));
    const b = await unwrap(t.client.POST("/provider-groups", { body: { name: "dup  name!" } }));
    expect([a.slug, b.slug]).toEqual(["dup-name", "dup-name-2"]);
  });

  it("adds and removes catalog listings", async () => {
    const { listingId, providerId } = await seedCatalogProvider(t.db, "Everything");
    const other = await seedCatalogProvider(t.db, "Filesystem");
    const group = await unwrap(t.client.POST("/provider-groups", { body: { name: "With listings" } }));
    const path = { provider_group_id: group.id };

    await unwrap(
      t.client.POST("/provider-groups/{provider_group_id}/listings", {
        params: { path },
        body: { provider_listing_id: listingId },
      }),
    );
    const withTwo = await unwrap(
      t.client.POST("/provider-groups/{provider_group_id}/listings", {
        params: { path },
        body: { provider_listing_id: other.listingId },
      }),
    );
    expect(withTwo.listings.map((l) => l.id)).toEqual([listingId, other.listingId]);
    expect(withTwo.listings[0]).toMatchObject({
      object: "provider.listing",
      provider_id: providerId,
      name: "Everything",
    });

    const afterRemove = await unwrap(
      t.client.DELETE("/provider-groups/{provider_group_id}/listings/{provider_listing_id}", {
        params: { path: { ...path, provider_listing_id: listingId } },
      }),
    );
    expect(afterRemove.listings.map((l) => l.id)).toEqual([other.listingId]);
  });

  it("pages through a list with limit, cursors, after, before and order", async () => {
    const tenant = await t.createTenant("paging");
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      ids.push((await unwrap(tenant.client.POST("/provider-groups", { body: { name: `Group ${i}` } }))).id);
    }
    const first = await unwrap(tenant.client.GET("/provider-groups", { params: { query: { limit: 3 } } }));
    expect(first.items.map((g) => g.id)).toEqual(ids.slice(0, 3));
    expect(first.pagination).toMatchObject({ has_more_before: false, has_more_after: true, previous_cursor: null });

    const second = await unwrap(
      tenant.client.GET("/provider-groups", {
        params: { query: { limit: 3, cursor: first.pagination.next_cursor ?? "" } },
      }),
    );
    expect(second.items.map((g) => g.id)).toEqual(ids.slice(3, 6));
    expect(second.pagination).toMatchObject({ has_more_before: true, has_more_after: true });

    const back = await unwrap(
      tenant.client.GET("/provider-groups", {
        params: { query: { limit: 3, cursor: second.pagination.previous_cursor ?? "" } },
      }),
    );
    expect(back.items.map((g) => g.id)).toEqual(ids.slice(0, 3));

    const after = await unwrap(tenant.client.GET("/provider-groups", { params: { query: { after: ids[4] } } }));
    expect(after.items.map((g) => g.id)).toEqual(ids.slice(5));
    expect(after.pagination).toMatchObject({ has_more_before: true, has_more_after: false, next_cursor: null });

    const before = await unwrap(
      tenant.client.GET("/provider-groups", { params: { query: { before: ids[2], limit: 1 } } }),
    );
    expect(before.items.map((g) => g.id)).toEqual([ids[1]]);
    expect(before.pagination).toMatchObject({ has_more_before: true, has_more_after: true });

    const desc = await unwrap(
      tenant.client.GET("/provider-groups", { params: { query: { order: "desc", limit: 2 } } }),
    );
    expect(desc.items.map((g) => g.id)).toEqual([ids[6], ids[5]]);
    const descNext = await unwrap(
      tenant.client.GET("/provider-groups", {
        params: { query: { cursor: desc.pagination.next_cursor ?? "", limit: 2 } },
      }),
    );
    expect(descNext.items.map((g) => g.id)).toEqual([ids[4], ids[3]]);

    const all: string[] = [];
    for await (const g of tenant.client.paginate("/provider-groups", { params: { query: { limit: 2 } } }))
      all.push(g.id);
    expect(all).toEqual(ids);

    const past = await unwrap(tenant.client.GET("/provider-groups", { params: { query: { after: ids[6] } } }));
    expect(past.items).toEqual([]);
    const fromEnd = await unwrap(
      tenant.client.GET("/provider-groups", {
        params: { query: { cursor: past.pagination.previous_cursor ?? "", limit: 2 } },
      }),
    );
    expect(fromEnd.items.map((g) => g.id)).toEqual([ids[5], ids[6]]);
  });
});
