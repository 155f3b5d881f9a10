import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../../src/runtimes/pool.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  initializeBody,
  mcpHeaders,
} from "../../mcp/gateway-fixtures.ts";
import { catalogProvider } from "../../support/catalog-fixtures.ts";
import type { StartedTestServer, Tenant } from "../../support/server.ts";
import { startTestServer } from "../../support/server.ts";

let t: StartedTestServer;
let intruder: Tenant;
let session: CreatedSession;
let otherSession: CreatedSession;
let callId: string;

const mcp = (s: CreatedSession, token: string | null, path = "") =>
  fetch(`${endpointOf(t, s)}${path}`, {
    method: "POST",
    headers: token === null ? { "content-type": "application/json" } : mcpHeaders(token),
    body: initializeBody,
  });

beforeAll(async () => {
  t = await startTestServer();
  intruder = await t.createTenant("intruder");
  const everything = await catalogProvider(t.db, "everything");
  const deploymentId = (await deployProvider(t.client, everything.providerId, "Everything")).id;
  session = await createSession(t.client, [{ provider_deployment: deploymentRef(deploymentId) }]);
  otherSession = await createSession(t.client, [{ provider_deployment: deploymentRef(deploymentId) }]);
  const res = await t.client.POST("/sessions/{session_id}/tool-calls", {
    params: { path: { session_id: session.id } },
    body: { tool_id: "echo", input: { message: "mine" } },
  });
  callId = res.data?.id ?? "";
});

afterAll(async () => {
  await upstreams.closeAll();
  await t?.close();
});

describe("tool-call paths across tenants", () => {
  it("answers 404 to another instance's key on every path, and lists nothing of ours", async () => {
    const as = (path: string, init: RequestInit = {}) =>
      fetch(`${t.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${intruder.apiKey}`, "content-type": "application/json" },
      });
    expect((await as(`/tool-calls/${callId}`)).status).toBe(404);
    expect((await as(`/sessions/${session.id}/tool-calls`)).status).toBe(404);
    expect((await as(`/sessions/${session.id}/tool-calls/${callId}`)).status).toBe(404);
    const create = await as(`/sessions/${session.id}/tool-calls`, {
      method: "POST",
      body: JSON.stringify({ tool_id: "echo", input: { message: "theirs" } }),
    });
    expect(create.status).toBe(404);
    const list = await as("/tool-calls");
    expect(((await list.json()) as { items: unknown[] }).items).toEqual([]);
  });

  it("answers 401 without an API key", async () => {
    for (const path of ["/tool-calls", `/tool-calls/${callId}`, `/sessions/${session.id}/tool-calls`]) {
      expect((await t.fetch(path, { auth: false })).status, path).toBe(401);
    }
  });
});

describe("the MCP endpoint", () => {
  it("serves the session's secret and its instance's API keys", async () => {
    expect((await mcp(session, session.secret)).status).toBe(200);
    expect((await mcp(session, t.tenant.apiKey)).status).toBe(200);
  });

  it("answers 401 without a bearer token or with a wrong secret (another session's too)", async () => {
    for (const token of [null, "tpss_wrong", otherSession.secret, `${session.secret}x`]) {
      const res = await mcp(session, token);
      expect(res.status, String(token)).toBe(401);
      expect(await res.json()).toMatchObject({ code: "unauthorized" });
    }
  });

  it("answers 404 to another instance's API key and for unknown sessions", async () => {
    const res = await mcp(session, intruder.apiKey);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "not_found", entity: "session" });
    const unknown = { ...session, connection_url: "http://127.0.0.1/mcp/ses_01jqz7m3c8v4r2k9x5n6t0w1ye" };
    expect((await mcp(unknown, session.secret)).status).toBe(404);
  });

  it("applies the same rules to the legacy SSE endpoints", async () => {
    const sse = (token: string) =>
      fetch(`${endpointOf(t, session)}/sse`, { headers: { authorization: `Bearer ${token}` } });
    expect((await sse(intruder.apiKey)).status).toBe(404);
    expect((await sse("tpss_wrong")).status).toBe(401);
    expect((await mcp(session, intruder.apiKey, "/messages?sessionId=x")).status).toBe(404);
    expect((await mcp(session, session.secret, "/messages?sessionId=x")).status).toBe(404);
  });

  it("answers 410 for an archived session and 404 for a deleted one", async () => {
    await t.db.updateTable("sessions").set({ status: "archived" }).where("id", "=", otherSession.id).execute();
    const archived = await mcp(otherSession, otherSession.secret);
    expect(archived.status).toBe(410);
    expect(await archived.json()).toMatchObject({ code: "gone", entity: "session" });
    await t.client.DELETE("/sessions/{session_id}", { params: { path: { session_id: otherSession.id } } });
    expect((await mcp(otherSession, otherSession.secret)).status).toBe(404);
  });

  it("answers 405 to GET and DELETE (the endpoint is stateless)", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await fetch(endpointOf(t, session), { method, headers: mcpHeaders(session.secret) });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
    }
  });
});
