import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endSessionsOfExpiredSignIns } from "../../src/resources/sessions/service.ts";
import { firstText, initializeBody, mcpHeaders } from "../mcp/gateway-fixtures.ts";
import { useTestServer } from "../support/fixture.ts";
import { startTestUpstream, type TestUpstream } from "../support/upstream-server.ts";
import { acceptInvitation, connectTemplate, csrfOf, grant, invite, PageVisitor, templateOf } from "./support.ts";

const t = useTestServer({ linksToOwnPort: true });
let upstream: TestUpstream;
beforeAll(async () => {
  upstream = await startTestUpstream();
});
afterAll(() => upstream?.close());

/** A branded portal whose group `group` may use one template of our test upstream. */
async function marketplace(label: string) {
  const portal = await unwrap(t.client.POST("/portals", { body: { name: `${label} portal` } }));
  await unwrap(
    t.client.PATCH("/portals/{portal_id}", {
      params: { path: { portal_id: portal.id } },
      body: { brand: { name: `${label} Tools`, primary_color: "#0b6e4f", background_color: "#fafafa" } },
    }),
  );
  const template = await templateOf(t, t.tenant, upstream.url, `${label} echo`);
  const group = `${label.toLowerCase()}-members`;
  await grant(t.tenant, portal.id, group, template.id);
  return { portal, template, group };
}

async function signedInVisitor(portalId: string, group: string) {
  const visitor = new PageVisitor(t.url);
  const invitation = await invite(t.tenant, portalId, group);
  await acceptInvitation(visitor, invitation.url ?? "");
  return visitor;
}

/** The gateway's answer to an MCP initialize with this secret (404 once the session is ended). */
async function mcpStatus(url: string, secret: string) {
  const res = await fetch(url, { method: "POST", headers: mcpHeaders(secret), body: initializeBody });
  await res.body?.cancel();
  return res.status;
}

describe("portal pages", () => {
  it("answers unknown and archived portals with an HTML 404 page", async () => {
    const visitor = new PageVisitor(t.url);
    const unknown = await visitor.get("/p/ptl_01jqz7m3c8v4r2k9x5n6t0w1ys");
    expect(unknown.status).toBe(404);
    expect(unknown.res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(unknown.html).toContain("Portal not found");
    // No portal to speak for: the neutral brand.
    expect(unknown.html).toContain('<p class="brand">Toolplane</p>');
    const { portal } = await marketplace("Archived");
    await unwrap(
      t.client.PATCH("/portals/{portal_id}", {
        params: { path: { portal_id: portal.id } },
        body: { status: "archived" },
      }),
    );
    expect((await visitor.get(`/p/${portal.id}`)).status).toBe(404);
  });

  it("signs a consumer in with an invitation, shows their templates and hands out a working connection", async () => {
    const { portal, template, group } = await marketplace("Acme");
    const visitor = new PageVisitor(t.url);
    const signIn = await visitor.get(`/p/${portal.id}`);
    expect(signIn.status).toBe(200);
    expect(signIn.html).toContain("Sign in to Acme Tools");
    expect(signIn.html).toContain("--primary: #0b6e4f");
    // Nothing is loaded from elsewhere: no external scripts, styles, images or fonts.
    expect(signIn.html).not.toMatch(/(src|href)="https?:/);
    expect(signIn.res.headers.get("content-security-policy")).toContain("default-src 'none'");

    const invitation = await invite(t.tenant, portal.id, group);
    expect(invitation).toMatchObject({ status: "pending", consumer_group_id: group, consumer_id: null });
    expect(invitation.url).toMatch(new RegExp(`/p/${portal.id}/invitations/tpi_`));
    const read = await unwrap(
      t.client.GET("/portals/{portal_id}/invitations/{invitation_id}", {
        params: { path: { portal_id: portal.id, invitation_id: invitation.id } },
      }),
    );
    expect(read.url).toBeNull();

    await acceptInvitation(visitor, invitation.url ?? "");
    const cookie = visitor.lastSetCookies.find((c) => c.startsWith("tp_portal_session="));
    expect(cookie).toMatch(new RegExp(`Path=/p/${portal.id}; Max-Age=86400; HttpOnly; SameSite=Lax$`));

    const market = await visitor.get(`/p/${portal.id}`);
    expect(market.status).toBe(200);
    expect(market.html).toContain("Servers you can connect");
    expect(market.html).toContain(template.name);
    expect(market.html).toContain("<code>echo</code>");

    const connection = await connectTemplate(visitor, portal.id, template.id, "My echo");
    for (const client of ["Claude Code", "Claude Desktop", "Cursor", "VS Code", "MCP Inspector"]) {
      expect(connection.html).toContain(`<h3>${client}</h3>`);
    }
    expect(connection.html).toContain(`Authorization: Bearer ${connection.secret}`);

    const mcp = new Client({ name: "portal-test", version: "1.0.0" });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(connection.url), {
        requestInit: { headers: { Authorization: `Bearer ${connection.secret}` } },
      }),
    );
    const tools = await mcp.listTools();
    expect(tools.tools.map((tool) => tool.name)).toContain("echo");
    expect(firstText(await mcp.callTool({ name: "echo", arguments: { message: "hi" } }))).toContain("hi");
    await mcp.close();

    const consumers = await unwrap(
      t.client.GET("/portals/{portal_id}/consumers", { params: { path: { portal_id: portal.id } } }),
    );
    expect(consumers.items).toEqual([
      expect.objectContaining({ object: "portal.consumer", sign_in_method: "invitation", consumer_group_ids: [group] }),
    ]);
    const consumerId = consumers.items[0]?.id;
    const session = await unwrap(
      t.client.GET("/sessions/{session_id}", { params: { path: { session_id: connection.sessionId } } }),
    );
    expect(session).toMatchObject({ name: "My echo", consumer_id: consumerId, status: "active" });

    const calls = await unwrap(
      t.client.GET("/sessions/{session_id}/tool-calls", { params: { path: { session_id: connection.sessionId } } }),
    );
    expect(calls.items).toEqual([expect.objectContaining({ tool_key: "echo", consumer_id: consumerId })]);

    const after = await visitor.get(`/p/${portal.id}`);
    expect(after.html).toContain("My echo");
    expect(after.html).toContain(connection.url);
    expect(after.html).toContain("<td><code>echo</code></td><td>succeeded</td>");
    expect(after.html).not.toContain(connection.secret);

    const accepted = await unwrap(
      t.client.GET("/portals/{portal_id}/invitations/{invitation_id}", {
        params: { path: { portal_id: portal.id, invitation_id: invitation.id } },
      }),
    );
    expect(accepted).toMatchObject({ status: "accepted", consumer_id: consumerId });
    const again = await new PageVisitor(t.url).get(new URL(invitation.url ?? "").pathname);
    expect(again.status).toBe(410);
    expect(again.html).toContain("already used");
  });

  it("lets a consumer rename and end their own connections, and never touch another's", async () => {
    const { portal, template, group } = await marketplace("Owners");
    const alice = await signedInVisitor(portal.id, group);
    const bob = await signedInVisitor(portal.id, group);
    const mine = await connectTemplate(alice, portal.id, template.id, "Alice's");

    const bobPage = await bob.get(`/p/${portal.id}`);
    expect(bobPage.html).not.toContain("Alice&#39;s");
    expect(bobPage.html).not.toContain(mine.sessionId);
    // Bob's own (valid) token on Alice's session id: not his, so a 404 like an unknown id.
    const renameAction = `/p/${portal.id}/sessions/${mine.sessionId}/rename`;
    const bobToken = csrfOf(bobPage.html, `/p/${portal.id}/sign-out`);
    const probe = await bob.post(renameAction, { csrf: bobToken, name: "hijacked" });
    expect(probe.status).toBe(404);
    // The refusal is the portal's own page, in its brand.
    expect(probe.html).toContain('<p class="brand">Owners Tools</p>');
    expect(probe.html).toContain("--primary: #0b6e4f");
    expect((await bob.post(`/p/${portal.id}/sessions/${mine.sessionId}/end`, { csrf: bobToken })).status).toBe(404);
    // Ids that are not ids (a NUL, stray text) are unknown too, not an error.
    expect((await bob.post(`/p/${portal.id}/sessions/x%00y/end`, { csrf: bobToken })).status).toBe(404);
    expect((await bob.get("/p/ptl_%00")).status).toBe(404);
    expect(await mcpStatus(mine.url, mine.secret)).toBe(200);

    const alicePage = await alice.get(`/p/${portal.id}`);
    const renamed = await alice.post(renameAction, { csrf: csrfOf(alicePage.html, renameAction), name: "Renamed" });
    expect(renamed.status).toBe(303);
    const session = await unwrap(
      t.client.GET("/sessions/{session_id}", { params: { path: { session_id: mine.sessionId } } }),
    );
    expect(session.name).toBe("Renamed");

    const endAction = `/p/${portal.id}/sessions/${mine.sessionId}/end`;
    const ended = await alice.post(endAction, { csrf: csrfOf((await alice.get(`/p/${portal.id}`)).html, endAction) });
    expect(ended.status).toBe(303);
    expect(await mcpStatus(mine.url, mine.secret)).toBe(404);
    expect((await alice.get(`/p/${portal.id}`)).html).not.toContain(mine.url);
  });

  it("refuses forms without the right CSRF token", async () => {
    const { portal, template, group } = await marketplace("Csrf");
    const visitor = await signedInVisitor(portal.id, group);
    const action = `/p/${portal.id}/templates/${template.id}/sessions`;
    for (const csrf of [
      "",
      "forged",
      csrfOf((await (await signedInVisitor(portal.id, group)).get(`/p/${portal.id}`)).html, action),
    ]) {
      const res = await visitor.post(action, { csrf });
      expect(res.status).toBe(403);
      expect(res.html).toContain("This form has expired");
    }
    const invitation = await invite(t.tenant, portal.id, group);
    const stranger = new PageVisitor(t.url);
    const path = new URL(invitation.url ?? "").pathname;
    expect((await stranger.post(path, { csrf: "forged" })).status).toBe(403);
    const still = await unwrap(
      t.client.GET("/portals/{portal_id}/invitations/{invitation_id}", {
        params: { path: { portal_id: portal.id, invitation_id: invitation.id } },
      }),
    );
    expect(still.status).toBe("pending");
    const sessions = await t.db.selectFrom("sessions").select("id").where("portal_id", "=", portal.id).execute();
    expect(sessions).toEqual([]);
  });

  it("refuses expired, revoked and unknown invitations with pages that say why", async () => {
    const { portal, group } = await marketplace("Expiry");
    const visitor = new PageVisitor(t.url);
    const expired = await invite(t.tenant, portal.id, group, 60);
    await t.db
      .updateTable("portal_invitations")
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where("id", "=", expired.id)
      .execute();
    const expiredPage = await visitor.get(new URL(expired.url ?? "").pathname);
    expect(expiredPage.status).toBe(410);
    expect(expiredPage.html).toContain("Invitation expired");
    expect(expiredPage.html).toContain('<p class="brand">Expiry Tools</p>');

    const revoked = await invite(t.tenant, portal.id, group);
    const withdrawn = await unwrap(
      t.client.DELETE("/portals/{portal_id}/invitations/{invitation_id}", {
        params: { path: { portal_id: portal.id, invitation_id: revoked.id } },
      }),
    );
    expect(withdrawn).toMatchObject({ status: "revoked", url: null });
    expect((await visitor.get(new URL(revoked.url ?? "").pathname)).status).toBe(410);
    const unknown = await visitor.get(`/p/${portal.id}/invitations/tpi_nothing`);
    expect(unknown.status).toBe(404);
    expect(unknown.html).toContain("not valid");
    expect(await t.db.selectFrom("portal_consumers").select("id").where("portal_id", "=", portal.id).execute()).toEqual(
      [],
    );
  });

  it("ends sign-ins at their expiry, and the connections made in them with them", async () => {
    const { portal, template, group } = await marketplace("Lifetime");
    await unwrap(
      t.client.PATCH("/portals/{portal_id}", {
        params: { path: { portal_id: portal.id } },
        body: { auth: { session_expiry_time_in_seconds: 300 } },
      }),
    );
    const visitor = await signedInVisitor(portal.id, group);
    expect(visitor.lastSetCookies.join()).toContain("Max-Age=300;");
    const [signIn] = (
      await unwrap(
        t.client.GET("/portals/{portal_id}/consumer-sessions", { params: { path: { portal_id: portal.id } } }),
      )
    ).items;
    expect(signIn?.status).toBe("active");
    expect(Date.parse(signIn?.expires_at ?? "") - Date.parse(signIn?.created_at ?? "")).toBe(300_000);
    const used = await connectTemplate(visitor, portal.id, template.id, "Used after expiry");
    const idle = await connectTemplate(visitor, portal.id, template.id, "Idle after expiry");
    expect(await mcpStatus(used.url, used.secret)).toBe(200);
    await t.db
      .updateTable("portal_consumer_sessions")
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where("portal_id", "=", portal.id)
      .execute();
    expect((await visitor.get(`/p/${portal.id}`)).html).toContain("Sign in to");
    const listed = await unwrap(
      t.client.GET("/portals/{portal_id}/consumer-sessions", {
        params: { path: { portal_id: portal.id }, query: { status: ["expired"] } },
      }),
    );
    expect(listed.items.map((s) => s.id)).toEqual([signIn?.id]);

    // A connection lives as long as the sign-in it was made in: served once more, it is ended instead.
    expect(await mcpStatus(used.url, used.secret)).toBe(404);
    const status = async (id: string) =>
      (await unwrap(t.client.GET("/sessions/{session_id}", { params: { path: { session_id: id } } }))).status;
    expect(await status(used.sessionId)).toBe("deleted");
    // One nobody uses is ended by the server's periodic sweep.
    expect(await status(idle.sessionId)).toBe("active");
    expect(await endSessionsOfExpiredSignIns(t.db)).toEqual([idle.sessionId]);
    expect(await status(idle.sessionId)).toBe("deleted");

    // Signing out ends the connections made in that sign-in too.
    const again = await signedInVisitor(portal.id, group);
    const kept = await connectTemplate(again, portal.id, template.id);
    const signOut = `/p/${portal.id}/sign-out`;
    expect(
      (await again.post(signOut, { csrf: csrfOf((await again.get(`/p/${portal.id}`)).html, signOut) })).status,
    ).toBe(303);
    expect(await mcpStatus(kept.url, kept.secret)).toBe(404);
  });

  it("stops a consumer's connection URLs at once when their sign-in, their access, they or the portal go", async () => {
    const { portal, template, group } = await marketplace("Revocation");
    const path = { portal_id: portal.id };

    // Revoking the sign-in a connection was made in ends that connection and signs the browser out.
    const first = await signedInVisitor(portal.id, group);
    const a = await connectTemplate(first, portal.id, template.id);
    const [signIn] = (await unwrap(t.client.GET("/portals/{portal_id}/consumer-sessions", { params: { path } }))).items;
    const revokedSignIn = await unwrap(
      t.client.DELETE("/portals/{portal_id}/consumer-sessions/{consumer_session_id}", {
        params: { path: { ...path, consumer_session_id: signIn?.id ?? "" } },
      }),
    );
    expect(revokedSignIn.status).toBe("revoked");
    expect(await mcpStatus(a.url, a.secret)).toBe(404);
    expect((await first.get(`/p/${portal.id}`)).html).toContain("Sign in to");

    // Revoking the consumer ends every connection of theirs and keeps them out.
    const second = await signedInVisitor(portal.id, group);
    const b = await connectTemplate(second, portal.id, template.id);
    const consumer = (await unwrap(t.client.GET("/portals/{portal_id}/consumers", { params: { path } }))).items.at(-1);
    const revoked = await unwrap(
      t.client.DELETE("/portals/{portal_id}/consumers/{consumer_id}", {
        params: { path: { ...path, consumer_id: consumer?.id ?? "" } },
      }),
    );
    expect(revoked.status).toBe("revoked");
    expect(await mcpStatus(b.url, b.secret)).toBe(404);
    expect((await second.get(`/p/${portal.id}`)).html).toContain("Sign in to");

    // Taking the group's access away ends the connections made through it; other groups' stay.
    const third = await signedInVisitor(portal.id, group);
    const c = await connectTemplate(third, portal.id, template.id);
    const [access] = (await unwrap(t.client.GET("/portals/{portal_id}/consumer-access", { params: { path } }))).items;
    await unwrap(
      t.client.DELETE("/portals/{portal_id}/consumer-access/{consumer_access_id}", {
        params: { path: { ...path, consumer_access_id: access?.id ?? "" } },
      }),
    );
    expect(await mcpStatus(c.url, c.secret)).toBe(404);
    const nothing = await third.get(`/p/${portal.id}`);
    expect(nothing.html).toContain("Nothing is shared with you");
    const action = `/p/${portal.id}/templates/${template.id}/sessions`;
    const denied = await third.post(action, {
      csrf: csrfOf((await third.get(`/p/${portal.id}`)).html, `/p/${portal.id}/sign-out`),
    });
    expect(denied.status).toBe(404);

    // Deleting the portal ends what its consumers started.
    const fourth = await signedInVisitor(portal.id, group);
    await grant(t.tenant, portal.id, group, template.id);
    const d = await connectTemplate(fourth, portal.id, template.id);
    await unwrap(t.client.DELETE("/portals/{portal_id}", { params: { path } }));
    expect(await mcpStatus(d.url, d.secret)).toBe(404);
  });

  it("keeps portals, consumers and cookies apart across portals and instances", async () => {
    const { portal, group } = await marketplace("Home");
    const other = await marketplace("Elsewhere");
    const visitor = await signedInVisitor(portal.id, group);
    const cookie = visitor.cookies.get("tp_portal_session") ?? "";
    // The cookie is scoped to its portal's path; sent to another portal by hand it signs nobody in.
    const res = await fetch(`${t.url}/p/${other.portal.id}`, { headers: { cookie: `tp_portal_session=${cookie}` } });
    expect(await res.text()).toContain("Sign in to");

    const intruder = await t.createTenant("portal intruder");
    const path = { portal_id: portal.id };
    for (const res of [
      await intruder.client.GET("/portals/{portal_id}/consumers", { params: { path } }),
      await intruder.client.GET("/portals/{portal_id}/consumer-sessions", { params: { path } }),
      await intruder.client.GET("/portals/{portal_id}/invitations", { params: { path } }),
      await intruder.client.POST("/portals/{portal_id}/invitations", {
        params: { path },
        body: { consumer_group_id: group },
      }),
    ]) {
      expect(res.response.status).toBe(404);
    }
    const consumer = (await unwrap(t.client.GET("/portals/{portal_id}/consumers", { params: { path } }))).items[0];
    const probe = await intruder.client.DELETE("/portals/{portal_id}/consumers/{consumer_id}", {
      params: { path: { ...path, consumer_id: consumer?.id ?? "" } },
    });
    expect(probe.response.status).toBe(404);
    // And under the intruder's own portal, the id is just as unknown.
    const own = await unwrap(intruder.client.POST("/portals", { body: { name: "Intruder portal" } }));
    const underOwn = await intruder.client.GET("/portals/{portal_id}/consumers/{consumer_id}", {
      params: { path: { portal_id: own.id, consumer_id: consumer?.id ?? "" } },
    });
    expect(underOwn.response.status).toBe(404);
    expect((await visitor.get(`/p/${portal.id}`)).html).toContain("Servers you can connect");
  });
});
