import { unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initializeBody, mcpHeaders } from "../mcp/gateway-fixtures.ts";
import { useTestServer } from "../support/fixture.ts";
import { startTestUpstream, type TestUpstream } from "../support/upstream-server.ts";
import { startOidcProvider, type TestOidcProvider } from "./oidc-provider.ts";
import { connectTemplate, grant, PageVisitor, templateOf } from "./support.ts";

const t = useTestServer({ linksToOwnPort: true });
let upstream: TestUpstream;
let idp: TestOidcProvider;
let portalId: string;
let templateId: string;

beforeAll(async () => {
  upstream = await startTestUpstream();
  const portal = await unwrap(t.client.POST("/portals", { body: { name: "SSO portal" } }));
  portalId = portal.id;
  idp = await startOidcProvider([`${portal.urls[0]?.url}/sign-in/oidc/callback`]);
  await unwrap(
    t.client.PATCH("/portals/{portal_id}", {
      params: { path: { portal_id: portalId } },
      body: {
        brand: { primary_color: "#7a1f5c" },
        auth: {
          oidc: {
            issuer: idp.issuer,
            client_id: idp.clientId,
            client_secret: idp.clientSecret,
            scopes: ["openid", "email", "profile", "groups"],
            groups_claim: "groups",
            group_mapping: [{ claim_value: "Engineering", consumer_group_id: "eng-members" }],
          },
        },
      },
    }),
  );
  templateId = (await templateOf(t, t.tenant, upstream.url, "SSO echo")).id;
  await grant(t.tenant, portalId, "eng-members", templateId);
});
afterAll(async () => {
  await idp?.close();
  await upstream?.close();
});

/**
 * Signs in through the portal's single sign-on as a browser would: the redirect to the provider, its login and
 * consent pages, the callback. Returns the last response (the portal's redirect, or its refusal page).
 */
async function signInWithSso(visitor: PageVisitor, login: string) {
  let r = await visitor.get(`/p/${portalId}/sign-in/oidc`);
  for (let step = 0; step < 12; step++) {
    if (r.location) {
      const next = new URL(r.location, visitor.lastUrl);
      if (next.pathname === `/p/${portalId}`) return r;
      r = await visitor.get(next.href);
      continue;
    }
    const action = /<form[^>]*action="([^"]+)"/.exec(r.html)?.[1];
    if (r.status !== 200 || !action) return r;
    // The provider's development pages: a login form (any password), then a consent form.
    const fields: Record<string, string> = r.html.includes('name="login"') ? { login, password: "any" } : {};
    for (const [, name, value] of r.html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) {
      if (name) fields[name] = value ?? "";
    }
    r = await visitor.post(new URL(action, visitor.lastUrl).href, fields);
  }
  throw new Error("the sign-in did not finish");
}

async function mcpStatus(url: string, secret: string) {
  const res = await fetch(url, { method: "POST", headers: mcpHeaders(secret), body: initializeBody });
  await res.body?.cancel();
  return res.status;
}

describe("portal single sign-on (OpenID Connect)", () => {
  it("signs a member in through the provider, maps their groups and hands out a working connection", async () => {
    idp.accounts.set("alice", { name: "Alice Example", email: "alice@example.com", groups: ["Engineering", "Ops"] });
    const visitor = new PageVisitor(t.url);
    const signInPage = await visitor.get(`/p/${portalId}`);
    expect(signInPage.html).toContain(`href="/p/${portalId}/sign-in/oidc"`);

    const done = await signInWithSso(visitor, "alice");
    expect(done.status).toBe(303);
    expect(visitor.cookies.has("tp_portal_session")).toBe(true);
    const market = await visitor.get(`/p/${portalId}`);
    expect(market.html).toContain("Alice Example");
    expect(market.html).toContain("SSO echo");

    const [consumer] = (
      await unwrap(t.client.GET("/portals/{portal_id}/consumers", { params: { path: { portal_id: portalId } } }))
    ).items;
    expect(consumer).toMatchObject({
      sign_in_method: "oidc",
      subject: "alice",
      name: "Alice Example",
      email: "alice@example.com",
      consumer_group_ids: ["eng-members", "Ops"],
      status: "active",
    });

    const connection = await connectTemplate(visitor, portalId, templateId);
    expect(await mcpStatus(connection.url, connection.secret)).toBe(200);

    // Her groups change at the provider: her next sign-in is refused, and her connection stops at once.
    idp.accounts.set("alice", { name: "Alice Example", email: "alice@example.com", groups: ["Sales"] });
    const again = await signInWithSso(new PageVisitor(t.url), "alice");
    expect(again.status).toBe(403);
    expect(again.html).toContain("Your groups (Sales) have no access to this portal");
    expect(await mcpStatus(connection.url, connection.secret)).toBe(404);
  });

  it("refuses people whose groups have no access, and revoked consumers", async () => {
    idp.accounts.set("bob", { name: "Bob", email: "bob@example.com", groups: ["Sales"] });
    const denied = await signInWithSso(new PageVisitor(t.url), "bob");
    expect(denied.status).toBe(403);
    expect(denied.res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(denied.html).toContain("Access denied");
    expect(denied.html).toContain('<p class="brand">SSO portal</p>');
    expect(denied.html).toContain("--primary: #7a1f5c");
    const consumers = await unwrap(
      t.client.GET("/portals/{portal_id}/consumers", { params: { path: { portal_id: portalId } } }),
    );
    expect(consumers.items.map((c) => c.subject)).not.toContain("bob");

    idp.accounts.set("carol", { name: "Carol", email: "carol@example.com", groups: ["Engineering"] });
    expect((await signInWithSso(new PageVisitor(t.url), "carol")).status).toBe(303);
    const carol = (
      await unwrap(t.client.GET("/portals/{portal_id}/consumers", { params: { path: { portal_id: portalId } } }))
    ).items.find((c) => c.subject === "carol");
    await unwrap(
      t.client.DELETE("/portals/{portal_id}/consumers/{consumer_id}", {
        params: { path: { portal_id: portalId, consumer_id: carol?.id ?? "" } },
      }),
    );
    const revoked = await signInWithSso(new PageVisitor(t.url), "carol");
    expect(revoked.status).toBe(403);
    expect(revoked.html).toContain("revoked");
  });

  it("refuses a callback whose state does not match the browser's sign-in", async () => {
    idp.accounts.set("dave", { name: "Dave", email: "dave@example.com", groups: ["Engineering"] });
    const visitor = new PageVisitor(t.url);
    const started = await visitor.get(`/p/${portalId}/sign-in/oidc`);
    const state = new URL(started.location ?? "").searchParams.get("state");
    expect(state).toBeTruthy();
    const forged = await visitor.get(`/p/${portalId}/sign-in/oidc/callback?code=forged&state=other&iss=${idp.issuer}`);
    expect(forged.status).toBe(400);
    expect(forged.html).toContain("could not be completed");
    const noCookie = await new PageVisitor(t.url).get(`/p/${portalId}/sign-in/oidc/callback?code=x&state=${state}`);
    expect(noCookie.status).toBe(400);
    expect(visitor.cookies.has("tp_portal_session")).toBe(false);
  });
});
