import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { unwrap } from "@toolplane/client";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { deploymentRef, deployProvider, firstText } from "../mcp/gateway-fixtures.ts";
import { loadTestCatalog } from "../support/catalog-fixtures.ts";
import { expectCreated } from "../support/deployment-fixtures.ts";
import { fixture, useTestServer } from "../support/fixture.ts";
import { protectedServerEntry, startMcpOAuthServers } from "../support/mcp-oauth-server.ts";
import { startTestUpstream, type TestUpstream } from "../support/upstream-server.ts";
import { startOidcProvider, type TestOidcProvider } from "./oidc-provider.ts";
import { grant, invite, templateOf } from "./support.ts";

/** Debian's Chromium (`apt-get install chromium`; .ci/run installs it): never a browser downloaded by Playwright. */
const CHROMIUM = "/usr/bin/chromium";
/** Where the pages' screenshots go for a person to look at (ignored by git; kept as CI artifacts). */
const SHOTS = fileURLToPath(new URL("../../test-output/portal-screenshots/", import.meta.url));
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };

const t = useTestServer({ linksToOwnPort: true });
/** An MCP server behind a real authorization server: the template each consumer connects their own account to. */
const as = fixture(startMcpOAuthServers, (servers) => servers.close());
let upstream: TestUpstream;
let idp: TestOidcProvider;
let browser: Browser;
let portalId: string;
let templateId: string;
/**
 * Requests our pages made to anything but the test's own servers: there must be none (the pages work offline).
 * The provider's development login pages load a web font; those requests are refused but not counted.
 */
const external: string[] = [];

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  upstream = await startTestUpstream();
  const portal = await unwrap(
    t.client.POST("/portals", {
      body: { name: "Browser portal", description: "Tools Acme shares with its partners." },
    }),
  );
  portalId = portal.id;
  idp = await startOidcProvider([`${portal.urls[0]?.url}/sign-in/oidc/callback`]);
  idp.accounts.set("erin", { name: "Erin Example", email: "erin@example.com", groups: ["partners"] });
  await unwrap(
    t.client.PATCH("/portals/{portal_id}", {
      params: { path: { portal_id: portalId } },
      body: {
        brand: {
          name: "Acme Partner Tools",
          primary_color: "#0b6e4f",
          background_color: "#f3f7f5",
          logo_url:
            "data:image/svg+xml;base64,PHN2ZyB4bWxucz0naHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmcnIHZpZXdCb3g9JzAgMCAzMiAzMic+PGNpcmNsZSBjeD0nMTYnIGN5PScxNicgcj0nMTQnIGZpbGw9JyNmZmYnLz48L3N2Zz4=",
        },
        auth: {
          oidc: {
            issuer: idp.issuer,
            client_id: idp.clientId,
            client_secret: idp.clientSecret,
            scopes: ["openid", "email", "profile", "groups"],
          },
        },
      },
    }),
  );
  templateId = (await templateOf(t, t.tenant, upstream.url, "Echo toolkit")).id;
  await grant(t.tenant, portalId, "partners", templateId);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await idp?.close();
  await upstream?.close();
  await upstreams.closeAll();
});

async function newContext(viewport = PHONE): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport });
  const allowed = new Set([new URL(t.url).host, new URL(idp.issuer).host, new URL(as.issuer).host]);
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === "data:" || allowed.has(url.host)) return route.continue();
    if (route.request().frame().url().startsWith(t.url)) external.push(url.href);
    return route.abort();
  });
  return context;
}

async function shot(page: Page, name: string) {
  await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
  // Responsive: nothing wider than the window at phone width.
  // A string, evaluated in the page: this file is type-checked without the DOM's types.
  const overflow = Number(await page.evaluate("document.documentElement.scrollWidth - window.innerWidth"));
  expect(overflow, `${name} overflows horizontally`).toBeLessThanOrEqual(0);
}

describe("portal in a real browser (Chromium)", () => {
  it("signs in with single sign-on, connects a template and an MCP client uses the URL it was given", async () => {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(`${t.url}/p/${portalId}`);
    await shot(page, "01-sign-in");
    await page.getByRole("link", { name: "Sign in with single sign-on" }).click();

    // The provider's own login and consent pages.
    await page.locator("input[name=login]").fill("erin");
    await page.locator("input[name=password]").fill("any password");
    await page.locator("button[type=submit]").click();
    await page.locator("button[type=submit]").click();
    await page.waitForURL(`${t.url}/p/${portalId}`);
    await expect.poll(() => page.getByRole("heading", { name: "Servers you can connect" }).count()).toBe(1);
    await shot(page, "02-marketplace");

    // Keyboard only: focus the connection name, type, and submit with Enter.
    await page.getByLabel("Connection name (optional)").focus();
    await page.keyboard.type("Erin's echo");
    await page.keyboard.press("Enter");
    await page.waitForURL(`${t.url}/p/${portalId}/templates/${templateId}/sessions`);
    await shot(page, "03-connected");
    const url = (await page.locator("#url").textContent()) ?? "";
    const secret = (await page.locator("#secret").textContent()) ?? "";
    expect(url).toMatch(/\/mcp\/ses_/);
    expect(secret).toMatch(/^tpss_/);

    const mcp = new Client({ name: "browser-test", version: "1.0.0" });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${secret}` } },
      }),
    );
    expect(firstText(await mcp.callTool({ name: "echo", arguments: { message: "from the portal" } }))).toContain(
      "from the portal",
    );
    await mcp.close();

    await page.getByRole("link", { name: "Back to the marketplace" }).click();
    await expect.poll(() => page.getByText("Erin's echo").count()).toBeGreaterThan(0);
    await expect.poll(() => page.locator("td", { hasText: "succeeded" }).count()).toBe(1);
    await shot(page, "04-marketplace-with-connection");

    await page.setViewportSize(DESKTOP);
    await page.screenshot({ path: `${SHOTS}05-marketplace-desktop.png`, fullPage: true });
    await context.close();
  }, 90_000);

  it("accepts an invitation and shows error pages a person can read", async () => {
    const context = await newContext();
    const page = await context.newPage();
    const invitation = await invite(t.tenant, portalId, "partners");
    await page.goto(invitation.url ?? "");
    await shot(page, "06-invitation");
    await page.getByRole("button", { name: "Accept and sign in" }).click();
    await page.waitForURL(`${t.url}/p/${portalId}`);
    await expect.poll(() => page.getByRole("heading", { name: "Echo toolkit" }).count()).toBe(1);

    await page.goto(invitation.url ?? "");
    await expect.poll(() => page.getByRole("heading", { name: "Invitation already used" }).count()).toBe(1);
    await shot(page, "07-invitation-used");

    const response = await page.goto(`${t.url}/p/ptl_01jqz7m3c8v4r2k9x5n6t0w1ys`);
    expect(response?.status()).toBe(404);
    await shot(page, "08-unknown-portal");

    idp.accounts.set("frank", { name: "Frank", email: "frank@example.com", groups: ["strangers"] });
    const other = await newContext();
    const denied = await other.newPage();
    await denied.goto(`${t.url}/p/${portalId}/sign-in/oidc`);
    await denied.locator("input[name=login]").fill("frank");
    await denied.locator("input[name=password]").fill("any password");
    await denied.locator("button[type=submit]").click();
    await denied.locator("button[type=submit]").click();
    await expect.poll(() => denied.getByRole("heading", { name: "Access denied" }).count()).toBe(1);
    await shot(denied, "09-group-denied");
    await other.close();
    await context.close();
    expect(external).toEqual([]);
  }, 90_000);

  it("sends a consumer to connect their own account first, then hands out the connection", async () => {
    const slug = "browser-protected-files";
    const loaded = await loadTestCatalog(t.db, [
      protectedServerEntry(as.mcpUrl, slug, {
        tools: [{ name: "whoami", description: "Who the access token belongs to." }],
      }),
    ]);
    const deployment = (await deployProvider(t.client, loaded[slug]?.providerId ?? "", slug)) as { id: string };
    const template = (await expectCreated(
      t.client.POST("/session-templates", {
        body: { name: "Files", providers: [{ provider_deployment: deploymentRef(deployment.id) }] } as never,
      }),
    )) as { id: string };
    await grant(t.tenant, portalId, "file-users", template.id);

    const context = await newContext();
    const page = await context.newPage();
    await page.goto((await invite(t.tenant, portalId, "file-users")).url ?? "");
    await page.getByRole("button", { name: "Accept and sign in" }).click();
    await page.waitForURL(`${t.url}/p/${portalId}`);
    await page.getByRole("button", { name: "Connect Files" }).click();
    await expect
      .poll(() => page.getByRole("heading", { name: "Connect your Protected Files account first" }).count())
      .toBe(1);
    await shot(page, "10-connect-own-account");
    // Our setup-session page, the authorization server (which approves at once), our callback, back to the portal.
    await page.getByRole("link", { name: "Sign in to Protected Files" }).click();
    await page.waitForURL(new RegExp(`/p/${portalId}/templates/${template.id}/connected\\?`));
    await expect
      .poll(() => page.getByRole("heading", { name: "Your Protected Files account is connected" }).count())
      .toBe(1);
    await shot(page, "11-own-account-connected");
    await page.getByRole("button", { name: "Finish connecting" }).click();
    await page.waitForURL(`${t.url}/p/${portalId}/templates/${template.id}/sessions`);
    await shot(page, "12-connected-with-own-account");
    const url = (await page.locator("#url").textContent()) ?? "";
    const secret = (await page.locator("#secret").textContent()) ?? "";

    const mcp = new Client({ name: "browser-test", version: "1.0.0" });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${secret}` } },
      }),
    );
    const { tools } = await mcp.listTools();
    const whoami = tools.find((tool) => tool.name.endsWith("whoami"))?.name ?? "whoami";
    expect(firstText(await mcp.callTool({ name: whoami }))).toBe("hello from behind OAuth");
    await mcp.close();
    await context.close();
    expect(external).toEqual([]);
  }, 90_000);
});
