import { describe, expect, it } from "vitest";
import { catalogProvider } from "../../support/catalog-fixtures.ts";
import { useTestServer } from "../../support/fixture.ts";

const t = useTestServer();

const UNKNOWN_PROVIDER = "pro_00000000000000000000000000";
const UNKNOWN_VERSION = "prv_00000000000000000000000000";

describe("provider versions: errors", () => {
  it("answers 404 for an unknown provider, naming the provider", async () => {
    const list = await t.client.GET("/providers/{provider_id}/versions", {
      params: { path: { provider_id: UNKNOWN_PROVIDER } },
    });
    expect(list.response.status).toBe(404);
    expect(list.error).toMatchObject({ code: "not_found", entity: "provider" });
    expect(list.error?.message).toContain(UNKNOWN_PROVIDER);
  });

  it("answers 404 for an unknown version and for another provider's version", async () => {
    const github = await catalogProvider(t.db, "github");
    const everything = await catalogProvider(t.db, "everything");
    const cases = [
      { provider_id: github.providerId, provider_version_id: UNKNOWN_VERSION },
      { provider_id: github.providerId, provider_version_id: everything.currentVersionId ?? "" },
      { provider_id: UNKNOWN_PROVIDER, provider_version_id: github.currentVersionId ?? "" },
    ];
    for (const path of cases) {
      const res = await t.client.GET("/providers/{provider_id}/versions/{provider_version_id}", { params: { path } });
      expect(res.response.status, JSON.stringify(path)).toBe(404);
      expect(res.error, JSON.stringify(path)).toMatchObject({ code: "not_found", entity: "provider.version" });
      expect(res.error?.message).toContain(path.provider_version_id);
    }
  });

  it("validates the list's query parameters", async () => {
    const { providerId } = await catalogProvider(t.db, "github");
    const cases: [string, string][] = [
      ["limit=0", "invalid_data"],
      ["order=up", "invalid_data"],
      ["status=released", "invalid_data"],
      ["after=prv_a&before=prv_b", "bad_request"],
      ["cursor=%%%", "bad_request"],
    ];
    for (const [query, code] of cases) {
      const res = await t.fetch(`/providers/${providerId}/versions?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.json(), query).toMatchObject({ code, entity: "query" });
    }
  });

  it("is read-only: other methods are 405", async () => {
    const { providerId, currentVersionId } = await catalogProvider(t.db, "github");
    for (const path of [`/providers/${providerId}/versions`, `/providers/${providerId}/versions/${currentVersionId}`]) {
      for (const method of ["POST", "PATCH", "DELETE"]) {
        const res = await t.fetch(path, { method });
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.get("allow")).toBe("GET");
      }
    }
  });
});
