import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { revokeApiKey } from "../../../src/auth/api-keys.ts";
import { useTestServer } from "../../support/fixture.ts";
import { expectNotFound, expectUnauthorizedEverywhere, json } from "../../support/security.ts";
import { seedCatalogProvider } from "../../support/seed.ts";

const t = useTestServer();

describe("provider groups: security", () => {
  it("refuses requests without a valid key with 401", async () => {
    const group = await unwrap(t.client.POST("/provider-groups", { body: { name: "Guarded" } }));
    const { listingId } = await seedCatalogProvider(t.db, "Guarded listing");
    const item = `/provider-groups/${group.id}`;
    await expectUnauthorizedEverywhere(
      t,
      [
        ["/provider-groups", { method: "GET" }],
        ["/provider-groups", json("POST", { name: "Sneaky" })],
        [item, { method: "GET" }],
        [item, json("PATCH", { name: "Hijacked" })],
        [`${item}/listings`, json("POST", { provider_listing_id: listingId })],
        [`${item}/listings/${listingId}`, { method: "DELETE" }],
      ],
      () => t.db.selectFrom("provider_groups").selectAll().orderBy("id").execute(),
    );
    const wrongSecret = t.tenant.apiKey.slice(0, -4) + (t.tenant.apiKey.endsWith("AAAA") ? "BBBB" : "AAAA");
    const res = await t.fetch("/provider-groups", { auth: false, headers: { authorization: `Bearer ${wrongSecret}` } });
    expect(res.status).toBe(401);
  });

  it("authenticates before reading the body", async () => {
    const res = await t.fetch("/provider-groups", {
      auth: false,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(res.status).toBe(401);
  });

  it("stops accepting a revoked key", async () => {
    const tenant = await t.createTenant("revoked");
    expect((await tenant.client.GET("/provider-groups")).response.status).toBe(200);
    const prefix = tenant.apiKey.split("_")[1] ?? "";
    await revokeApiKey(t.db, prefix);
    // Verified keys are cached for up to 5 s; a fresh verifier (another replica, or after the TTL) refuses it.
    await new Promise((r) => setTimeout(r, 5_100));
    expect((await tenant.client.GET("/provider-groups")).response.status).toBe(401);
  });

  it("keeps tenants apart: another instance's group is a 404 everywhere, and never listed", async () => {
    const other = await t.createTenant("other");
    const theirs = await unwrap(other.client.POST("/provider-groups", { body: { name: "Theirs" } }));
    const path = { provider_group_id: theirs.id };
    const { listingId } = await seedCatalogProvider(t.db, "Shared");

    const get = await t.client.GET("/provider-groups/{provider_group_id}", { params: { path } });
    const patch = await t.client.PATCH("/provider-groups/{provider_group_id}", {
      params: { path },
      body: { name: "x" },
    });
    const add = await t.client.POST("/provider-groups/{provider_group_id}/listings", {
      params: { path },
      body: { provider_listing_id: listingId },
    });
    const remove = await t.client.DELETE("/provider-groups/{provider_group_id}/listings/{provider_listing_id}", {
      params: { path: { ...path, provider_listing_id: listingId } },
    });
    await expectNotFound([get, patch, add, remove], "provider.group", ["Theirs"]);
    const mine = await unwrap(t.client.GET("/provider-groups", { params: { query: { limit: 100 } } }));
    expect(mine.items.map((g) => g.id)).not.toContain(theirs.id);
    expect((await unwrap(other.client.GET("/provider-groups/{provider_group_id}", { params: { path } }))).name).toBe(
      "Theirs",
    );
  });

  it("does not show another instance's custom listing", async () => {
    const other = await t.createTenant("listing-owner");
    const { listingId } = await seedCatalogProvider(t.db, "Private", other.instanceId);
    const group = await unwrap(t.client.POST("/provider-groups", { body: { name: "Mine" } }));
    const res = await t.client.POST("/provider-groups/{provider_group_id}/listings", {
      params: { path: { provider_group_id: group.id } },
      body: { provider_listing_id: listingId },
    });
    expect(res.response.status).toBe(404);
  });
});
