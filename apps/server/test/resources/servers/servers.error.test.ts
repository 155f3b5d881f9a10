import { describe, expect, it } from "vitest";
import { useTestServer } from "../../support/fixture.ts";
import { seedServer } from "../../support/seed.ts";

const t = useTestServer();

const UNKNOWN = "srv_00000000000000000000000000";

describe("servers: errors", () => {
  it("answers 404 for an unknown id", async () => {
    await seedServer(t.db, "Present");
    for (const server_id of [UNKNOWN, "not-an-id", "ptl_00000000000000000000000000"]) {
      const res = await t.client.GET("/servers/{server_id}", { params: { path: { server_id } } });
      expect(res.response.status, server_id).toBe(404);
      expect(res.error, server_id).toMatchObject({
        __typename: "error",
        ok: false,
        status: 404,
        code: "not_found",
        entity: "server",
      });
      expect(res.error?.message).toContain(server_id);
    }
  });

  it("answers 404 once the server is removed from the catalog", async () => {
    const id = await seedServer(t.db, "Withdrawn");
    expect((await t.client.GET("/servers/{server_id}", { params: { path: { server_id: id } } })).response.status).toBe(
      200,
    );
    await t.db.deleteFrom("servers").where("id", "=", id).execute();
    const res = await t.client.GET("/servers/{server_id}", { params: { path: { server_id: id } } });
    expect(res.response.status).toBe(404);
  });

  it("rejects query parameters it does not define", async () => {
    const id = await seedServer(t.db, "Strict query");
    const res = await t.fetch(`/servers/${id}?expand=variants`);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      code: "invalid_data",
      entity: "query",
      errors: [expect.objectContaining({ path: ["expand"], code: "additional_property" })],
    });
  });

  it("is read-only: other methods are 405, and there is no collection", async () => {
    const id = await seedServer(t.db, "Read only");
    for (const method of ["POST", "PATCH", "PUT", "DELETE"]) {
      const res = await t.fetch(`/servers/${id}`, { method });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow"), method).toBe("GET");
      expect(await res.json()).toMatchObject({ code: "method_not_allowed" });
    }
    const row = await t.db.selectFrom("servers").select("id").where("id", "=", id).execute();
    expect(row).toHaveLength(1);
    const collection = await t.fetch("/servers");
    expect(collection.status).toBe(404);
    expect(await collection.json()).toMatchObject({ code: "not_found", entity: "endpoint" });
  });
});
