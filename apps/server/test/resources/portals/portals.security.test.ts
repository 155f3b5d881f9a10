import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../../support/fixture.ts";
import {
  crudOperations,
  expectNotFound,
  expectSameAsUnknown,
  expectUnauthorizedEverywhere,
} from "../../support/security.ts";
import { seedSessionTemplate } from "../../support/seed.ts";

const t = useTestServer();

describe("portals: security", () => {
  it("refuses every operation without a valid key with 401, and writes nothing", async () => {
    const portal = await unwrap(t.client.POST("/portals", { body: { name: "Guarded" } }));
    await expectUnauthorizedEverywhere(
      t,
      [
        ...crudOperations(
          "/portals",
          `/portals/${portal.id}`,
          { name: "Sneaky" },
          { name: "Hijacked", status: "archived" },
        ),
      ],
      () => t.db.selectFrom("portals").selectAll().orderBy("id").execute(),
    );
  });

  it("authenticates before validating the body or the id", async () => {
    const res = await t.fetch("/portals", {
      auth: false,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(res.status).toBe(401);
    const unknown = await t.fetch("/portals/ptl_00000000000000000000000000", { auth: false });
    expect(unknown.status).toBe(401);
  });

  it("keeps tenants apart: another instance's portal is a 404 on get, patch and delete, and never listed", async () => {
    const other = await t.createTenant("other");
    const theirs = await unwrap(
      other.client.POST("/portals", { body: { name: "Theirs", description: "Private to the other tenant" } }),
    );
    const mine = await unwrap(t.client.POST("/portals", { body: { name: "Mine" } }));
    const path = { portal_id: theirs.id };

    const get = await t.client.GET("/portals/{portal_id}", { params: { path } });
    const patch = await t.client.PATCH("/portals/{portal_id}", {
      params: { path },
      body: { name: "Taken over", brand_name: "Evil", status: "archived", session_expiry_time_in_seconds: 300 },
    });
    const del = await t.client.DELETE("/portals/{portal_id}", { params: { path } });
    await expectNotFound([get, patch, del], "portal", ["Theirs"]);
    // Indistinguishable from an id that does not exist at all.
    const unknown = await t.client.GET("/portals/{portal_id}", {
      params: { path: { portal_id: "ptl_00000000000000000000000000" } },
    });
    expectSameAsUnknown(get, theirs.id, unknown, "ptl_00000000000000000000000000");

    const myList = await unwrap(t.client.GET("/portals", { params: { query: { limit: 100 } } }));
    expect(myList.items.map((p) => p.id)).toContain(mine.id);
    expect(myList.items.map((p) => p.id)).not.toContain(theirs.id);
    const paged: string[] = [];
    for await (const p of t.client.paginate("/portals", { params: { query: { limit: 1 } } })) paged.push(p.id);
    expect(paged).not.toContain(theirs.id);
    // A bound taken from another tenant's id reveals nothing of theirs either.
    const afterTheirs = await unwrap(t.client.GET("/portals", { params: { query: { before: theirs.id } } }));
    expect(afterTheirs.items.map((p) => p.id)).not.toContain(theirs.id);

    const theirList = await unwrap(other.client.GET("/portals"));
    expect(theirList.items.map((p) => p.id)).toEqual([theirs.id]);

    // Their portal is untouched, and still readable by its owner.
    expect(await unwrap(other.client.GET("/portals/{portal_id}", { params: { path } }))).toEqual(theirs);
  });

  it("creates portals in the caller's instance only", async () => {
    const tenant = await t.createTenant("creator");
    const created = await unwrap(tenant.client.POST("/portals", { body: { name: "Owned" } }));
    const row = await t.db
      .selectFrom("portals")
      .select("instance_id")
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row.instance_id).toBe(tenant.instanceId);
    const res = await t.client.GET("/portals/{portal_id}", { params: { path: { portal_id: created.id } } });
    expect(res.response.status).toBe(404);
  });

  it("serves the public page without a key and without consumer or tenant identifiers", async () => {
    const portal = await unwrap(t.client.POST("/portals", { body: { name: "Public page" } }));
    const templateId = await seedSessionTemplate(t.db, t.tenant.instanceId, "Shared template");
    const access = await unwrap(
      t.client.POST("/portals/{portal_id}/consumer-access", {
        params: { path: { portal_id: portal.id } },
        body: {
          consumer_group_id: "secret-group-name",
          access: { type: "server_deployment_template", server_deployment_template_id: templateId },
        },
      }),
    );
    const res = await t.fetch(`/p/${portal.id}`, { auth: false });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain("Sign in to Public page");
    // Until someone signs in, not even the template's name is shown.
    for (const secret of [
      "Shared template",
      "secret-group-name",
      access.id,
      templateId,
      t.tenant.instanceId,
      t.tenant.apiKey,
    ]) {
      expect(html).not.toContain(secret);
    }
  });
});
