import { type components, unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../../support/fixture.ts";
import {
  expectCrossTenantNotFound,
  expectNotFound,
  expectUnauthorizedEverywhere,
  json,
} from "../../support/security.ts";
import { seedSessionTemplate } from "../../support/seed.ts";
import type { Tenant } from "../../support/server.ts";

type AccessList = components["schemas"]["PortalConsumerAccessList"];

const t = useTestServer();

const grantBody = (groupId: string, templateId: string) => ({
  consumer_group_id: groupId,
  access: { type: "server_deployment_template" as const, server_deployment_template_id: templateId },
});

async function grant(tenant: Tenant, portalId: string, groupId: string, templateId: string) {
  return unwrap(
    tenant.client.POST("/portals/{portal_id}/consumer-access", {
      params: { path: { portal_id: portalId } },
      body: grantBody(groupId, templateId),
    }),
  );
}

/** A tenant with a portal, a template, and one grant of it. */
async function tenantWithAccess(name: string, tenant?: Tenant) {
  const owner = tenant ?? (await t.createTenant(name));
  const portal = await unwrap(owner.client.POST("/portals", { body: { name: `${name} portal` } }));
  const templateId = await seedSessionTemplate(t.db, owner.instanceId, `${name} template`);
  const access = await grant(owner, portal.id, `${name}-group`, templateId);
  return { owner, portal, templateId, access };
}

async function snapshot() {
  const access = await t.db.selectFrom("portal_consumer_access").selectAll().orderBy("id").execute();
  const groups = await t.db.selectFrom("consumer_groups").selectAll().orderBy("instance_id").orderBy("id").execute();
  return { access, groups };
}

describe("portal consumer access: security", () => {
  it("refuses every operation without a valid key with 401, and writes nothing", async () => {
    const { portal, templateId, access } = await tenantWithAccess("guarded", t.tenant);
    const base = `/portals/${portal.id}/consumer-access`;
    await expectUnauthorizedEverywhere(
      t,
      [
        [base, { method: "GET" }],
        [base, json("POST", grantBody("intruders", templateId))],
        [`${base}/${access.id}`, { method: "GET" }],
        [`${base}/${access.id}`, { method: "DELETE" }],
      ],
      snapshot,
    );
  });

  it("treats another instance's portal as unknown on every operation, and leaves its access alone", async () => {
    const them = await tenantWithAccess("them");
    const myTemplate = await seedSessionTemplate(t.db, t.tenant.instanceId, "My template");
    const path = { portal_id: them.portal.id };
    const itemPath = { ...path, consumer_access_id: them.access.id };

    const attempts = async () => {
      const list = await t.client.GET("/portals/{portal_id}/consumer-access", { params: { path } });
      const createWithMine = await t.client.POST("/portals/{portal_id}/consumer-access", {
        params: { path },
        body: grantBody("mine", myTemplate),
      });
      const createWithTheirs = await t.client.POST("/portals/{portal_id}/consumer-access", {
        params: { path },
        body: grantBody("mine", them.templateId),
      });
      const get = await t.client.GET("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
        params: { path: itemPath },
      });
      const del = await t.client.DELETE("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
        params: { path: itemPath },
      });
      return [list, createWithMine, createWithTheirs, get, del];
    };
    await expectCrossTenantNotFound(t, { attempts, entity: "portal", hidden: ["them-group"], unchanged: snapshot });

    const theirs = await unwrap(
      them.owner.client.GET("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
        params: { path: itemPath },
      }),
    );
    expect(theirs).toEqual(them.access);
  });

  it("treats another instance's access id on my own portal as unknown", async () => {
    const them = await tenantWithAccess("their-access");
    const mine = await tenantWithAccess("mine-access", t.tenant);
    const path = { portal_id: mine.portal.id, consumer_access_id: them.access.id };
    const get = await t.client.GET("/portals/{portal_id}/consumer-access/{consumer_access_id}", { params: { path } });
    const del = await t.client.DELETE("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
      params: { path },
    });
    await expectNotFound([get, del], "portal.consumer_access", ["their-access-group"]);
    const row = await t.db.selectFrom("portal_consumer_access").select("id").where("id", "=", them.access.id).execute();
    expect(row).toHaveLength(1);
  });

  it("refuses to grant another instance's session template on my portal, creating no group", async () => {
    const them = await tenantWithAccess("template-owner");
    const portal = await unwrap(t.client.POST("/portals", { body: { name: "Borrower" } }));
    await expectCrossTenantNotFound(t, {
      attempts: async () => [
        await t.client.POST("/portals/{portal_id}/consumer-access", {
          params: { path: { portal_id: portal.id } },
          body: grantBody("borrowers", them.templateId),
        }),
      ],
      entity: "session.template",
      hidden: ["template-owner template"],
      unchanged: snapshot,
    });
    const groups = await t.db
      .selectFrom("consumer_groups")
      .select("id")
      .where("instance_id", "=", t.tenant.instanceId)
      .where("id", "=", "borrowers")
      .execute();
    expect(groups).toEqual([]);

    // Nor does its name reach my portal's public page.
    const html = await (await t.fetch(`/p/${portal.id}`, { auth: false })).text();
    expect(html).not.toContain("template-owner template");
  });

  it("keeps consumer groups per instance: the same group id in two instances is two groups", async () => {
    const a = await t.createTenant("groups-a");
    const b = await t.createTenant("groups-b");
    const portalA = await unwrap(a.client.POST("/portals", { body: { name: "A" } }));
    const portalB = await unwrap(b.client.POST("/portals", { body: { name: "B" } }));
    const templateA = await seedSessionTemplate(t.db, a.instanceId, "A template");
    const templateB = await seedSessionTemplate(t.db, b.instanceId, "B template");

    const accessA = await grant(a, portalA.id, "shared-name", templateA);
    const accessB = await grant(b, portalB.id, "shared-name", templateB);
    expect(accessA.consumer_group.id).toBe("shared-name");
    expect(accessB.consumer_group.id).toBe("shared-name");

    const rows = await t.db
      .selectFrom("consumer_groups")
      .select(["instance_id", "id"])
      .where("id", "=", "shared-name")
      .where("instance_id", "in", [a.instanceId, b.instanceId])
      .orderBy("instance_id")
      .execute();
    expect(rows.map((r) => r.instance_id).sort()).toEqual([a.instanceId, b.instanceId].sort());

    // Filtering by the shared group id shows each instance only its own access.
    const res = await fetch(`${t.url}/portals/${portalA.id}/consumer-access?consumer_group_id=shared-name`, {
      headers: { authorization: `Bearer ${a.apiKey}` },
    });
    const list = (await res.json()) as AccessList;
    expect(list.items.map((x) => x.id)).toEqual([accessA.id]);

    // Filtering by another instance's template id finds nothing.
    const byTheirTemplate = await unwrap(
      a.client.GET("/portals/{portal_id}/consumer-access", {
        params: { path: { portal_id: portalA.id }, query: { server_deployment_template_id: [templateB] } },
      }),
    );
    expect(byTheirTemplate.items).toEqual([]);
  });
});
