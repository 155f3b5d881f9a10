import { describe, expect, it } from "vitest";
import { catalogProvider } from "../../support/catalog-fixtures.ts";
import { useTestServer } from "../../support/fixture.ts";

const t = useTestServer();

describe("providers: errors", () => {
  it("answers 404 for unknown ids, ids of other kinds and malformed ids", async () => {
    const { currentVersionId } = await catalogProvider(t.db, "github");
    for (const provider_id of ["pro_00000000000000000000000000", currentVersionId ?? "prv_x", "not-an-id"]) {
      const res = await t.client.GET("/providers/{provider_id}", { params: { path: { provider_id } } });
      expect(res.response.status, provider_id).toBe(404);
      expect(res.error, provider_id).toMatchObject({
        __typename: "error",
        ok: false,
        status: 404,
        code: "not_found",
        entity: "provider",
      });
      expect(res.error?.message).toContain(provider_id);
    }
  });

  it("validates the list's query parameters and filters", async () => {
    const cases: [string, string][] = [
      ["limit=0", "invalid_data"],
      ["limit=101", "invalid_data"],
      ["order=sideways", "invalid_data"],
      ["unknown=1", "invalid_data"],
      ["type=builtin", "invalid_data"],
      ["search=", "invalid_data"],
      [`search=${"x".repeat(256)}`, "invalid_data"],
      [`${Array.from({ length: 101 }, (_, i) => `id=pro_${i}`).join("&")}`, "invalid_data"],
      ["after=pro_a&before=pro_b", "bad_request"],
      ["cursor=not-a-cursor", "bad_request"],
    ];
    for (const [query, code] of cases) {
      const res = await t.fetch(`/providers?${query}`);
      expect(res.status, query.slice(0, 40)).toBe(400);
      expect(await res.json(), query.slice(0, 40)).toMatchObject({ code, entity: "query" });
    }
  });

  it("accepts every encoding of multi-value filters", async () => {
    const { providerId } = await catalogProvider(t.db, "github");
    for (const query of [`id=${providerId}`, `id[]=${providerId}`, `id[0]=${providerId}&type[0]=catalog`]) {
      const res = await t.fetch(`/providers?${query}`);
      expect(res.status, query).toBe(200);
      const page = (await res.json()) as { items: { id: string }[] };
      expect(
        page.items.map((p) => p.id),
        query,
      ).toEqual([providerId]);
    }
  });

  it("is read-only: other methods are 405", async () => {
    const { providerId } = await catalogProvider(t.db, "github");
    for (const [path, allow] of [
      ["/providers", "GET"],
      [`/providers/${providerId}`, "GET"],
    ] as const) {
      for (const method of ["POST", "PATCH", "PUT", "DELETE"]) {
        const res = await t.fetch(path, { method });
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.get("allow"), `${method} ${path}`).toBe(allow);
        expect(await res.json()).toMatchObject({ code: "method_not_allowed" });
      }
    }
  });
});
