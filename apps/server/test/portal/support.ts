import { unwrap } from "@toolplane/client";
import { expect } from "vitest";
import { deploymentRef, deployProvider, remoteProvider } from "../mcp/gateway-fixtures.ts";
import { expectCreated } from "../support/deployment-fixtures.ts";
import type { Tenant, TestServer } from "../support/server.ts";

/**
 * A browser as far as the portal pages care: keeps the cookies the server sets (per path), follows nothing by
 * itself, and reads forms' CSRF tokens out of the HTML it was shown.
 */
export class PageVisitor {
  readonly cookies = new Map<string, string>();
  /** The raw Set-Cookie headers of the last response (to check their attributes). */
  lastSetCookies: string[] = [];
  /** The URL of the last request (relative links and form actions resolve against it). */
  lastUrl: URL;

  constructor(private readonly baseUrl: string) {
    this.lastUrl = new URL(baseUrl);
  }

  async get(path: string) {
    return this.request(path, { method: "GET" });
  }

  /** Posts a form; `csrf` is taken from the page unless given. */
  async post(path: string, fields: Record<string, string>) {
    return this.request(path, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
    });
  }

  private async request(path: string, init: RequestInit) {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    this.lastUrl = new URL(path, path.startsWith("/") ? this.baseUrl : this.lastUrl);
    const res = await fetch(this.lastUrl, {
      ...init,
      redirect: "manual",
      headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) },
    });
    this.lastSetCookies = res.headers.getSetCookie();
    for (const header of this.lastSetCookies) {
      const [pair = ""] = header.split(";");
      const [name = "", ...value] = pair.split("=");
      if (/Max-Age=0/.test(header)) this.cookies.delete(name);
      else this.cookies.set(name, value.join("="));
    }
    return { res, status: res.status, html: await res.text(), location: res.headers.get("location") };
  }
}

/** The CSRF token of the form that posts to `action` on a page. */
export function csrfOf(html: string, action: string): string {
  const at = html.indexOf(`action="${action}"`);
  expect(at, `a form posting to ${action}`).toBeGreaterThanOrEqual(0);
  const token = /name="csrf" value="([^"]+)"/.exec(html.slice(at))?.[1];
  if (!token) throw new Error(`no csrf token in the form posting to ${action}`);
  return token;
}

/** A template of one remote MCP provider (our test upstream), with the tools its catalog version declares. */
export async function templateOf(t: TestServer, tenant: Tenant, upstreamUrl: string, name: string) {
  const slug = `portal-${name.toLowerCase().replace(/[^a-z0-9]+/g, "-")}-${Math.random().toString(36).slice(2, 8)}`;
  const provider = await remoteProvider(t.db, slug, upstreamUrl);
  await t.db
    .updateTable("provider_versions")
    .set({ tools: JSON.stringify([{ name: "echo", description: "Echoes the message." }, { name: "whoami" }]) })
    .where("provider_id", "=", provider.providerId)
    .execute();
  const deployment = (await deployProvider(tenant.client, provider.providerId, `${name} deployment`)) as { id: string };
  return expectCreated(
    tenant.client.POST("/session-templates", {
      body: { name, providers: [{ provider_deployment: deploymentRef(deployment.id) }] } as never,
    }),
  ) as Promise<{ id: string; name: string }>;
}

export async function grant(tenant: Tenant, portalId: string, groupId: string, templateId: string) {
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

export async function invite(tenant: Tenant, portalId: string, groupId: string, expiresIn?: number) {
  return unwrap(
    tenant.client.POST("/portals/{portal_id}/invitations", {
      params: { path: { portal_id: portalId } },
      body: { consumer_group_id: groupId, ...(expiresIn ? { expires_in_seconds: expiresIn } : {}) },
    }),
  );
}

/** Opens an invitation link and accepts it: the visitor is then signed in. */
export async function acceptInvitation(visitor: PageVisitor, url: string) {
  const path = new URL(url).pathname;
  const shown = await visitor.get(path);
  expect(shown.status).toBe(200);
  const accepted = await visitor.post(path, { csrf: csrfOf(shown.html, path) });
  expect(accepted.status).toBe(303);
  return accepted;
}

/** Connects a template on the marketplace page; returns the connection URL and secret the page showed once. */
export async function connectTemplate(visitor: PageVisitor, portalId: string, templateId: string, name = "") {
  const market = await visitor.get(`/p/${portalId}`);
  const action = `/p/${portalId}/templates/${templateId}/sessions`;
  const created = await visitor.post(action, { csrf: csrfOf(market.html, action), name });
  expect(created.status).toBe(201);
  const url = /<code id="url">([^<]+)<\/code>/.exec(created.html)?.[1];
  const secret = /<code id="secret">([^<]+)<\/code>/.exec(created.html)?.[1];
  if (!url || !secret) throw new Error("the page showed no connection");
  return { url, secret, sessionId: new URL(url).pathname.split("/").pop() ?? "", html: created.html };
}
