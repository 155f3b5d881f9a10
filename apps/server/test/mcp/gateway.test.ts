import { fileURLToPath } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { createAuthConfig, createCredentials, importInto, tokenSet } from "../support/auth-fixtures.ts";
import { catalogProvider } from "../support/catalog-fixtures.ts";
import type { StartedTestServer } from "../support/server.ts";
import { startTestServer } from "../support/server.ts";
import { type EverythingHttp, startEverythingHttp } from "../support/upstream-everything.ts";
import { LONG_TOOL_NAME, startTestUpstream, type TestUpstream } from "../support/upstream-server.ts";
import {
  type CreatedSession,
  connectMcp,
  createSession,
  deploymentRef,
  deployProvider,
  firstText,
  remoteProvider,
  runtimeProvider,
} from "./gateway-fixtures.ts";

const STDIO_UPSTREAM = fileURLToPath(new URL("../support/upstream-stdio.ts", import.meta.url));

let t: StartedTestServer;
let ours: TestUpstream;
let everythingHttp: EverythingHttp;
const clients: Client[] = [];
const ids = { everything: "", ours: "", oursProvider: "", oursSlug: "", everythingHttp: "" };

const connect = async (...args: Parameters<typeof connectMcp>) => {
  const client = await connectMcp(...args);
  clients.push(client);
  return client;
};

beforeAll(async () => {
  [t, ours, everythingHttp] = await Promise.all([startTestServer(), startTestUpstream(), startEverythingHttp()]);
  const everything = await catalogProvider(t.db, "everything");
  const oursProvider = await remoteProvider(t.db, "ours", ours.url, { oauth: true });
  const httpProvider = await remoteProvider(t.db, "everything-http", everythingHttp.url);
  ids.everything = (await deployProvider(t.client, everything.providerId, "Everything")).id;
  ids.ours = (await deployProvider(t.client, oursProvider.providerId, "Ours")).id;
  ids.oursProvider = oursProvider.providerId;
  ids.oursSlug = oursProvider.slug;
  ids.everythingHttp = (await deployProvider(t.client, httpProvider.providerId, "Everything over HTTP")).id;
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await upstreams.closeAll();
  await Promise.all([ours?.close(), everythingHttp?.close(), t?.close()]);
});

describe("tools/list", () => {
  let session: CreatedSession;
  beforeAll(async () => {
    session = await createSession(t.client, [
      { provider_deployment: deploymentRef(ids.everything) },
      { provider_deployment: deploymentRef(ids.ours) },
    ]);
  });

  it("aggregates every provider's tools under unique keys of at most 60 characters", async () => {
    const client = await connect(t, session);
    const { tools } = await client.listTools();
    const keys = tools.map((tool) => tool.name);
    expect(new Set(keys).size).toBe(keys.length);
    for (const key of keys) expect(key).toMatch(/^[a-zA-Z0-9_.~-]{1,60}$/);
    // With several providers every key carries its provider's slug, whichever names collide.
    expect(keys).toEqual(
      expect.arrayContaining(["everything_get-sum", "everything_get-env", "ours_whoami", "ours_slow", "ours_crash"]),
    );
    expect(keys).not.toContain("echo");
    expect(keys).toEqual(expect.arrayContaining(["everything_echo", "ours_echo"]));
    // A name longer than a key keeps its head; the slug gives way to a short hash.
    const long = keys.find((k) => k.includes("report.generate_quarterly"));
    expect(long).toBeDefined();
    expect(long?.length).toBe(60);
    expect(LONG_TOOL_NAME.length).toBeGreaterThan(60);
    // Definitions pass through under the key.
    expect(tools.find((tool) => tool.name === "ours_echo")?.inputSchema).toMatchObject({ required: ["message"] });
  });

  it("computes the same keys on every request and for every client", async () => {
    const first = (await (await connect(t, session)).listTools()).tools.map((tool) => tool.name);
    const second = (await (await connect(t, session, t.tenant.apiKey)).listTools()).tools.map((tool) => tool.name);
    expect(second).toEqual(first);
  });

  it("applies tool_filters.tool_keys by upstream name or key", async () => {
    const filtered = await createSession(t.client, [
      {
        provider_deployment: deploymentRef(ids.everything),
        tool_filters: { tool_keys: ["get-sum", "everything_echo"] },
      },
      { provider_deployment: deploymentRef(ids.ours), tool_filters: { tool_keys: ["whoami"] } },
    ]);
    const { tools } = await (await connect(t, filtered)).listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["everything_echo", "everything_get-sum", "ours_whoami"]);
  });
});

describe("tools/call", () => {
  it("routes each key to its provider's upstream (stdio and Streamable HTTP)", async () => {
    const session = await createSession(t.client, [
      { provider_deployment: deploymentRef(ids.everything) },
      { provider_deployment: deploymentRef(ids.ours) },
    ]);
    const client = await connect(t, session);
    expect(firstText(await client.callTool({ name: "everything_echo", arguments: { message: "hi" } }))).toBe(
      "Echo: hi",
    );
    expect(firstText(await client.callTool({ name: "ours_echo", arguments: { message: "hi" } }))).toBe("upstream: hi");
    expect(firstText(await client.callTool({ name: "everything_get-sum", arguments: { a: 2, b: 3 } }))).toContain("5");
  });

  it("reaches server-everything over Streamable HTTP", async () => {
    const session = await createSession(t.client, [{ provider_deployment: deploymentRef(ids.everythingHttp) }]);
    const client = await connect(t, session);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain("echo");
    expect(firstText(await client.callTool({ name: "echo", arguments: { message: "over http" } }))).toBe(
      "Echo: over http",
    );
  });

  it("records 40 concurrent calls each with its own input and output (records are written in batches)", async () => {
    const session = await createSession(t.client, [{ provider_deployment: deploymentRef(ids.everythingHttp) }]);
    const client = await connect(t, session);
    const messages = Array.from({ length: 40 }, (_, i) => `concurrent ${i}`);
    const answers = await Promise.all(
      messages.map((message) => client.callTool({ name: "echo", arguments: { message } })),
    );
    expect(answers.map(firstText)).toEqual(messages.map((message) => `Echo: ${message}`));
    const records = await t.db
      .selectFrom("tool_calls")
      .select(["status", "input", "output", "completed_at"])
      .where("session_id", "=", session.id)
      .execute();
    expect(records).toHaveLength(40);
    for (const record of records) {
      const message = (record.input as { message: string }).message;
      expect(record.status).toBe("succeeded");
      expect(JSON.stringify(record.output)).toContain(`Echo: ${message}`);
      expect(record.completed_at).toBeInstanceOf(Date);
    }
  });

  it("sends the auth config's OAuth access token to the upstream as a bearer token", async () => {
    const method = await t.db
      .selectFrom("provider_auth_methods")
      .select("id")
      .where("provider_id", "=", ids.oursProvider)
      .executeTakeFirstOrThrow();
    const credentials = await createCredentials(t.client, ids.ours);
    const authConfig = await createAuthConfig(t.client, ids.ours, method.id, credentials.id);
    const tokens = tokenSet();
    await importInto(t.client, ids.ours, authConfig.id, tokens);
    const session = await createSession(t.client, [
      {
        provider_deployment: deploymentRef(ids.ours),
        provider_auth_config: { type: "reference", provider_auth_config_id: authConfig.id },
      },
    ]);
    const client = await connect(t, session);
    expect(firstText(await client.callTool({ name: "whoami", arguments: {} }))).toBe(`Bearer ${tokens.access_token}`);
    expect(ours.authorizations).toContain(`Bearer ${tokens.access_token}`);
    // The session's own secret never travels upstream.
    expect(ours.authorizations.some((a) => a?.includes(session.secret))).toBe(false);

    // Once its refresh failed, the provider asks for re-authentication: never "tool not offered".
    await t.db
      .updateTable("provider_auth_configs")
      .set({ status: "refresh_failed", status_reason: "invalid_grant" })
      .where("id", "=", authConfig.id)
      .execute();
    const failed = await client.callTool({ name: "whoami", arguments: {} });
    expect(failed.isError).toBe(true);
    const reauth =
      /Provider ours needs re-authentication.*Sign in again by opening http\S+\/oauth\/setup-sessions\/pas_\w+\/start\?token=/;
    expect(firstText(failed)).toMatch(reauth);
    // Every other request that needs the provider says the same, link included. (Not completion/complete: this
    // provider offers no completions, so the session declares none and answers it without the provider.)
    await expect(client.getPrompt({ name: "any" })).rejects.toThrow(reauth);
    await expect(client.readResource({ uri: "test://any" })).rejects.toThrow(reauth);
  });

  it("passes an upstream JSON-RPC error on and rejects unknown keys", async () => {
    const session = await createSession(t.client, [{ provider_deployment: deploymentRef(ids.ours) }]);
    const client = await connect(t, session);
    await expect(client.callTool({ name: "fail", arguments: {} })).rejects.toThrow(/fail always fails/);
    await expect(client.callTool({ name: "nope", arguments: {} })).rejects.toThrow(/not offered/);
  });
});

describe("legacy SSE transport", () => {
  it("lists and calls tools over GET /mcp/:id/sse and its message endpoint", async () => {
    const session = await createSession(t.client, [{ provider_deployment: deploymentRef(ids.everything) }]);
    const client = await connect(t, session, session.secret, "sse");
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("echo");
    expect(firstText(await client.callTool({ name: "echo", arguments: { message: "sse" } }))).toBe("Echo: sse");
    const calls = await t.client.GET("/sessions/{session_id}/tool-calls", {
      params: { path: { session_id: session.id } },
    });
    expect(calls.data?.items).toEqual([
      expect.objectContaining({ transport: "mcp", status: "succeeded", connection_id: expect.stringMatching(/^scn_/) }),
    ]);
  });
});

describe("a stdio upstream", () => {
  const call = async (sessionId: string, tool_id: string) => {
    const res = await t.client.POST("/sessions/{session_id}/tool-calls", {
      params: { path: { session_id: sessionId } },
      body: { tool_id, input: {} },
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(201);
    if (!res.data) throw new Error("no body");
    return res.data;
  };

  it("fails a call whose stdio upstream exits mid-call, then starts a new process for the next", async () => {
    const stdio = await runtimeProvider(t.db, "stdio-ours", {
      type: "stdio",
      command: process.execPath,
      args: ["--import", "tsx", STDIO_UPSTREAM],
    });
    const deployment = await deployProvider(t.client, stdio.providerId, "Stdio");
    const stdioSession = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
    const before = await call(stdioSession.id, "echo");
    expect(before).toMatchObject({ status: "succeeded" });
    expect(await call(stdioSession.id, "crash")).toMatchObject({
      status: "failed",
      error: { code: "upstream_unavailable", message: expect.stringMatching(/closed the connection/) },
    });
    const after = await call(stdioSession.id, "echo");
    expect(after).toMatchObject({ status: "succeeded" });
    const pid = (c: typeof after) => firstText(c.output);
    expect(pid(after)).not.toBe(pid(before));
    expect(after.provider_run_id).not.toBe(before.provider_run_id);
  });
});
