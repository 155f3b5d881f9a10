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

  it("validates the list's query parameters", async () => {
    const cases: [string, string][] = [
      ["limit=0", "invalid_data"],
      ["limit=101", "invalid_data"],
      ["order=newest", "invalid_data"],
      ["status=active", "invalid_data"],
      ["after=srv_a&before=srv_b", "bad_request"],
      ["cursor=not-a-cursor", "bad_request"],
    ];
    for (const [query, code] of cases) {
      const res = await t.fetch(`/servers?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.json(), query).toMatchObject({ code, entity: "query" });
    }
  });

  it("is read-only: other methods are 405, on the item and on the collection", async () => {
    const id = await seedServer(t.db, "Read only");
    for (const method of ["POST", "PATCH", "PUT", "DELETE"]) {
      const res = await t.fetch(`/servers/${id}`, { method });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow"), method).toBe("GET");
      expect(await res.json()).toMatchObject({ code: "method_not_allowed" });
    }
    const row = await t.db.selectFrom("servers").select("id").where("id", "=", id).execute();
    expect(row).toHaveLength(1);
    for (const method of ["POST", "PATCH", "DELETE"]) {
      const res = await t.fetch("/servers", { method });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow"), method).toBe("GET");
    }
  });
});
