import { unwrap } from "@toolplane/client";
import { describe, expect, it } from "vitest";
import { acceptInvitation, invite, PageVisitor } from "../../portal/support.ts";
import { useTestServer } from "../../support/fixture.ts";
import { seedSessionTemplate } from "../../support/seed.ts";

const t = useTestServer();

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function grant(portalId: string, groupId: string, templateId: string) {
  return unwrap(
    t.client.POST("/portals/{portal_id}/consumer-access", {
      params: { path: { portal_id: portalId } },
      body: {
        consumer_group_id: groupId,
        access: { type: "server_deployment_template", server_deployment_template_id: templateId },
      },
    }),
  );
}

/** The public page (the sign-in page), fetched without any key. */
async function page(portalId: string) {
  const res = await t.fetch(`/p/${portalId}`, { auth: false });
  return { res, html: await res.text() };
}

/** The marketplace page as a member of the group sees it, signed in with an invitation. */
async function memberPage(portalId: string, groupId: string) {
  const visitor = new PageVisitor(t.url);
  await acceptInvitation(visitor, (await invite(t.tenant, portalId, groupId)).url ?? "");
  return { visitor, ...(await visitor.get(`/p/${portalId}`)) };
}

describe("portals: happy paths", () => {
  it("creates a portal with the documented defaults and reads it back", async () => {
    const res = await t.client.POST("/portals", {
      body: { name: "Acme Marketplace", description: "What Acme offers" },
    });
    expect(res.response.status).toBe(201);
    const created = res.data;
    if (!created) throw new Error("no body");
    expect(created).toEqual({
      object: "portal",
      id: expect.stringMatching(/^ptl_[0-9a-z]{26}$/),
      status: "active",
      name: "Acme Marketplace",
      slug: "acme-marketplace",
      description: "What Acme offers",
      auth: { object: "portal.auth", session_expiry_time_in_seconds: 86400, oidc: null },
      urls: [{ type: "portal", url: expect.stringMatching(new RegExp(`/p/${created.id}$`)) }],
      brand: { name: null, logo_url: null, primary_color: null, background_color: null },
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
    });
    expect(created.created_at).toBe(created.updated_at);
    expect(created.urls).toHaveLength(1);
    expect(() => new URL(created.urls[0]?.url ?? "")).not.toThrow();

    const fetched = await unwrap(t.client.GET("/portals/{portal_id}", { params: { path: { portal_id: created.id } } }));
    expect(fetched).toEqual(created);

    const row = await t.db.selectFrom("portals").selectAll().where("id", "=", created.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      instance_id: t.tenant.instanceId,
      status: "active",
      slug: "acme-marketplace",
      brand_name: null,
      session_expiry_seconds: 86400,
    });
  });

  it("defaults a missing description to null", async () => {
    const created = await unwrap(t.client.POST("/portals", { body: { name: "No description" } }));
    expect(created.description).toBeNull();
  });

  it("derives slugs from names and keeps them unique within the instance", async () => {
    const names = ["Slug Test", "slug  test!", "SLUG-TEST", "Crème Brûlée", "!!!"];
    const slugs: string[] = [];
    for (const name of names) slugs.push((await unwrap(t.client.POST("/portals", { body: { name } }))).slug);
    expect(slugs).toEqual(["slug-test", "slug-test-2", "slug-test-3", "creme-brulee", "item"]);

    // Another instance has its own slug space.
    const other = await t.createTenant("slugs");
    const theirs = await unwrap(other.client.POST("/portals", { body: { name: "Slug Test" } }));
    expect(theirs.slug).toBe("slug-test");
  });

  it("gives concurrent creates of one name distinct slugs", async () => {
    const tenant = await t.createTenant("race");
    const results = await Promise.all(
      Array.from({ length: 8 }, () => tenant.client.POST("/portals", { body: { name: "Race" } })),
    );
    expect(results.map((r) => r.response.status)).toEqual(Array(8).fill(201));
    const slugs = results.map((r) => r.data?.slug ?? "").sort();
    expect(slugs).toEqual(["race", ...Array.from({ length: 7 }, (_, i) => `race-${i + 2}`)].sort());
  });

  it("frees the slug of a deleted portal", async () => {
    const tenant = await t.createTenant("slug-reuse");
    const first = await unwrap(tenant.client.POST("/portals", { body: { name: "Reuse" } }));
    const second = await unwrap(tenant.client.POST("/portals", { body: { name: "Reuse" } }));
    expect([first.slug, second.slug]).toEqual(["reuse", "reuse-2"]);
    await unwrap(tenant.client.DELETE("/portals/{portal_id}", { params: { path: { portal_id: first.id } } }));
    const third = await unwrap(tenant.client.POST("/portals", { body: { name: "Reuse" } }));
    expect(third.slug).toBe("reuse");
  });

  it("updates every field, keeps the slug, and clears description and brand name with null", async () => {
    const created = await unwrap(t.client.POST("/portals", { body: { name: "Before", description: "Old" } }));
    const path = { portal_id: created.id };

    const updated = await unwrap(
      t.client.PATCH("/portals/{portal_id}", {
        params: { path },
        body: {
          name: "After",
          description: "New",
          brand_name: "Acme Tools",
          session_expiry_time_in_seconds: 3600,
          status: "archived",
        },
      }),
    );
    expect(updated).toEqual({
      ...created,
      name: "After",
      description: "New",
      brand: { ...created.brand, name: "Acme Tools" },
      auth: { object: "portal.auth", session_expiry_time_in_seconds: 3600, oidc: null },
      status: "archived",
      updated_at: expect.stringMatching(ISO),
    });
    expect(updated.slug).toBe("before");
    expect(updated.created_at).toBe(created.created_at);
    expect(updated.updated_at >= created.updated_at).toBe(true);
    expect(await unwrap(t.client.GET("/portals/{portal_id}", { params: { path } }))).toEqual(updated);

    const cleared = await unwrap(
      t.client.PATCH("/portals/{portal_id}", {
        params: { path },
        body: { description: null, brand_name: null, status: "active" },
      }),
    );
    expect(cleared).toMatchObject({
      name: "After",
      description: null,
      brand: { name: null },
      status: "active",
      auth: { session_expiry_time_in_seconds: 3600 },
    });
    const row = await t.db.selectFrom("portals").selectAll().where("id", "=", created.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ brand_name: null, description: null, session_expiry_seconds: 3600, status: "active" });
  });

  it("sets the brand and the OIDC sign-in; the client secret is write-only and stored encrypted", async () => {
    const created = await unwrap(t.client.POST("/portals", { body: { name: "Branded" } }));
    const path = { portal_id: created.id };
    const logo = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4=";
    const secret = "oidc-client-secret-7f3a9c";
    const updated = await unwrap(
      t.client.PATCH("/portals/{portal_id}", {
        params: { path },
        body: {
          brand: { name: "Acme", logo_url: logo, primary_color: "#0b6e4f", background_color: "#ffffff" },
          auth: {
            session_expiry_time_in_seconds: 600,
            oidc: {
              issuer: "https://login.example.com",
              client_id: "portal-client",
              client_secret: secret,
              scopes: ["email", "groups"],
              group_mapping: [{ claim_value: "eng", consumer_group_id: "cgr_engineering" }],
            },
          },
        },
      }),
    );
    expect(updated.brand).toEqual({
      name: "Acme",
      logo_url: logo,
      primary_color: "#0b6e4f",
      background_color: "#ffffff",
    });
    expect(updated.auth).toEqual({
      object: "portal.auth",
      session_expiry_time_in_seconds: 600,
      oidc: {
        issuer: "https://login.example.com",
        client_id: "portal-client",
        has_client_secret: true,
        scopes: ["openid", "email", "groups"],
        groups_claim: "groups",
        group_mapping: [{ claim_value: "eng", consumer_group_id: "cgr_engineering" }],
        redirect_uri: `${created.urls[0]?.url}/sign-in/oidc/callback`,
      },
    });
    expect(JSON.stringify(updated)).not.toContain(secret);
    const row = await t.db.selectFrom("portals").selectAll().where("id", "=", created.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(secret);

    // Changing other settings keeps the stored secret; null turns single sign-on off.
    const kept = await unwrap(
      t.client.PATCH("/portals/{portal_id}", {
        params: { path },
        body: { auth: { oidc: { issuer: "https://login.example.com", client_id: "other" } } },
      }),
    );
    expect(kept.auth.oidc).toMatchObject({
      client_id: "other",
      has_client_secret: true,
      scopes: ["openid", "email", "profile"],
    });
    const off = await unwrap(
      t.client.PATCH("/portals/{portal_id}", { params: { path }, body: { auth: { oidc: null } } }),
    );
    expect(off.auth.oidc).toBeNull();

    const insecure = await t.client.PATCH("/portals/{portal_id}", {
      params: { path },
      body: { auth: { oidc: { issuer: "http://login.example.com", client_id: "c" } } },
    });
    expect(insecure.response.status).toBe(400);
  });

  it("leaves omitted fields alone; an empty body only touches updated_at", async () => {
    const created = await unwrap(t.client.POST("/portals", { body: { name: "Partial", description: "Kept" } }));
    const path = { portal_id: created.id };
    await unwrap(t.client.PATCH("/portals/{portal_id}", { params: { path }, body: { brand_name: "Brand" } }));
    const renamed = await unwrap(t.client.PATCH("/portals/{portal_id}", { params: { path }, body: { name: "P2" } }));
    expect(renamed).toMatchObject({
      name: "P2",
      description: "Kept",
      brand: { name: "Brand" },
      status: "active",
      auth: { session_expiry_time_in_seconds: 86400 },
    });
    const same = await unwrap(t.client.PATCH("/portals/{portal_id}", { params: { path }, body: {} }));
    expect({ ...same, updated_at: "" }).toEqual({ ...renamed, updated_at: "" });
  });

  it("accepts the session expiry bounds 300 and 2592000", async () => {
    const created = await unwrap(t.client.POST("/portals", { body: { name: "Bounds" } }));
    const path = { portal_id: created.id };
    for (const seconds of [300, 2592000]) {
      const res = await unwrap(
        t.client.PATCH("/portals/{portal_id}", { params: { path }, body: { session_expiry_time_in_seconds: seconds } }),
      );
      expect(res.auth).toEqual({ object: "portal.auth", session_expiry_time_in_seconds: seconds, oidc: null });
    }
  });

  it("deletes a portal, returns it as it was, and cascades its consumer access but keeps the groups", async () => {
    const portal = await unwrap(t.client.POST("/portals", { body: { name: "Doomed" } }));
    const keep = await unwrap(t.client.POST("/portals", { body: { name: "Survivor" } }));
    const templateId = await seedSessionTemplate(t.db, t.tenant.instanceId, "Doomed template");
    const a = await grant(portal.id, "doomed-group-a", templateId);
    const b = await grant(portal.id, "doomed-group-b", templateId);
    const survivor = await grant(keep.id, "doomed-group-a", templateId);

    const path = { portal_id: portal.id };
    const current = await unwrap(t.client.GET("/portals/{portal_id}", { params: { path } }));
    const res = await t.client.DELETE("/portals/{portal_id}", { params: { path } });
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual(current);

    const gone = await t.client.GET("/portals/{portal_id}", { params: { path } });
    expect(gone.response.status).toBe(404);
    expect(await t.db.selectFrom("portals").select("id").where("id", "=", portal.id).execute()).toEqual([]);
    const accessRows = await t.db
      .selectFrom("portal_consumer_access")
      .select("id")
      .where("id", "in", [a.id, b.id, survivor.id])
      .execute();
    expect(accessRows.map((r) => r.id)).toEqual([survivor.id]);
    const groups = await t.db
      .selectFrom("consumer_groups")
      .select("id")
      .where("instance_id", "=", t.tenant.instanceId)
      .where("id", "in", ["doomed-group-a", "doomed-group-b"])
      .orderBy("id")
      .execute();
    expect(groups.map((g) => g.id)).toEqual(["doomed-group-a", "doomed-group-b"]);
    const list = await unwrap(t.client.GET("/portals", { params: { query: { limit: 100 } } }));
    expect(list.items.map((p) => p.id)).not.toContain(portal.id);
    expect((await page(portal.id)).res.status).toBe(404);
  });

  it("lists active and archived portals, paging with limit, cursors, after, before and order", async () => {
    const tenant = await t.createTenant("paging");
    const empty = await unwrap(tenant.client.GET("/portals"));
    expect(empty).toEqual({
      items: [],
      pagination: { has_more_before: false, has_more_after: false, next_cursor: null, previous_cursor: null },
    });

    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      ids.push((await unwrap(tenant.client.POST("/portals", { body: { name: `Portal ${i}` } }))).id);
    }
    await unwrap(
      tenant.client.PATCH("/portals/{portal_id}", {
        params: { path: { portal_id: ids[3] ?? "" } },
        body: { status: "archived" },
      }),
    );

    const all = await unwrap(tenant.client.GET("/portals"));
    expect(all.items.map((p) => p.id)).toEqual(ids);
    expect(all.items[3]).toMatchObject({ status: "archived", object: "portal" });
    expect(all.pagination).toEqual({
      has_more_before: false,
      has_more_after: false,
      next_cursor: null,
      previous_cursor: null,
    });

    const first = await unwrap(tenant.client.GET("/portals", { params: { query: { limit: 3 } } }));
    expect(first.items.map((p) => p.id)).toEqual(ids.slice(0, 3));
    expect(first.pagination).toMatchObject({ has_more_before: false, has_more_after: true, previous_cursor: null });

    const second = await unwrap(
      tenant.client.GET("/portals", { params: { query: { limit: 3, cursor: first.pagination.next_cursor ?? "" } } }),
    );
    expect(second.items.map((p) => p.id)).toEqual(ids.slice(3, 6));
    expect(second.pagination).toMatchObject({ has_more_before: true, has_more_after: true });

    const back = await unwrap(
      tenant.client.GET("/portals", {
        params: { query: { limit: 3, cursor: second.pagination.previous_cursor ?? "" } },
      }),
    );
    expect(back.items.map((p) => p.id)).toEqual(ids.slice(0, 3));

    const after = await unwrap(tenant.client.GET("/portals", { params: { query: { after: ids[4] } } }));
    expect(after.items.map((p) => p.id)).toEqual(ids.slice(5));
    expect(after.pagination).toMatchObject({ has_more_before: true, has_more_after: false, next_cursor: null });

    const before = await unwrap(tenant.client.GET("/portals", { params: { query: { before: ids[2], limit: 1 } } }));
    expect(before.items.map((p) => p.id)).toEqual([ids[1]]);
    expect(before.pagination).toMatchObject({ has_more_before: true, has_more_after: true });

    const desc = await unwrap(tenant.client.GET("/portals", { params: { query: { order: "desc", limit: 2 } } }));
    expect(desc.items.map((p) => p.id)).toEqual([ids[6], ids[5]]);
    const descNext = await unwrap(
      tenant.client.GET("/portals", { params: { query: { cursor: desc.pagination.next_cursor ?? "", limit: 2 } } }),
    );
    expect(descNext.items.map((p) => p.id)).toEqual([ids[4], ids[3]]);
    const descAll = await unwrap(tenant.client.GET("/portals", { params: { query: { order: "desc" } } }));
    expect(descAll.items.map((p) => p.id)).toEqual([...ids].reverse());

    const walked: string[] = [];
    for await (const p of tenant.client.paginate("/portals", { params: { query: { limit: 2 } } })) walked.push(p.id);
    expect(walked).toEqual(ids);
  });
});

describe("portals: the public portal page", () => {
  it("serves HTML with the portal name, its description and the templates granted on it", async () => {
    const portal = await unwrap(
      t.client.POST("/portals", { body: { name: "Page Portal", description: "Tools for partners" } }),
    );
    const other = await unwrap(t.client.POST("/portals", { body: { name: "Other Portal" } }));
    const weather = await seedSessionTemplate(t.db, t.tenant.instanceId, "Weather assistant");
    const alpha = await seedSessionTemplate(t.db, t.tenant.instanceId, "Alpha tools");
    const hidden = await seedSessionTemplate(t.db, t.tenant.instanceId, "Granted elsewhere");
    const ungranted = await seedSessionTemplate(t.db, t.tenant.instanceId, "Never granted");

    const signIn = await page(portal.id);
    expect(signIn.res.status).toBe(200);
    expect(signIn.res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(signIn.html).toContain("<title>Sign in · Page Portal</title>");
    expect(signIn.html).toContain("<h1>Sign in to Page Portal</h1>");
    expect(signIn.html).toContain("Tools for partners");
    const empty = await memberPage(portal.id, "page-group-1");
    expect(empty.html).toContain("Nothing is shared with you on this portal yet.");

    await grant(portal.id, "page-group-1", weather);
    await grant(portal.id, "page-group-2", weather);
    await grant(portal.id, "page-group-1", alpha);
    await grant(other.id, "page-group-1", hidden);

    // Anonymous visitors see no template; members see their groups' templates.
    expect((await page(portal.id)).html).not.toContain("Weather assistant");
    const { status, html } = await memberPage(portal.id, "page-group-1");
    expect(status).toBe(200);
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain("Weather assistant");
    expect(html).toContain("Alpha tools");
    // A template granted to two groups is listed once (its card names it in its heading, button and placeholder);
    // templates are ordered by name.
    expect(html.split(">Weather assistant</h3>")).toHaveLength(2);
    expect(html.indexOf("Alpha tools")).toBeLessThan(html.indexOf("Weather assistant"));
    expect(html).not.toContain("Granted elsewhere");
    expect(html).not.toContain("Never granted");
    expect(html).not.toContain("Nothing is shared with you");
    expect(ungranted).toMatch(/^set_/);
    const second = await memberPage(portal.id, "page-group-2");
    expect(second.html).toContain("Weather assistant");
    expect(second.html).not.toContain("Alpha tools");
  });

  it("shows the brand name instead of the portal name, and the name again once the brand is cleared", async () => {
    const portal = await unwrap(t.client.POST("/portals", { body: { name: "Internal Name" } }));
    const path = { portal_id: portal.id };
    await unwrap(t.client.PATCH("/portals/{portal_id}", { params: { path }, body: { brand_name: "Shiny Brand" } }));
    const branded = await page(portal.id);
    expect(branded.html).toContain("<title>Sign in · Shiny Brand</title>");
    expect(branded.html).toContain('<p class="brand">Shiny Brand</p>');
    expect(branded.html).not.toContain("Internal Name");

    await unwrap(t.client.PATCH("/portals/{portal_id}", { params: { path }, body: { brand_name: null } }));
    const plain = await page(portal.id);
    expect(plain.html).toContain('<p class="brand">Internal Name</p>');
    expect(plain.html).not.toContain("Shiny Brand");
  });

  it("stops listing a template once its access is revoked", async () => {
    const portal = await unwrap(t.client.POST("/portals", { body: { name: "Revoking" } }));
    const templateId = await seedSessionTemplate(t.db, t.tenant.instanceId, "Revocable template");
    const access = await grant(portal.id, "revoke-group", templateId);
    const { visitor, html } = await memberPage(portal.id, "revoke-group");
    expect(html).toContain("Revocable template");
    await unwrap(
      t.client.DELETE("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
        params: { path: { portal_id: portal.id, consumer_access_id: access.id } },
      }),
    );
    expect((await visitor.get(`/p/${portal.id}`)).html).not.toContain("Revocable template");
  });

  it("answers 404 for an archived portal, and serves it again once it is active", async () => {
    const portal = await unwrap(t.client.POST("/portals", { body: { name: "Archivable" } }));
    const path = { portal_id: portal.id };
    await unwrap(t.client.PATCH("/portals/{portal_id}", { params: { path }, body: { status: "archived" } }));
    const archived = await page(portal.id);
    expect(archived.res.status).toBe(404);
    expect(archived.html).not.toContain("Archivable");
    expect(archived.res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(archived.html).toContain("Portal not found");

    // Archiving keeps the portal readable through the API.
    expect((await unwrap(t.client.GET("/portals/{portal_id}", { params: { path } }))).status).toBe("archived");

    await unwrap(t.client.PATCH("/portals/{portal_id}", { params: { path }, body: { status: "active" } }));
    const back = await page(portal.id);
    expect(back.res.status).toBe(200);
    expect(back.html).toContain("Archivable");
  });

  it("answers 404 for an unknown portal", async () => {
    const { res } = await page("ptl_00000000000000000000000000");
    expect(res.status).toBe(404);
  });

  it("HTML-escapes the portal name, brand, description and template names", async () => {
    const xss = `<script>alert("x")</script>`;
    const portal = await unwrap(
      t.client.POST("/portals", { body: { name: `${xss} & co`, description: `desc ${xss} 'quoted'` } }),
    );
    const templateId = await seedSessionTemplate(t.db, t.tenant.instanceId, `tpl ${xss}`);
    await grant(portal.id, "xss-group", templateId);

    const named = await page(portal.id);
    expect(named.res.status).toBe(200);
    expect(named.html).not.toContain("<script>");
    expect(named.html).toContain("<h1>Sign in to &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co</h1>");
    expect(named.html).toContain("desc &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &#39;quoted&#39;");
    const member = await memberPage(portal.id, "xss-group");
    expect(member.html).not.toContain("<script>alert");
    expect(member.html).toContain("tpl &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");

    await unwrap(
      t.client.PATCH("/portals/{portal_id}", {
        params: { path: { portal_id: portal.id } },
        body: { brand_name: `<img src=x onerror=alert(1)>` },
      }),
    );
    const branded = await page(portal.id);
    expect(branded.html).not.toContain("<img");
    expect(branded.html).toContain("<title>Sign in · &lt;img src=x onerror=alert(1)&gt;</title>");
  });
});
