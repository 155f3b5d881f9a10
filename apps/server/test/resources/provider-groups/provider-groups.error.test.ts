import { type ErrorBody, unwrap } from "@toolplane/client";
import { ApiError } from "@toolplane/server-stubs";
import { describe, expect, it } from "vitest";
import { notImplemented } from "../../../src/resources/not-implemented.ts";
import { useTestServer } from "../../support/fixture.ts";
import { expectBadBodiesRefused } from "../../support/security.ts";
import { seedCatalogProvider } from "../../support/seed.ts";
import type { TestServer } from "../../support/server.ts";

const t = useTestServer();

const json = (body: unknown) => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

async function count(db: TestServer["db"]) {
  const row = await db.selectFrom("provider_groups").select(db.fn.countAll<string>().as("n")).executeTakeFirstOrThrow();
  return Number(row.n);
}

describe("provider groups: errors", () => {
  it("rejects invalid bodies with field paths and writes nothing", async () => {
    const before = await count(t.db);
    const res = await t.fetch("/provider-groups", json({ name: "", description: 5, extra: true }));
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
    const missing = (await (await t.fetch("/provider-groups", json({}))).json()) as ErrorBody;
    expect(missing.errors).toEqual([{ code: "required", message: "is required", path: ["name"] }]);
    expect(await count(t.db)).toBe(before);
  });

  it("answers malformed JSON, wrong content type, missing and oversized bodies", async () => {
    await expectBadBodiesRefused(t, "/provider-groups", { name: "x", description: "y".repeat(70 * 1024) });
  });

  it("validates query parameters", async () => {
    const cases: [string, string][] = [
      ["limit=0", "invalid_data"],
      ["limit=101", "invalid_data"],
      ["limit=abc", "invalid_data"],
      ["order=sideways", "invalid_data"],
      ["unknown=1", "invalid_data"],
      ["limit=1&limit=2", "invalid_data"],
      ["after=pgr_a&before=pgr_b", "bad_request"],
      ["after=pgr_a&cursor=abc", "bad_request"],
      ["cursor=not-a-cursor", "bad_request"],
    ];
    for (const [query, code] of cases) {
      const res = await t.fetch(`/provider-groups?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.json(), query).toMatchObject({ code, entity: "query" });
    }
  });

  it("answers 404 for unknown ids and listings, 409 for a listing already held", async () => {
    const missing = await t.client.GET("/provider-groups/{provider_group_id}", {
      params: { path: { provider_group_id: "pgr_00000000000000000000000000" } },
    });
    expect(missing.response.status).toBe(404);
    expect(missing.error).toMatchObject({ code: "not_found", entity: "provider.group" });

    const group = await unwrap(t.client.POST("/provider-groups", { body: { name: "G" } }));
    const path = { provider_group_id: group.id };
    const unknownListing = await t.client.POST("/provider-groups/{provider_group_id}/listings", {
      params: { path },
      body: { provider_listing_id: "plg_nope" },
    });
    expect(unknownListing.response.status).toBe(404);

    const { listingId } = await seedCatalogProvider(t.db, "Dup");
    await unwrap(
      t.client.POST("/provider-groups/{provider_group_id}/listings", {
        params: { path },
        body: { provider_listing_id: listingId },
      }),
    );
    const again = await t.client.POST("/provider-groups/{provider_group_id}/listings", {
      params: { path },
      body: { provider_listing_id: listingId },
    });
    expect(again.response.status).toBe(409);
    expect(again.error).toMatchObject({ code: "conflict" });

    const notHeld = await t.client.DELETE("/provider-groups/{provider_group_id}/listings/{provider_listing_id}", {
      params: { path: { ...path, provider_listing_id: "plg_other" } },
    });
    expect(notHeld.response.status).toBe(404);
  });

  it("answers unknown routes with 404 and wrong methods with 405, in the error shape", async () => {
    const unknown = await t.fetch("/no-such-thing");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ code: "not_found", entity: "endpoint" });

    const wrong = await t.fetch("/provider-groups", { method: "PUT" });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("GET, POST");
    expect(await wrong.json()).toMatchObject({ code: "method_not_allowed" });
  });

  it("answers 501 in the error shape for operations not implemented yet", async () => {
    // Every operation is implemented now, so the fallback handler is called directly.
    const handler = notImplemented("listSessions").listSessions;
    const error = await handler({} as never, {} as never).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).toBody()).toMatchObject({ code: "not_implemented", status: 501, ok: false });
  });

  it("ignores unknown request headers", async () => {
    const res = await t.fetch("/provider-groups", { headers: { "x-api-version": "2099-01-01", "x-whatever": "1" } });
    expect(res.status).toBe(200);
  });
});

describe("malformed requests", () => {
  it("answers an undecodable path with 400 bad_request, not 500", async () => {
    for (const path of ["/provider-groups/%zz", "/p/%E0%A4%A"]) {
      const res = await t.fetch(path);
      expect(res.status, path).toBe(400);
      expect(await res.json()).toMatchObject({ code: "bad_request", ok: false });
    }
  });

  it("answers non-object JSON bodies with invalid_data at the root path", async () => {
    for (const body of ["[1]", "null", '"x"', "3"]) {
      const res = await t.fetch("/provider-groups", json(body));
      expect(res.status, body).toBe(400);
      expect(await res.json()).toMatchObject({ code: "invalid_data", errors: [{ path: [] }] });
    }
  });
});
