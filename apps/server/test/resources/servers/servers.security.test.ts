import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../../support/fixture.ts";
import { expectNotFound, expectSameAsUnknown, expectUnauthorizedEverywhere } from "../../support/security.ts";
import { seedServer } from "../../support/seed.ts";

const t = useTestServer();

describe("servers: security", () => {
  it("refuses requests without a valid key with 401, for known and unknown ids alike", async () => {
    const id = await seedServer(t.db, "Guarded");
    await expectUnauthorizedEverywhere(t, [
      [`/servers/${id}`, { method: "GET" }],
      ["/servers/srv_00000000000000000000000000", { method: "GET" }],
      ["/servers", { method: "GET" }],
    ]);
  });

  it("hides an instance's own server from other instances (404, never listed), but shows it to its owner", async () => {
    const owner = await t.createTenant("owner");
    const id = await seedServer(t.db, "Private server", owner.instanceId);
    const path = { server_id: id };

    const mine = await t.client.GET("/servers/{server_id}", { params: { path } });
    await expectNotFound([mine], "server", ["Private server"]);
    // The same answer as for an id that does not exist at all.
    const unknown = await t.client.GET("/servers/{server_id}", {
      params: { path: { server_id: "srv_00000000000000000000000000" } },
    });
    expectSameAsUnknown(mine, id, unknown, "srv_00000000000000000000000000");

    const theirs = await unwrap(owner.client.GET("/servers/{server_id}", { params: { path } }));
    expect(theirs).toMatchObject({ object: "server", id, name: "Private server" });

    const third = await t.createTenant("third");
    expect((await third.client.GET("/servers/{server_id}", { params: { path } })).response.status).toBe(404);

    // Never listed to anyone but its owner, whatever the page bounds say.
    for (const query of [{ limit: 100 }, { after: id }, { before: id, order: "desc" as const }]) {
      const page = await unwrap(t.client.GET("/servers", { params: { query } }));
      expect(
        page.items.map((s) => s.id),
        JSON.stringify(query),
      ).not.toContain(id);
      expect(JSON.stringify(page)).not.toContain("Private server");
    }
    const ownerPage = await unwrap(owner.client.GET("/servers", { params: { query: { limit: 100 } } }));
    expect(ownerPage.items.map((s) => s.id)).toContain(id);
  });

  it("shows a catalog server (no instance) to every instance, identically", async () => {
    const id = await seedServer(t.db, "Catalog server", null);
    const path = { server_id: id };
    const a = await unwrap(t.client.GET("/servers/{server_id}", { params: { path } }));
    const tenants = [await t.createTenant("b"), await t.createTenant("c")];
    for (const tenant of tenants) {
      expect(await unwrap(tenant.client.GET("/servers/{server_id}", { params: { path } }))).toEqual(a);
    }
    expect(a).toMatchObject({ name: "Catalog server", type: "public" });
  });
});
