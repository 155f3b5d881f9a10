import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../../src/runtimes/pool.ts";
import { type CreatedSession, createSession, deploymentRef, deployProvider } from "../../mcp/gateway-fixtures.ts";
import { catalogProvider } from "../../support/catalog-fixtures.ts";
import type { StartedTestServer } from "../../support/server.ts";
import { startTestServer } from "../../support/server.ts";

let t: StartedTestServer;
let session: CreatedSession;
let callId: string;

const post = (sessionId: string, body: unknown) =>
  t.fetch(`/sessions/${sessionId}/tool-calls`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

const countCalls = async () =>
  Number((await t.db.selectFrom("tool_calls").select(t.db.fn.countAll<string>().as("n")).executeTakeFirstOrThrow()).n);

beforeAll(async () => {
  t = await startTestServer();
  const everything = await catalogProvider(t.db, "everything");
  const deploymentId = (await deployProvider(t.client, everything.providerId, "Everything")).id;
  session = await createSession(t.client, [{ provider_deployment: deploymentRef(deploymentId) }]);
  const res = await post(session.id, { tool_id: "echo", input: { message: "x" } });
  expect(res.status).toBe(201);
  callId = ((await res.json()) as { id: string }).id;
});

afterAll(async () => {
  await upstreams.closeAll();
  await t?.close();
});

describe("POST /sessions/:session_id/tool-calls errors", () => {
  it("answers 404 for a key no provider offers, and records nothing", async () => {
    const before = await countCalls();
    const res = await post(session.id, { tool_id: "no-such-tool", input: {} });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "not_found", entity: "tool" });
    expect(await countCalls()).toBe(before);
  });

  it.each([
    ["no input", { tool_id: "echo" }],
    ["no tool_id", { input: {} }],
    ["an empty tool_id", { tool_id: "", input: {} }],
    ["input that is not an object", { tool_id: "echo", input: [1] }],
    ["an unknown field", { tool_id: "echo", input: {}, extra: true }],
  ])("answers 400 for %s", async (_label, body) => {
    const res = await post(session.id, body);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "invalid_data", entity: "body" });
  });

  it("answers 404 for an unknown session", async () => {
    const res = await post("ses_01jqz7m3c8v4r2k9x5n6t0w1ye", { tool_id: "echo", input: {} });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "not_found", entity: "session" });
  });

  it("answers 409 for a session that is not active", async () => {
    await t.db.updateTable("sessions").set({ status: "archived" }).where("id", "=", session.id).execute();
    try {
      const res = await post(session.id, { tool_id: "echo", input: { message: "x" } });
      expect(res.status).toBe(409);
      expect(await res.json()).toMatchObject({ code: "conflict", entity: "session" });
    } finally {
      await t.db.updateTable("sessions").set({ status: "active" }).where("id", "=", session.id).execute();
    }
  });
});

describe("GET tool call errors", () => {
  it("answers 404 for unknown ids and for a call of another session", async () => {
    expect((await t.fetch("/tool-calls/tcl_01jqz7m3c8v4r2k9x5n6t0w1yg")).status).toBe(404);
    expect((await t.fetch(`/sessions/${session.id}/tool-calls/tcl_01jqz7m3c8v4r2k9x5n6t0w1yg`)).status).toBe(404);
    expect((await t.fetch(`/sessions/ses_01jqz7m3c8v4r2k9x5n6t0w1ye/tool-calls/${callId}`)).status).toBe(404);
    expect((await t.fetch("/sessions/ses_01jqz7m3c8v4r2k9x5n6t0w1ye/tool-calls")).status).toBe(404);
    const everything = await catalogProvider(t.db, "everything");
    const deploymentId = (await deployProvider(t.client, everything.providerId, "Other")).id;
    const otherSession = await createSession(t.client, [{ provider_deployment: deploymentRef(deploymentId) }]);
    const res = await t.fetch(`/sessions/${otherSession.id}/tool-calls/${callId}`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "not_found", entity: "session.tool_call" });
  });

  it("answers 400 for bad list parameters", async () => {
    for (const query of ["cursor=not-a-cursor", "limit=0", "limit=101", "after=a&before=b", "order=sideways"]) {
      const res = await t.fetch(`/tool-calls?${query}`);
      expect(res.status, query).toBe(400);
      expect((await t.fetch(`/sessions/${session.id}/tool-calls?${query}`)).status, query).toBe(400);
    }
  });
});
