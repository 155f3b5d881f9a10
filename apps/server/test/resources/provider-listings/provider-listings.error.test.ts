import { describe, expect, it } from "vitest";
import { useTestServer } from "../../support/fixture.ts";
import { seedCatalogProvider } from "../../support/seed.ts";

const t = useTestServer();

describe("provider listings: errors", () => {
  it("answers 404 for unknown ids, ids of other kinds and malformed ids", async () => {
    const { providerId } = await seedCatalogProvider(t.db, "Present");
    for (const provider_listing_id of ["plg_00000000000000000000000000", providerId, "not-an-id"]) {
      const res = await t.client.GET("/provider-listings/{provider_listing_id}", {
        params: { path: { provider_listing_id } },
      });
      expect(res.response.status, provider_listing_id).toBe(404);
      expect(res.error, provider_listing_id).toMatchObject({
        __typename: "error",
        ok: false,
        status: 404,
        code: "not_found",
        entity: "provider.listing",
      });
      expect(res.error?.message).toContain(provider_listing_id);
    }
  });

  it("validates the list's query parameters", async () => {
    const cases: [string, string][] = [
      ["limit=0", "invalid_data"],
      ["limit=1.5", "invalid_data"],
      ["order=random", "invalid_data"],
      ["provider_id=pro_a", "invalid_data"],
      ["before=plg_a&cursor=abc", "bad_request"],
      ["cursor=bm90IGpzb24", "bad_request"],
    ];
    for (const [query, code] of cases) {
      const res = await t.fetch(`/provider-listings?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.json(), query).toMatchObject({ code, entity: "query" });
    }
  });

  it("is read-only: other methods are 405", async () => {
    const { listingId } = await seedCatalogProvider(t.db, "Read only");
    for (const path of ["/provider-listings", `/provider-listings/${listingId}`]) {
      for (const method of ["POST", "PATCH", "DELETE"]) {
        const res = await t.fetch(path, { method });
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.get("allow")).toBe("GET");
      }
    }
  });
});
