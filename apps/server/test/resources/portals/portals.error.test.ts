import { type ErrorBody, unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../../support/fixture.ts";
import { expectBadBodiesRefused } from "../../support/security.ts";

const t = useTestServer();

const UNKNOWN = "ptl_00000000000000000000000000";

const send = (method: string, body: unknown) => ({
  method,
  headers: { "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

async function count() {
  const row = await t.db.selectFrom("portals").select(t.db.fn.countAll<string>().as("n")).executeTakeFirstOrThrow();
  return Number(row.n);
}

async function createPortal(name: string) {
  return unwrap(t.client.POST("/portals", { body: { name } }));
}

describe("portals: errors on create", () => {
  it("rejects invalid bodies with field paths and writes nothing", async () => {
    const before = await count();
    const res = await t.fetch("/portals", send("POST", { name: "", description: 5, extra: true }));
    expect(res.status).toBe(400);
    const body = (await res.json()) as ErrorBody;
    expect(body).toMatchObject({ __typename: "error", ok: false, status: 400, code: "invalid_data", entity: "body" });
    expect(body.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: ["name"] }),
        expect.objectContaining({ path: ["description"], code: "type" }),
        expect.objectContaining({ path: ["extra"], code: "additional_property" }),
      ]),
    );
    expect(body.errors).toHaveLength(3);

    const cases: [unknown, (string | number)[], string][] = [
      [{}, ["name"], "required"],
      [{ name: 5 }, ["name"], "type"],
      [{ name: null }, ["name"], "type"],
      [{ name: "x".repeat(256) }, ["name"], "max_length"],
      [{ name: "ok", description: "d".repeat(10_001) }, ["description"], "max_length"],
      [{ name: "ok", description: null }, ["description"], "type"],
      // Fields of the update body are not part of the create body.
      [{ name: "ok", status: "active" }, ["status"], "additional_property"],
      [{ name: "ok", brand_name: "B" }, ["brand_name"], "additional_property"],
      [{ name: "ok", session_expiry_time_in_seconds: 3600 }, ["session_expiry_time_in_seconds"], "additional_property"],
      [{ name: "ok", slug: "mine" }, ["slug"], "additional_property"],
    ];
    for (const [payload, path, code] of cases) {
      const r = await t.fetch("/portals", send("POST", payload));
      const label = JSON.stringify(payload).slice(0, 80);
      expect(r.status, label).toBe(400);
      const b = (await r.json()) as ErrorBody;
      expect(b, label).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(b.errors, label).toEqual([expect.objectContaining({ path, code })]);
    }
    expect(await count()).toBe(before);
  });

  it("answers malformed JSON, wrong content type, missing and oversized bodies, and writes nothing", async () => {
    const before = await count();
    await expectBadBodiesRefused(t, "/portals", { name: "x", description: "y".repeat(70 * 1024) });
    expect(await count()).toBe(before);
  });
});

describe("portals: errors on update", () => {
  it("enforces the session expiry bounds with the field path", async () => {
    const portal = await createPortal("Bounds");
    for (const seconds of [299, 2592001, 0, -1]) {
      const res = await t.client.PATCH("/portals/{portal_id}", {
        params: { path: { portal_id: portal.id } },
        body: { session_expiry_time_in_seconds: seconds },
      });
      expect(res.response.status, String(seconds)).toBe(400);
      expect(res.error).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(res.error?.errors, String(seconds)).toEqual([
        expect.objectContaining({
          path: ["session_expiry_time_in_seconds"],
          code: seconds > 300 ? "maximum" : "minimum",
        }),
      ]);
    }
    for (const value of [3600.5, "3600", null, true]) {
      const res = await t.fetch(`/portals/${portal.id}`, send("PATCH", { session_expiry_time_in_seconds: value }));
      expect(res.status, String(value)).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body.errors?.[0]?.path, String(value)).toEqual(["session_expiry_time_in_seconds"]);
    }
    const unchanged = await unwrap(
      t.client.GET("/portals/{portal_id}", { params: { path: { portal_id: portal.id } } }),
    );
    expect(unchanged).toEqual(portal);
  });

  it("rejects invalid update bodies with field paths and changes nothing", async () => {
    const portal = await createPortal("Strict");
    const cases: [unknown, (string | number)[], string][] = [
      [{ name: "" }, ["name"], "min_length"],
      [{ name: null }, ["name"], "type"],
      [{ name: "n".repeat(256) }, ["name"], "max_length"],
      [{ description: 7 }, ["description"], "type"],
      [{ description: "d".repeat(10_001) }, ["description"], "max_length"],
      [{ brand_name: "" }, ["brand_name"], "min_length"],
      [{ brand_name: "b".repeat(256) }, ["brand_name"], "max_length"],
      [{ brand_name: 1 }, ["brand_name"], "type"],
      [{ status: "deleted" }, ["status"], "enum"],
      [{ status: null }, ["status"], "type"],
      [{ slug: "new-slug" }, ["slug"], "additional_property"],
      [{ auth: { session_expiry_time_in_seconds: 60 } }, ["auth", "session_expiry_time_in_seconds"], "minimum"],
      [{ auth: { oidc: { client_id: "c" } } }, ["auth", "oidc", "issuer"], "required"],
      [
        { auth: { oidc: { issuer: "https://i.example", client_id: "c", has_client_secret: true } } },
        ["auth", "oidc", "has_client_secret"],
        "additional_property",
      ],
      [{ brand: { primary_color: "red" } }, ["brand", "primary_color"], "pattern"],
      [{ brand: { logo_url: "https://cdn.example/logo.png" } }, ["brand", "logo_url"], "pattern"],
      [{ brand: { slogan: "B" } }, ["brand", "slogan"], "additional_property"],
    ];
    for (const [payload, path, code] of cases) {
      const res = await t.fetch(`/portals/${portal.id}`, send("PATCH", payload));
      const label = JSON.stringify(payload).slice(0, 80);
      expect(res.status, label).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body, label).toMatchObject({ code: "invalid_data", entity: "body" });
      expect(body.errors, label).toEqual(expect.arrayContaining([expect.objectContaining({ path, code })]));
    }
    const missing = await t.fetch(`/portals/${portal.id}`, { method: "PATCH" });
    expect(missing.status).toBe(400);

    const unchanged = await unwrap(
      t.client.GET("/portals/{portal_id}", { params: { path: { portal_id: portal.id } } }),
    );
    expect(unchanged).toEqual(portal);
  });
});

describe("portals: unknown ids, routes and query parameters", () => {
  it("answers 404 for unknown ids on get, patch and delete", async () => {
    const path = { portal_id: UNKNOWN };
    const get = await t.client.GET("/portals/{portal_id}", { params: { path } });
    const patch = await t.client.PATCH("/portals/{portal_id}", { params: { path }, body: { name: "x" } });
    const del = await t.client.DELETE("/portals/{portal_id}", { params: { path } });
    for (const r of [get, patch, del]) {
      expect(r.response.status).toBe(404);
      expect(r.error).toMatchObject({
        __typename: "error",
        ok: false,
        status: 404,
        code: "not_found",
        entity: "portal",
      });
      expect(r.error?.message).toContain(UNKNOWN);
    }
    expect(await t.db.selectFrom("portals").select("id").where("id", "=", UNKNOWN).execute()).toEqual([]);
  });

  it("answers 404 for a portal once it is deleted, including a second delete", async () => {
    const portal = await createPortal("Twice");
    const path = { portal_id: portal.id };
    expect((await t.client.DELETE("/portals/{portal_id}", { params: { path } })).response.status).toBe(200);
    const again = await t.client.DELETE("/portals/{portal_id}", { params: { path } });
    expect(again.response.status).toBe(404);
    const patch = await t.client.PATCH("/portals/{portal_id}", { params: { path }, body: { name: "Back" } });
    expect(patch.response.status).toBe(404);
    expect(await t.db.selectFrom("portals").select("id").where("id", "=", portal.id).execute()).toEqual([]);
  });

  it("validates list query parameters", async () => {
    const cases: [string, string][] = [
      ["limit=0", "invalid_data"],
      ["limit=101", "invalid_data"],
      ["limit=abc", "invalid_data"],
      ["order=sideways", "invalid_data"],
      ["status=active", "invalid_data"],
      ["limit=1&limit=2", "invalid_data"],
      ["after=ptl_a&before=ptl_b", "bad_request"],
      ["before=ptl_a&cursor=abc", "bad_request"],
      ["cursor=not-a-cursor", "bad_request"],
    ];
    for (const [query, code] of cases) {
      const res = await t.fetch(`/portals?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.json(), query).toMatchObject({ code, entity: "query" });
    }
  });

  it("answers wrong methods with 405 and the allowed ones", async () => {
    const collection = await t.fetch("/portals", { method: "PUT" });
    expect(collection.status).toBe(405);
    expect(collection.headers.get("allow")).toBe("GET, POST");
    expect(await collection.json()).toMatchObject({ code: "method_not_allowed" });

    const item = await t.fetch(`/portals/${UNKNOWN}`, { method: "POST" });
    expect(item.status).toBe(405);
    expect(item.headers.get("allow")?.split(", ").sort()).toEqual(["DELETE", "GET", "PATCH"]);
  });
});
