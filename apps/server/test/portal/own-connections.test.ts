import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { unwrap } from "@toolplane/client";
import { afterAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { deploymentRef, deployProvider, firstText } from "../mcp/gateway-fixtures.ts";
import { loadTestCatalog } from "../support/catalog-fixtures.ts";
import { expectCreated } from "../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../support/fixture.ts";
import { browse, protectedServerEntry, startMcpOAuthServers } from "../support/mcp-oauth-server.ts";
import { acceptInvitation, csrfOf, grant, invite, PageVisitor } from "./support.ts";

/**
 * A template whose provider needs each consumer's own OAuth connection: a remote MCP server behind a real
 * authorization server (oidc-provider), with an `mcp_oauth` method and no auth config in the template. The portal
 * runs the real setup-session flow for each consumer and connects them with their own auth config.
 */
const t = useTestServer({ linksToOwnPort: true });
const as = fixture(startMcpOAuthServers, (servers) => servers.close());
afterAll(() => upstreams.closeAll());

const BRAND = { name: "Own Tools", primary_color: "#5b2a86" };

async function protectedMarketplace(
  authMethod?: NonNullable<Parameters<typeof protectedServerEntry>[2]>["authMethod"],
) {
  const slug = `portal-own-${Math.random().toString(36).slice(2, 8)}`;
  const loaded = await loadTestCatalog(t.db, [protectedServerEntry(as.mcpUrl, slug, { authMethod })]);
  const deployment = (await deployProvider(t.client, loaded[slug]?.providerId ?? "", slug)) as { id: string };
  const template = (await expectCreated(
    t.client.POST("/session-templates", {
      body: { name: "Files", providers: [{ provider_deployment: deploymentRef(deployment.id) }] } as never,
    }),
  )) as { id: string };
  const portal = await unwrap(t.client.POST("/portals", { body: { name: "Own portal" } }));
  await unwrap(
    t.client.PATCH("/portals/{portal_id}", { params: { path: { portal_id: portal.id } }, body: { brand: BRAND } }),
  );
  await grant(t.tenant, portal.id, "own-members", template.id);
  return { portalId: portal.id, templateId: template.id, deploymentId: deployment.id };
}

async function member(portalId: string) {
  const visitor = new PageVisitor(t.url);
  await acceptInvitation(visitor, (await invite(t.tenant, portalId, "own-members")).url ?? "");
  return visitor;
}

/** Chooses the template on the marketplace page. */
async function choose(visitor: PageVisitor, portalId: string, templateId: string, name = "") {
  const action = `/p/${portalId}/templates/${templateId}/sessions`;
  const market = await visitor.get(`/p/${portalId}`);
  return visitor.post(action, { csrf: csrfOf(market.html, action), name });
}

/** The sign-in link the "connect your account first" page shows. */
function signInLink(html: string): string {
  const href = /<a class="button" href="([^"]+)">Sign in to Protected Files<\/a>/.exec(html)?.[1];
  if (!href) throw new Error(`no sign-in link on the page: ${html}`);
  return href.replaceAll("&amp;", "&");
}

/** The consumer's own OAuth sign-in, through the real authorization server, back to the portal's return page. */
async function signInAtProvider(visitor: PageVisitor, html: string, tamper?: (callback: URL) => void) {
  const { callback } = await browse(signInLink(html), { beforeCallback: tamper });
  expect(callback.status).toBe(302);
  return visitor.get(callback.headers.get("location") ?? "");
}

/** Finishes on the return page; returns the connection the page showed once. */
async function finish(visitor: PageVisitor, returned: { html: string }, portalId: string, templateId: string) {
  const action = `/p/${portalId}/templates/${templateId}/sessions`;
  const name = /<input type="hidden" name="name" value="([^"]*)">/.exec(returned.html)?.[1] ?? "";
  const created = await visitor.post(action, { csrf: csrfOf(returned.html, action), name });
  return connectionOf(created);
}

function connectionOf(created: { status: number; html: string }) {
  expect(created.status).toBe(201);
  const url = /<code id="url">([^<]+)<\/code>/.exec(created.html)?.[1] ?? "";
  const secret = /<code id="secret">([^<]+)<\/code>/.exec(created.html)?.[1] ?? "";
  return { url, secret, sessionId: new URL(url).pathname.split("/").pop() ?? "" };
}

async function whoami(connection: { url: string; secret: string }) {
  const mcp = new Client({ name: "portal-own-test", version: "1.0.0" });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(connection.url), {
      requestInit: { headers: { Authorization: `Bearer ${connection.secret}` } },
    }),
  );
  const { tools } = await mcp.listTools();
  const tool = tools.find((candidate) => candidate.name.endsWith("whoami"));
  const text = firstText(await mcp.callTool({ name: tool?.name ?? "whoami" }));
  await mcp.close();
  return text;
}

/** The auth config each provider of the session uses. */
const sessionAuthConfigs = async (sessionId: string) =>
  (
    await t.db
      .selectFrom("session_providers")
      .select("provider_auth_config_id")
      .where("session_id", "=", sessionId)
      .execute()
  ).map((r) => r.provider_auth_config_id);

describe("portal: a consumer's own OAuth connection", () => {
  it("runs the setup session first, connects with the consumer's own auth config, and never lends it", async () => {
    const { portalId, templateId, deploymentId } = await protectedMarketplace();
    const alice = await member(portalId);
    const bob = await member(portalId);
    const consumers = (
      await unwrap(t.client.GET("/portals/{portal_id}/consumers", { params: { path: { portal_id: portalId } } }))
    ).items;
    const [aliceId, bobId] = consumers.map((c) => c.id);

    const NEEDED = "Uses your own Protected Files account: you sign in to it when you connect.";
    const CONNECTED = "Uses your own Protected Files account (connected).";
    expect((await alice.get(`/p/${portalId}`)).html).toContain(NEEDED);
    // Alice chooses the template: she is sent to sign in at the provider first, through a link (not a redirect).
    const first = await choose(alice, portalId, templateId, "My files");
    expect(first.status).toBe(200);
    expect(first.html).toContain("Connect your Protected Files account first");
    expect(await t.db.selectFrom("sessions").select("id").where("portal_id", "=", portalId).execute()).toEqual([]);

    let callbackUrl = "";
    const returned = await signInAtProvider(alice, first.html, (url) => {
      callbackUrl = url.href;
    });
    expect(returned.status, returned.html).toBe(200);
    expect(returned.html).toContain("Your Protected Files account is connected");
    expect(returned.html).toContain(`--primary: ${BRAND.primary_color}`);
    const a = await finish(alice, returned, portalId, templateId);
    expect(await whoami(a)).toBe("hello from behind OAuth");

    // Her used sign-in link and a replayed callback both end on the portal's own page, never a second auth config.
    for (const used of [signInLink(first.html), callbackUrl]) {
      const res = await fetch(used, { redirect: "manual" });
      expect(res.status).toBe(302);
      const landing = await alice.get(res.headers.get("location") ?? "");
      expect(landing.html).toContain(`<p class="brand">${BRAND.name}</p>`);
      expect(landing.html).toContain("Your Protected Files account is connected");
    }

    // The auth config is Alice's, visible through the API with its consumer; so is the setup session.
    const configs = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/auth-configs", {
        params: { path: { provider_deployment_id: deploymentId } },
      }),
    );
    expect(configs.items).toEqual([
      expect.objectContaining({ consumer_id: aliceId, status: "active", type: "oauth_automated" }),
    ]);
    const aliceConfig = configs.items[0]?.id;
    expect(await sessionAuthConfigs(a.sessionId)).toEqual([aliceConfig]);
    const setups = await unwrap(
      t.client.GET("/provider-deployments/{provider_deployment_id}/setup-sessions", {
        params: { path: { provider_deployment_id: deploymentId } },
      }),
    );
    expect(setups.items).toEqual([expect.objectContaining({ consumer_id: aliceId, status: "completed" })]);
    const aliceSetup = setups.items[0]?.id ?? "";
    const session = await unwrap(
      t.client.GET("/sessions/{session_id}", { params: { path: { session_id: a.sessionId } } }),
    );
    expect(session).toMatchObject({ name: "My files", consumer_id: aliceId });

    // Her next connection reuses her own auth config: no second sign-in at the provider.
    expect((await alice.get(`/p/${portalId}`)).html).toContain(CONNECTED);
    const codeGrants = () => as.grants.filter((g) => g === "authorization_code").length;
    const before = codeGrants();
    const again = connectionOf(await choose(alice, portalId, templateId));
    expect(await sessionAuthConfigs(again.sessionId)).toEqual([aliceConfig]);
    expect(codeGrants()).toBe(before);

    // Bob is not lent Alice's connection: he is sent to sign in himself, and her return page is not his.
    expect((await bob.get(`/p/${portalId}`)).html).toContain(NEEDED);
    const bobFirst = await choose(bob, portalId, templateId);
    expect(bobFirst.status).toBe(200);
    expect(bobFirst.html).toContain("Connect your Protected Files account first");
    const probe = await bob.get(
      `/p/${portalId}/templates/${templateId}/connected?provider_setup_session_id=${aliceSetup}&status=completed`,
    );
    expect(probe.status).toBe(404);
    expect(probe.html).toContain(`<p class="brand">${BRAND.name}</p>`);
    expect(probe.html).not.toContain("Finish connecting");
    const b = await finish(bob, await signInAtProvider(bob, bobFirst.html), portalId, templateId);
    const [bobConfig] = await sessionAuthConfigs(b.sessionId);
    expect(bobConfig).not.toBe(aliceConfig);
    const bobRow = await t.db
      .selectFrom("provider_auth_configs")
      .select("consumer_id")
      .where("id", "=", bobConfig ?? "")
      .executeTakeFirstOrThrow();
    expect(bobRow.consumer_id).toBe(bobId);
    expect(await whoami(b)).toBe("hello from behind OAuth");

    // Revoking Bob ends his connections and deletes his own auth config; Alice's stays and keeps working.
    await unwrap(
      t.client.DELETE("/portals/{portal_id}/consumers/{consumer_id}", {
        params: { path: { portal_id: portalId, consumer_id: bobId ?? "" } },
      }),
    );
    const left = await t.db
      .selectFrom("provider_auth_configs")
      .select("consumer_id")
      .where("provider_deployment_id", "=", deploymentId)
      .execute();
    expect(left).toEqual([{ consumer_id: aliceId }]);
    expect(await whoami(a)).toBe("hello from behind OAuth");
  });

  it("shows a failed provider sign-in on the portal's own branded page, and creates nothing", async () => {
    const { portalId, templateId, deploymentId } = await protectedMarketplace();
    const carol = await member(portalId);
    const first = await choose(carol, portalId, templateId);
    // An authorization response from another issuer (RFC 9207): the flow fails, the portal says why.
    const returned = await signInAtProvider(carol, first.html, (url) =>
      url.searchParams.set("iss", "https://attacker.example.test"),
    );
    expect(returned.status).toBe(400);
    expect(returned.html).toContain("Your Protected Files sign-in was not completed");
    expect(returned.html).toContain(`<p class="brand">${BRAND.name}</p>`);
    expect(returned.html).toContain("Try again");
    // The outcome comes from the setup session, not from the query a browser could edit.
    const forged = new URL(carol.lastUrl);
    forged.searchParams.set("status", "completed");
    expect((await carol.get(forged.href)).html).not.toContain("Finish connecting");
    const action = `/p/${portalId}/templates/${templateId}/sessions`;
    const retry = await carol.post(action, { csrf: csrfOf(returned.html, action), name: "" });
    expect(retry.html).toContain("Connect your Protected Files account first");
    expect(
      await t.db.selectFrom("provider_auth_configs").where("provider_deployment_id", "=", deploymentId).execute(),
    ).toEqual([]);
    expect(await t.db.selectFrom("sessions").select("id").where("portal_id", "=", portalId).execute()).toEqual([]);
  });

  it("tells a consumer in plain words when the deployment has no OAuth app to sign in with, and creates nothing", async () => {
    const { portalId, templateId, deploymentId } = await protectedMarketplace({
      key: "oauth",
      type: "oauth",
      name: "Sign in",
      oauth: {
        authorization_endpoint: "https://auth.example.test/authorize",
        token_endpoint: "https://auth.example.test/token",
      },
    });
    const dave = await member(portalId);
    const chosen = await choose(dave, portalId, templateId);
    expect(chosen.status).toBe(409);
    expect(chosen.html).toContain("Protected Files cannot be connected yet");
    expect(chosen.html).toContain(`<p class="brand">${BRAND.name}</p>`);
    expect(chosen.html).not.toContain("auth credentials");
    expect(
      await t.db.selectFrom("oauth_flows").select("id").where("provider_deployment_id", "=", deploymentId).execute(),
    ).toEqual([]);
  });
});
