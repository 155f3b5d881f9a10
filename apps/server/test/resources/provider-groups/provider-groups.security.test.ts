import { unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { revokeApiKey } from "../../../src/auth/api-keys.ts";
import { seedCatalogProvider } from "../../support/seed.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

describe("provider groups: security", () => {
  it("refuses requests without a valid key with 401", async () => {
    for (const authorization of [undefined, "Basic abc", "Bearer nope", `Bearer tp_aaaaaaaaaaaa_${"A".repeat(43)}`]) {
      const headers: Record<string, string> = authorization ? { authorization } : {};
      const res = await t.fetch("/provider-groups", { auth: false, headers });
      expect(res.status, authorization).toBe(401);
      expect(await res.json()).toMatchObject({ code: "unauthorized", status: 401 });
    }
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
    for (const r of [get, patch, add, remove]) {
      expect(r.response.status).toBe(404);
      expect(r.error).toMatchObject({ code: "not_found", entity: "provider.group" });
    }
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
