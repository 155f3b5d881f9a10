import { unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedServer } from "../../support/seed.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.close());

describe("servers: security", () => {
  it("refuses requests without a valid key with 401, for known and unknown ids alike", async () => {
    const id = await seedServer(t.db, "Guarded");
    for (const path of [`/servers/${id}`, "/servers/srv_00000000000000000000000000"]) {
      for (const authorization of [undefined, "Basic abc", "Bearer nope", `Bearer tp_aaaaaaaaaaaa_${"A".repeat(43)}`]) {
        const headers: Record<string, string> = authorization ? { authorization } : {};
        const res = await t.fetch(path, { auth: false, headers });
        const label = `${path} ${authorization ?? "(none)"}`;
        expect(res.status, label).toBe(401);
        const body = await res.json();
        expect(body, label).toMatchObject({ __typename: "error", code: "unauthorized", status: 401 });
        expect(JSON.stringify(body)).not.toContain("Guarded");
      }
    }
  });

  it("hides an instance's own server from other instances, but shows it to its owner", async () => {
    const owner = await t.createTenant("owner");
    const id = await seedServer(t.db, "Private server", owner.instanceId);
    const path = { server_id: id };

    const mine = await t.client.GET("/servers/{server_id}", { params: { path } });
    expect(mine.response.status).toBe(404);
    expect(mine.error).toMatchObject({ code: "not_found", entity: "server" });
    expect(JSON.stringify(mine.error)).not.toContain("Private server");
    // The same answer as for an id that does not exist at all.
    const unknown = await t.client.GET("/servers/{server_id}", {
      params: { path: { server_id: "srv_00000000000000000000000000" } },
    });
    expect(mine.error?.message.replace(id, "ID")).toBe(
      unknown.error?.message.replace("srv_00000000000000000000000000", "ID"),
    );

    const theirs = await unwrap(owner.client.GET("/servers/{server_id}", { params: { path } }));
    expect(theirs).toMatchObject({ object: "server", id, name: "Private server" });

    const third = await t.createTenant("third");
    expect((await third.client.GET("/servers/{server_id}", { params: { path } })).response.status).toBe(404);
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
