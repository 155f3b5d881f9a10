import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { createRemote } from "../../custom-providers/support.ts";
import { catalogProvider } from "../../support/catalog-fixtures.ts";
import { useTestServer } from "../../support/fixture.ts";
import { expectNotFound, expectSameAsUnknown, expectUnauthorizedEverywhere } from "../../support/security.ts";

const t = useTestServer();

const NOWHERE = "http://127.0.0.1:9/mcp";

describe("providers: security", () => {
  it("refuses requests without a valid key with 401, for known and unknown ids alike", async () => {
    const { providerId } = await catalogProvider(t.db, "github");
    await expectUnauthorizedEverywhere(t, [
      ["/providers", { method: "GET" }],
      ["/providers?type=custom", { method: "GET" }],
      [`/providers/${providerId}`, { method: "GET" }],
      ["/providers/pro_00000000000000000000000000", { method: "GET" }],
    ]);
  });

  it("hides another instance's custom provider: a 404 like an unknown id, absent from every list", async () => {
    const owner = await t.createTenant("owner");
    const theirs = await createRemote({ ...t, client: owner.client }, NOWHERE, "Private weather");
    const mine = await createRemote(t, NOWHERE, "My weather");
    const path = { provider_id: theirs.provider.id };

    const get = await t.client.GET("/providers/{provider_id}", { params: { path } });
    await expectNotFound([get], "provider", ["Private weather", theirs.id]);
    const unknown = await t.client.GET("/providers/{provider_id}", {
      params: { path: { provider_id: "pro_00000000000000000000000000" } },
    });
    expectSameAsUnknown(get, theirs.provider.id, unknown, "pro_00000000000000000000000000");

    const lists = [
      { limit: 100 },
      { id: [theirs.provider.id, mine.provider.id] },
      { type: ["custom" as const] },
      { search: "weather" },
      { publisher: [theirs.provider.publisher.id, theirs.provider.publisher.slug] },
    ];
    for (const query of lists) {
      const page = await unwrap(t.client.GET("/providers", { params: { query } }));
      expect(
        page.items.map((p) => p.id),
        JSON.stringify(query),
      ).not.toContain(theirs.provider.id);
      expect(JSON.stringify(page), JSON.stringify(query)).not.toContain("Private weather");
    }
    expect(
      (await unwrap(t.client.GET("/providers", { params: { query: { type: ["custom"] } } }))).items.map((p) => p.id),
    ).toEqual([mine.provider.id]);
    // A cursor naming their provider pages my list, never theirs.
    const after = await unwrap(t.client.GET("/providers", { params: { query: { after: theirs.provider.id } } }));
    expect(after.items.map((p) => p.id)).not.toContain(theirs.provider.id);

    // The owner sees it, as type custom.
    const own = await unwrap(owner.client.GET("/providers/{provider_id}", { params: { path } }));
    expect(own).toMatchObject({ id: theirs.provider.id, type: "custom", custom_provider_id: theirs.id });
    const ownList = await unwrap(owner.client.GET("/providers", { params: { query: { type: ["custom"] } } }));
    expect(ownList.items.map((p) => p.id)).toEqual([theirs.provider.id]);
  });
});
