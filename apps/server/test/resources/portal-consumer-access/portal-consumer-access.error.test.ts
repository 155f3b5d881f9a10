import { type ErrorBody, unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../../support/fixture.ts";
import { expectBadBodiesRefused } from "../../support/security.ts";
import { seedSessionTemplate } from "../../support/seed.ts";

const t = useTestServer();

const UNKNOWN_PORTAL = "ptl_00000000000000000000000000";
const UNKNOWN_ACCESS = "pca_00000000000000000000000000";
const UNKNOWN_TEMPLATE = "set_00000000000000000000000000";

const post = (body: unknown) => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

const grantBody = (groupId: string, templateId: string) => ({
  consumer_group_id: groupId,
  access: { type: "server_deployment_template" as const, server_deployment_template_id: templateId },
});

/** Rows of both tables the create operation writes to. */
async function snapshot() {
  const access = await t.db.selectFrom("portal_consumer_access").selectAll().orderBy("id").execute();
  const groups = await t.db.selectFrom("consumer_groups").selectAll().orderBy("instance_id").orderBy("id").execute();
  return { access, groups };
}

async function setup(name: string) {
  const portal = await unwrap(t.client.POST("/portals", { body: { name } }));
  const templateId = await seedSessionTemplate(t.db, t.tenant.instanceId, `${name} template`);
  return { portal, templateId };
}

describe("portal consumer access: errors", () => {
  it("answers 404 for an unknown portal on every operation, and writes nothing", async () => {
    const { templateId } = await setup("Unknown portal");
    const before = await snapshot();
    const path = { portal_id: UNKNOWN_PORTAL };
    const list = await t.client.GET("/portals/{portal_id}/consumer-access", { params: { path } });
    const create = await t.client.POST("/portals/{portal_id}/consumer-access", {
      params: { path },
      body: grantBody("never-created", templateId),
    });
    const get = await t.client.GET("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
      params: { path: { ...path, consumer_access_id: UNKNOWN_ACCESS } },
    });
    const del = await t.client.DELETE("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
      params: { path: { ...path, consumer_access_id: UNKNOWN_ACCESS } },
    });
    for (const r of [list, create, get, del]) {
      expect(r.response.status).toBe(404);
      expect(r.error).toMatchObject({ __typename: "error", status: 404, code: "not_found", entity: "portal" });
    }
    expect(await snapshot()).toEqual(before);
  });

  it("answers 404 for an unknown session template, creating neither access nor group", async () => {
    const { portal } = await setup("Unknown template");
    const before = await snapshot();
    const res = await t.client.POST("/portals/{portal_id}/consumer-access", {
      params: { path: { portal_id: portal.id } },
      body: grantBody("ghost-group", UNKNOWN_TEMPLATE),
    });
    expect(res.response.status).toBe(404);
    expect(res.error).toMatchObject({ code: "not_found", entity: "session.template" });
    expect(res.error?.message).toContain(UNKNOWN_TEMPLATE);
    expect(await snapshot()).toEqual(before);
    expect(await t.db.selectFrom("consumer_groups").select("id").where("id", "=", "ghost-group").execute()).toEqual([]);
  });

  it("answers 409 for a duplicate grant and writes nothing more", async () => {
    const { portal, templateId } = await setup("Duplicate");
    const path = { portal_id: portal.id };
    const first = await unwrap(
      t.client.POST("/portals/{portal_id}/consumer-access", { params: { path }, body: grantBody("dup", templateId) }),
    );
    const before = await snapshot();
    const again = await t.client.POST("/portals/{portal_id}/consumer-access", {
      params: { path },
      body: grantBody("dup", templateId),
    });
    expect(again.response.status).toBe(409);
    expect(again.error).toMatchObject({
      __typename: "error",
      status: 409,
      code: "conflict",
      entity: "portal.consumer_access",
    });
    expect(await snapshot()).toEqual(before);
    const list = await unwrap(t.client.GET("/portals/{portal_id}/consumer-access", { params: { path } }));
    expect(list.items).toEqual([first]);

    // The same group and template on another portal, or another group on this one, are not duplicates.
    const other = await unwrap(t.client.POST("/portals", { body: { name: "Duplicate elsewhere" } }));
    const elsewhere = await t.client.POST("/portals/{portal_id}/consumer-access", {
      params: { path: { portal_id: other.id } },
      body: grantBody("dup", templateId),
    });
    expect(elsewhere.response.status).toBe(201);
    const otherGroup = await t.client.POST("/portals/{portal_id}/consumer-access", {
      params: { path },
      body: grantBody("dup-2", templateId),
    });
    expect(otherGroup.response.status).toBe(201);
  });

  it("answers concurrent duplicate grants with one 201 and 409s", async () => {
    const { portal, templateId } = await setup("Concurrent duplicate");
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        t.client.POST("/portals/{portal_id}/consumer-access", {
          params: { path: { portal_id: portal.id } },
          body: grantBody("concurrent-dup", templateId),
        }),
      ),
    );
    expect(results.map((r) => r.response.status).sort()).toEqual([201, 409, 409, 409, 409]);
    const rows = await t.db
      .selectFrom("portal_consumer_access")
      .select("id")
      .where("portal_id", "=", portal.id)
      .execute();
    expect(rows).toHaveLength(1);
  });

  it("rejects invalid bodies with field paths, creating neither access nor group", async () => {
    const { portal, templateId } = await setup("Invalid");
    const before = await snapshot();
    const url = `/portals/${portal.id}/consumer-access`;
    const access = { type: "server_deployment_template", server_deployment_template_id: templateId };
    const cases: [unknown, (string | number)[], string][] = [
      [{ consumer_group_id: "g" }, ["access"], "required"],
      [{ access }, ["consumer_group_id"], "required"],
      [{ consumer_group_id: "", access }, ["consumer_group_id"], "min_length"],
      [{ consumer_group_id: "g".repeat(65), access }, ["consumer_group_id"], "max_length"],
      [{ consumer_group_id: 7, access }, ["consumer_group_id"], "type"],
      [{ consumer_group_id: "g", access, extra: 1 }, ["extra"], "additional_property"],
      [{ consumer_group_id: "g", access: { ...access, type: "provider" } }, ["access", "type"], "enum"],
      [
        { consumer_group_id: "g", access: { server_deployment_template_id: templateId } },
        ["access", "type"],
        "required",
      ],
      [
        { consumer_group_id: "g", access: { type: "server_deployment_template" } },
        ["access", "server_deployment_template_id"],
        "required",
      ],
      [
        { consumer_group_id: "g", access: { ...access, server_deployment_template_id: "" } },
        ["access", "server_deployment_template_id"],
        "min_length",
      ],
      [
        { consumer_group_id: "g", access: { ...access, server_deployment_template_id: "s".repeat(65) } },
        ["access", "server_deployment_template_id"],
        "max_length",
      ],
      [{ consumer_group_id: "g", access: { ...access, extra: true } }, ["access", "extra"], "additional_property"],
    ];
    for (const [payload, path, code] of cases) {
      const res = await t.fetch(url, post(payload));
      const label = JSON.stringify(payload).slice(0, 100);
      expect(res.status, label).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body, label).toMatchObject({ code: "invalid_data", entity: "body", status: 400 });
      expect(body.errors, label).toEqual(expect.arrayContaining([expect.objectContaining({ path, code })]));
    }

    const everything = await t.fetch(url, post({}));
    const body = (await everything.json()) as ErrorBody;
    expect(body.errors?.map((e) => e.path)).toEqual(expect.arrayContaining([["consumer_group_id"], ["access"]]));

    for (const payload of [
      { consumer_group_id: "g", access: "server_deployment_template" },
      { consumer_group_id: "g", access: null },
    ]) {
      const res = await t.fetch(url, post(payload));
      expect(res.status, JSON.stringify(payload)).toBe(400);
      const b = (await res.json()) as ErrorBody;
      expect(b.errors?.[0]?.path?.[0], JSON.stringify(payload)).toBe("access");
    }

    await expectBadBodiesRefused(t, url, { consumer_group_id: "g".repeat(70 * 1024) });

    expect(await snapshot()).toEqual(before);
  });

  it("answers 404 for unknown access ids, and for an id that belongs to another portal", async () => {
    const { portal, templateId } = await setup("Item");
    const { portal: other } = await setup("Item other");
    const theirs = await unwrap(
      t.client.POST("/portals/{portal_id}/consumer-access", {
        params: { path: { portal_id: other.id } },
        body: grantBody("item-group", templateId),
      }),
    );
    for (const consumer_access_id of [UNKNOWN_ACCESS, theirs.id]) {
      const path = { portal_id: portal.id, consumer_access_id };
      const get = await t.client.GET("/portals/{portal_id}/consumer-access/{consumer_access_id}", { params: { path } });
      const del = await t.client.DELETE("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
        params: { path },
      });
      for (const r of [get, del]) {
        expect(r.response.status, consumer_access_id).toBe(404);
        expect(r.error).toMatchObject({ code: "not_found", entity: "portal.consumer_access" });
      }
    }
    // The other portal's access survived the attempted delete.
    const still = await unwrap(
      t.client.GET("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
        params: { path: { portal_id: other.id, consumer_access_id: theirs.id } },
      }),
    );
    expect(still).toEqual(theirs);
  });

  it("answers 404 to a second delete of the same access", async () => {
    const { portal, templateId } = await setup("Twice");
    const access = await unwrap(
      t.client.POST("/portals/{portal_id}/consumer-access", {
        params: { path: { portal_id: portal.id } },
        body: grantBody("twice-group", templateId),
      }),
    );
    const path = { portal_id: portal.id, consumer_access_id: access.id };
    const first = await t.client.DELETE("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
      params: { path },
    });
    expect(first.response.status).toBe(200);
    const second = await t.client.DELETE("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
      params: { path },
    });
    expect(second.response.status).toBe(404);
    expect(second.error).toMatchObject({ code: "not_found", entity: "portal.consumer_access" });
  });

  it("answers 404 for the access and for new grants once the portal is deleted", async () => {
    const { portal, templateId } = await setup("Deleted portal");
    const access = await unwrap(
      t.client.POST("/portals/{portal_id}/consumer-access", {
        params: { path: { portal_id: portal.id } },
        body: grantBody("deleted-portal-group", templateId),
      }),
    );
    await unwrap(t.client.DELETE("/portals/{portal_id}", { params: { path: { portal_id: portal.id } } }));
    const path = { portal_id: portal.id, consumer_access_id: access.id };
    const get = await t.client.GET("/portals/{portal_id}/consumer-access/{consumer_access_id}", { params: { path } });
    expect(get.response.status).toBe(404);
    expect(get.error).toMatchObject({ entity: "portal" });
    const create = await t.client.POST("/portals/{portal_id}/consumer-access", {
      params: { path: { portal_id: portal.id } },
      body: grantBody("deleted-portal-group", templateId),
    });
    expect(create.response.status).toBe(404);
  });

  it("validates list query parameters and filters", async () => {
    const { portal } = await setup("Query");
    const many = Array.from({ length: 101 }, (_, i) => `consumer_group_id=g${i}`).join("&");
    const cases: [string, string, (string | number)[] | undefined][] = [
      ["type=provider", "invalid_data", ["type", 0]],
      ["type[]=server_deployment_template&type[]=other", "invalid_data", ["type", 1]],
      ["consumer_group_id=", "invalid_data", ["consumer_group_id", 0]],
      [`consumer_group_id=${"g".repeat(65)}`, "invalid_data", ["consumer_group_id", 0]],
      ["server_deployment_template_id=", "invalid_data", ["server_deployment_template_id", 0]],
      [many, "invalid_data", ["consumer_group_id"]],
      ["group_id=g", "invalid_data", ["group_id"]],
      ["limit=0", "invalid_data", ["limit"]],
      ["limit=101", "invalid_data", ["limit"]],
      ["order=up", "invalid_data", ["order"]],
      ["after=pca_a&before=pca_b", "bad_request", undefined],
      ["cursor=garbage", "bad_request", undefined],
    ];
    for (const [query, code, path] of cases) {
      const res = await t.fetch(`/portals/${portal.id}/consumer-access?${query}`);
      const label = query.slice(0, 80);
      expect(res.status, label).toBe(400);
      const body = (await res.json()) as ErrorBody;
      expect(body, label).toMatchObject({ code, entity: "query" });
      if (path) expect(body.errors, label).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
    }
    const hundred = Array.from({ length: 100 }, (_, i) => `consumer_group_id=g${i}`).join("&");
    expect((await t.fetch(`/portals/${portal.id}/consumer-access?${hundred}`)).status).toBe(200);
  });

  it("answers wrong methods with 405", async () => {
    const collection = await t.fetch(`/portals/${UNKNOWN_PORTAL}/consumer-access`, { method: "DELETE" });
    expect(collection.status).toBe(405);
    expect(collection.headers.get("allow")).toBe("GET, POST");
    const item = await t.fetch(`/portals/${UNKNOWN_PORTAL}/consumer-access/${UNKNOWN_ACCESS}`, { method: "PATCH" });
    expect(item.status).toBe(405);
    expect(item.headers.get("allow")?.split(", ").sort()).toEqual(["DELETE", "GET"]);
  });
});
