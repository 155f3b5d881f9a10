import { type components, unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../../support/fixture.ts";
import { seedSessionTemplate } from "../../support/seed.ts";
import type { Tenant } from "../../support/server.ts";

type AccessList = components["schemas"]["PortalConsumerAccessList"];

const t = useTestServer();

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function createPortal(name: string, tenant: Tenant = t.tenant) {
  return unwrap(tenant.client.POST("/portals", { body: { name } }));
}

async function grant(portalId: string, groupId: string, templateId: string, tenant: Tenant = t.tenant) {
  return unwrap(
    tenant.client.POST("/portals/{portal_id}/consumer-access", {
      params: { path: { portal_id: portalId } },
      body: {
        consumer_group_id: groupId,
        access: { type: "server_deployment_template", server_deployment_template_id: templateId },
      },
    }),
  );
}

async function groupRows(instanceId: string) {
  return t.db
    .selectFrom("consumer_groups")
    .select(["id", "status"])
    .where("instance_id", "=", instanceId)
    .orderBy("id")
    .execute();
}

/** A raw GET of the list, for the query forms the typed client does not send. */
async function listRaw(portalId: string, query: string) {
  const res = await t.fetch(`/portals/${portalId}/consumer-access?${query}`);
  expect(res.status, query).toBe(200);
  return ((await res.json()) as AccessList).items.map((a) => a.id);
}

describe("portal consumer access: happy paths", () => {
  it("grants access with the documented shape, creating the group on first reference", async () => {
    const tenant = await t.createTenant("shape");
    const portal = await createPortal("Shape", tenant);
    const templateId = await seedSessionTemplate(t.db, tenant.instanceId, "Weather assistant");
    expect(await groupRows(tenant.instanceId)).toEqual([]);

    const res = await tenant.client.POST("/portals/{portal_id}/consumer-access", {
      params: { path: { portal_id: portal.id } },
      body: {
        consumer_group_id: "cgr_partners",
        access: { type: "server_deployment_template", server_deployment_template_id: templateId },
      },
    });
    expect(res.response.status).toBe(201);
    const created = res.data;
    if (!created) throw new Error("no body");
    expect(created).toEqual({
      object: "consumer.group",
      id: expect.stringMatching(/^pca_[0-9a-z]{26}$/),
      portal_id: portal.id,
      access: {
        type: "server_deployment_template",
        server_deployment_template: {
          object: "server.server_deployment.template",
          id: templateId,
          name: "Weather assistant",
          server: null,
        },
      },
      consumer_group: { object: "consumer.group", id: "cgr_partners", status: "active" },
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(created.created_at).toBe(created.updated_at);
    expect(await groupRows(tenant.instanceId)).toEqual([{ id: "cgr_partners", status: "active" }]);

    const row = await t.db
      .selectFrom("portal_consumer_access")
      .selectAll()
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      instance_id: tenant.instanceId,
      portal_id: portal.id,
      consumer_group_id: "cgr_partners",
      access_type: "server_deployment_template",
      session_template_id: templateId,
    });

    const fetched = await unwrap(
      tenant.client.GET("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
        params: { path: { portal_id: portal.id, consumer_access_id: created.id } },
      }),
    );
    expect(fetched).toEqual(created);
  });

  it("reuses an existing group on later references, on the same and on other portals", async () => {
    const tenant = await t.createTenant("reuse");
    const portal = await createPortal("One", tenant);
    const second = await createPortal("Two", tenant);
    const a = await seedSessionTemplate(t.db, tenant.instanceId, "A");
    const b = await seedSessionTemplate(t.db, tenant.instanceId, "B");

    const first = await grant(portal.id, "team-x", a, tenant);
    const [created] = await t.db
      .selectFrom("consumer_groups")
      .selectAll()
      .where("instance_id", "=", tenant.instanceId)
      .execute();

    const again = await grant(portal.id, "team-x", b, tenant);
    const elsewhere = await grant(second.id, "team-x", a, tenant);
    for (const access of [first, again, elsewhere]) {
      expect(access.consumer_group).toEqual({ object: "consumer.group", id: "team-x", status: "active" });
    }
    const rows = await t.db
      .selectFrom("consumer_groups")
      .selectAll()
      .where("instance_id", "=", tenant.instanceId)
      .execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toEqual(created);

    // A new name makes a second group.
    await grant(portal.id, "team-y", a, tenant);
    expect((await groupRows(tenant.instanceId)).map((g) => g.id)).toEqual(["team-x", "team-y"]);
  });

  it("creates a new group once when concurrent grants name it first", async () => {
    const tenant = await t.createTenant("concurrent-groups");
    const portal = await createPortal("Concurrent", tenant);
    const templates: string[] = [];
    for (let i = 0; i < 5; i++) templates.push(await seedSessionTemplate(t.db, tenant.instanceId, `Concurrent ${i}`));
    const results = await Promise.all(
      templates.map((templateId) =>
        tenant.client.POST("/portals/{portal_id}/consumer-access", {
          params: { path: { portal_id: portal.id } },
          body: {
            consumer_group_id: "brand-new",
            access: { type: "server_deployment_template", server_deployment_template_id: templateId },
          },
        }),
      ),
    );
    expect(results.map((r) => r.response.status)).toEqual(Array(5).fill(201));
    expect(await groupRows(tenant.instanceId)).toEqual([{ id: "brand-new", status: "active" }]);
  });

  it("accepts any 1 to 64 character group id as given", async () => {
    const portal = await createPortal("Ids");
    const templateId = await seedSessionTemplate(t.db, t.tenant.instanceId, "Ids template");
    for (const groupId of ["g", "x".repeat(64), "Team Ünïcode / 1", "CaseSensitive", "casesensitive"]) {
      const access = await grant(portal.id, groupId, templateId);
      expect(access.consumer_group.id).toBe(groupId);
    }
    const ids = (await groupRows(t.tenant.instanceId)).map((g) => g.id);
    expect(ids).toEqual(expect.arrayContaining(["CaseSensitive", "casesensitive"]));
  });

  it("revokes access, returns it as it was, and keeps the group", async () => {
    const portal = await createPortal("Revoke");
    const templateId = await seedSessionTemplate(t.db, t.tenant.instanceId, "Revoke template");
    const access = await grant(portal.id, "revoke-group", templateId);
    const path = { portal_id: portal.id, consumer_access_id: access.id };

    const res = await t.client.DELETE("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
      params: { path },
    });
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual(access);

    const gone = await t.client.GET("/portals/{portal_id}/consumer-access/{consumer_access_id}", { params: { path } });
    expect(gone.response.status).toBe(404);
    expect(await t.db.selectFrom("portal_consumer_access").select("id").where("id", "=", access.id).execute()).toEqual(
      [],
    );
    const group = await t.db
      .selectFrom("consumer_groups")
      .select(["id", "status"])
      .where("instance_id", "=", t.tenant.instanceId)
      .where("id", "=", "revoke-group")
      .execute();
    expect(group).toEqual([{ id: "revoke-group", status: "active" }]);

    // The same grant can be made again, under a new id.
    const regranted = await grant(portal.id, "revoke-group", templateId);
    expect(regranted.id).not.toBe(access.id);
  });

  it("drops access when its session template is deleted", async () => {
    const portal = await createPortal("Template gone");
    const templateId = await seedSessionTemplate(t.db, t.tenant.instanceId, "Ephemeral");
    const access = await grant(portal.id, "ephemeral-group", templateId);
    await t.db.deleteFrom("session_templates").where("id", "=", templateId).execute();
    const res = await t.client.GET("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
      params: { path: { portal_id: portal.id, consumer_access_id: access.id } },
    });
    expect(res.response.status).toBe(404);
    const list = await unwrap(
      t.client.GET("/portals/{portal_id}/consumer-access", { params: { path: { portal_id: portal.id } } }),
    );
    expect(list.items).toEqual([]);
  });

  it("lists a portal's access only, oldest first, with pagination and order", async () => {
    const portal = await createPortal("Paging");
    const other = await createPortal("Paging other");
    const templates: string[] = [];
    for (let i = 0; i < 5; i++) templates.push(await seedSessionTemplate(t.db, t.tenant.instanceId, `Paging ${i}`));
    const ids: string[] = [];
    for (const templateId of templates) ids.push((await grant(portal.id, "paging-group", templateId)).id);
    const foreign = await grant(other.id, "paging-group", templates[0] ?? "");
    const path = { portal_id: portal.id };

    const all = await unwrap(t.client.GET("/portals/{portal_id}/consumer-access", { params: { path } }));
    expect(all.items.map((a) => a.id)).toEqual(ids);
    expect(all.items.map((a) => a.id)).not.toContain(foreign.id);
    expect(all.items.every((a) => a.portal_id === portal.id)).toBe(true);
    expect(all.items[2]?.access.server_deployment_template.name).toBe("Paging 2");
    expect(all.pagination).toEqual({
      has_more_before: false,
      has_more_after: false,
      next_cursor: null,
      previous_cursor: null,
    });

    const first = await unwrap(
      t.client.GET("/portals/{portal_id}/consumer-access", { params: { path, query: { limit: 2 } } }),
    );
    expect(first.items.map((a) => a.id)).toEqual(ids.slice(0, 2));
    expect(first.pagination).toMatchObject({ has_more_before: false, has_more_after: true });
    const second = await unwrap(
      t.client.GET("/portals/{portal_id}/consumer-access", {
        params: { path, query: { limit: 2, cursor: first.pagination.next_cursor ?? "" } },
      }),
    );
    expect(second.items.map((a) => a.id)).toEqual(ids.slice(2, 4));
    expect(second.pagination).toMatchObject({ has_more_before: true, has_more_after: true });

    const desc = await unwrap(
      t.client.GET("/portals/{portal_id}/consumer-access", { params: { path, query: { order: "desc" } } }),
    );
    expect(desc.items.map((a) => a.id)).toEqual([...ids].reverse());

    const after = await unwrap(
      t.client.GET("/portals/{portal_id}/consumer-access", { params: { path, query: { after: ids[3] } } }),
    );
    expect(after.items.map((a) => a.id)).toEqual([ids[4]]);
    expect(after.pagination).toMatchObject({ has_more_before: true, has_more_after: false });

    const walked: string[] = [];
    for await (const a of t.client.paginate("/portals/{portal_id}/consumer-access", {
      params: { path, query: { limit: 2 } },
    })) {
      walked.push(a.id);
    }
    expect(walked).toEqual(ids);

    const empty = await unwrap(
      t.client.GET("/portals/{portal_id}/consumer-access", {
        params: { path: { portal_id: (await createPortal("Empty")).id } },
      }),
    );
    expect(empty.items).toEqual([]);
  });

  it("filters by consumer group, template and type in every query form, combining filters with AND", async () => {
    const portal = await createPortal("Filters");
    const other = await createPortal("Filters other");
    const t1 = await seedSessionTemplate(t.db, t.tenant.instanceId, "Filter T1");
    const t2 = await seedSessionTemplate(t.db, t.tenant.instanceId, "Filter T2");
    const t3 = await seedSessionTemplate(t.db, t.tenant.instanceId, "Filter T3");
    const a1 = (await grant(portal.id, "fa", t1)).id;
    const a2 = (await grant(portal.id, "fa", t2)).id;
    const b1 = (await grant(portal.id, "fb", t1)).id;
    const c3 = (await grant(portal.id, "fc", t3)).id;
    await grant(other.id, "fa", t1);
    const path = { portal_id: portal.id };

    // Typed client (explode form).
    const typed = await unwrap(
      t.client.GET("/portals/{portal_id}/consumer-access", {
        params: { path, query: { consumer_group_id: ["fa", "fc"] } },
      }),
    );
    expect(typed.items.map((a) => a.id)).toEqual([a1, a2, c3]);

    const group = "consumer_group_id";
    expect(await listRaw(portal.id, `${group}=fa`)).toEqual([a1, a2]);
    expect(await listRaw(portal.id, `${group}=fa&${group}=fb`)).toEqual([a1, a2, b1]);
    expect(await listRaw(portal.id, `${group}[]=fb`)).toEqual([b1]);
    expect(await listRaw(portal.id, `${group}%5B%5D=fb&${group}%5B%5D=fc`)).toEqual([b1, c3]);
    expect(await listRaw(portal.id, `${group}[0]=fa&${group}[1]=fc`)).toEqual([a1, a2, c3]);
    expect(await listRaw(portal.id, `${group}[1]=fc&${group}[0]=fb`)).toEqual([b1, c3]);
    expect(await listRaw(portal.id, `${group}=nobody`)).toEqual([]);

    const template = "server_deployment_template_id";
    expect(await listRaw(portal.id, `${template}=${t1}`)).toEqual([a1, b1]);
    expect(await listRaw(portal.id, `${template}=${t1}&${template}=${t3}`)).toEqual([a1, b1, c3]);
    expect(await listRaw(portal.id, `${template}[]=${t2}`)).toEqual([a2]);
    expect(await listRaw(portal.id, `${template}[0]=${t2}&${template}[1]=${t3}`)).toEqual([a2, c3]);

    const all = [a1, a2, b1, c3];
    expect(await listRaw(portal.id, "type=server_deployment_template")).toEqual(all);
    expect(await listRaw(portal.id, "type=server_deployment_template&type=server_deployment_template")).toEqual(all);
    expect(await listRaw(portal.id, "type[]=server_deployment_template")).toEqual(all);
    expect(await listRaw(portal.id, "type[0]=server_deployment_template&type[1]=server_deployment_template")).toEqual(
      all,
    );

    // Different filters combine with AND.
    expect(await listRaw(portal.id, `${group}=fa&${template}=${t1}`)).toEqual([a1]);
    expect(await listRaw(portal.id, `${group}[]=fa&${group}[]=fb&${template}=${t1}`)).toEqual([a1, b1]);
    expect(await listRaw(portal.id, `${group}=fc&${template}=${t1}&type=server_deployment_template`)).toEqual([]);

    // Filters page like any list.
    const page1 = await unwrap(
      t.client.GET("/portals/{portal_id}/consumer-access", {
        params: { path, query: { server_deployment_template_id: [t1, t2], limit: 2 } },
      }),
    );
    expect(page1.items.map((a) => a.id)).toEqual([a1, a2]);
    expect(page1.pagination.has_more_after).toBe(true);
    const page2 = await unwrap(
      t.client.GET("/portals/{portal_id}/consumer-access", {
        params: {
          path,
          query: { server_deployment_template_id: [t1, t2], limit: 2, cursor: page1.pagination.next_cursor ?? "" },
        },
      }),
    );
    expect(page2.items.map((a) => a.id)).toEqual([b1]);
    expect(page2.pagination.has_more_after).toBe(false);
  });
});
