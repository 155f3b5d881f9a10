import { once } from "node:events";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import type { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callsInFlight } from "../../src/mcp/gateway.ts";
import { UpstreamPool, upstreams } from "../../src/runtimes/pool.ts";
import type { StartedTestServer } from "../support/server.ts";
import { startTestServer } from "../support/server.ts";
import { startModernUpstream } from "../support/upstream-modern.ts";
import { startTestUpstream, type TestUpstream } from "../support/upstream-server.ts";
import {
  type CreatedSession,
  connectMcp,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  firstText,
  remoteProvider,
} from "./gateway-fixtures.ts";

// Read when the app is built (beforeAll): short enough to exercise, long enough for a loaded CI machine. A listing
// waits a sixth of that for any one provider.
process.env.TOOLPLANE_UPSTREAM_TIMEOUT_MS = "3000";
process.env.TOOLPLANE_UPSTREAM_LIST_TIMEOUT_MS = "500";
// (A listing left a slow provider out only for itself: the upstream goes on connecting and is listed next time.)

let t: StartedTestServer;
let ours: TestUpstream;
let down: TestUpstream;
let session: CreatedSession;
let oursDeploymentId: string;

const call = async (sessionId: string, tool_id: string, input: Record<string, unknown> = {}) => {
  const res = await t.client.POST("/sessions/{session_id}/tool-calls", {
    params: { path: { session_id: sessionId } },
    body: { tool_id, input },
  });
  expect(res.response.status, JSON.stringify(res.error)).toBe(201);
  if (!res.data) throw new Error("no body");
  return res.data;
};

beforeAll(async () => {
  [t, ours, down] = await Promise.all([startTestServer(), startTestUpstream(), startTestUpstream()]);
  const oursProvider = await remoteProvider(t.db, "ours", ours.url);
  const downProvider = await remoteProvider(t.db, "down", down.url);
  oursDeploymentId = (await deployProvider(t.client, oursProvider.providerId, "Ours")).id;
  session = await createSession(t.client, [
    { provider_deployment: deploymentRef(oursDeploymentId) },
    { provider_deployment: deploymentRef((await deployProvider(t.client, downProvider.providerId, "Down")).id) },
  ]);
});

afterAll(async () => {
  await upstreams.closeAll();
  await Promise.all([ours?.close(), down?.close(), t?.close()]);
});

describe("a provider that does not answer holds back no request of the others", () => {
  it("answers logging/setLevel once the other providers did, as a listing does", async () => {
    const stalling = await startTestUpstream({ setLevelDelayMs: 60_000 });
    const provider = await remoteProvider(t.db, "stalling", stalling.url);
    const both = await createSession(t.client, [
      { provider_deployment: deploymentRef(oursDeploymentId) },
      { provider_deployment: deploymentRef((await deployProvider(t.client, provider.providerId, "Stalling")).id) },
    ]);
    const client = await connectMcp(t, both);
    try {
      // Without the bound it waits for the upstream timeout (3 s here); with it, the list timeout (0.5 s).
      const answered = client.setLoggingLevel("debug").then(() => "answered");
      const waited = new Promise((resolve) => setTimeout(() => resolve("still waiting"), 2_000));
      expect(await Promise.race([answered, waited])).toBe("answered");
    } finally {
      await client.close();
      await stalling.close();
    }
  });

  it("gives an upstream two clients share the most verbose level either asked for, and each only its own", async () => {
    const shared = await startTestUpstream();
    const provider = await remoteProvider(t.db, "shared-logs", shared.url);
    const one = await createSession(t.client, [
      { provider_deployment: deploymentRef((await deployProvider(t.client, provider.providerId, "Shared")).id) },
    ]);
    const [verbose, quiet] = [await connectMcp(t, one), await connectMcp(t, one)];
    try {
      await verbose.setLoggingLevel("debug");
      await quiet.setLoggingLevel("error");
      // The upstream connection is shared: the second client's level would silence the first one's debug lines.
      expect(shared.logLevels).toEqual(["debug"]);
      await (verbose.transport as StreamableHTTPClientTransport | undefined)?.terminateSession();
      await verbose.close();
      // Once the verbose client is gone, the upstream is asked for what the remaining one wants.
      await expect.poll(() => shared.logLevels).toEqual(["debug", "error"]);
    } finally {
      await quiet.close();
      await shared.close();
    }
  });

  it("opens a subscriptions/listen stream once the other providers subscribed its resources", async () => {
    const sockets = new Set<Socket>();
    const hung = createServer((socket) => sockets.add(socket)).listen(0, "127.0.0.1");
    await once(hung, "listening");
    const modern = await startModernUpstream();
    const client = new ModernClient(
      { name: "listening", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    try {
      const hungUrl = `http://127.0.0.1:${(hung.address() as AddressInfo).port}/mcp`;
      const [hungProvider, modernProvider] = await Promise.all([
        remoteProvider(t.db, "hung-listen", hungUrl),
        remoteProvider(t.db, "modern-listen", modern.url),
      ]);
      const both = await createSession(t.client, [
        { provider_deployment: deploymentRef((await deployProvider(t.client, hungProvider.providerId, "H")).id) },
        { provider_deployment: deploymentRef((await deployProvider(t.client, modernProvider.providerId, "M")).id) },
      ]);
      await client.connect(
        new ModernTransport(endpointOf(t, both), {
          requestInit: { headers: { Authorization: `Bearer ${both.secret}` } },
        }),
      );
      // Without the bound the stream waits for the upstream timeout (3 s here); with it, the list timeout (0.5 s).
      const opened = client
        .listen({ resourceSubscriptions: ["modern-listen+memo://today", "hung-listen+memo://today"] })
        .then(async (subscription) => {
          await subscription.close();
          return "opened";
        });
      const waited = new Promise((resolve) => setTimeout(() => resolve("still waiting"), 2_000));
      expect(await Promise.race([opened, waited])).toBe("opened");
    } finally {
      await client.close();
      for (const socket of sockets) socket.destroy();
      hung.close();
      await modern.close();
    }
  });
});

describe("upstream failures fail only the call they hit, and are recorded", () => {
  it("times out a slow call while other calls to the same upstream go on", async () => {
    const [slow, quick] = await Promise.all([
      call(session.id, "ours_slow", { ms: 120_000 }),
      call(session.id, "ours_echo", { message: "meanwhile" }),
    ]);
    expect(slow).toMatchObject({
      status: "failed",
      output: null,
      error: { code: "timeout", message: expect.stringMatching(/did not answer within 3000 ms/) },
    });
    expect(slow.completed_at).toEqual(expect.any(String));
    expect(quick).toMatchObject({
      status: "succeeded",
      output: { content: [{ type: "text", text: "upstream: meanwhile" }] },
    });
  });

  it("reports a timeout to an MCP client as a tool error result and records it", async () => {
    const client = await connectMcp(t, session);
    try {
      const result = await client.callTool({ name: "ours_slow", arguments: { ms: 120_000 } });
      expect(result.isError).toBe(true);
      expect(firstText(result)).toMatch(/did not answer within 3000 ms/);
    } finally {
      await client.close();
    }
    const { data } = await t.client.GET("/sessions/{session_id}/tool-calls", {
      params: { path: { session_id: session.id }, query: { tool_id: ["ours_slow"], order: "desc", limit: 1 } },
    });
    expect(data?.items[0]).toMatchObject({ transport: "mcp", status: "failed", error: { code: "timeout" } });
  });

  it("fails a call whose upstream drops the connection mid-call, then reconnects for the next", async () => {
    const crashed = await call(session.id, "ours_crash");
    expect(crashed).toMatchObject({ status: "failed", error: { code: "upstream_unavailable" } });
    expect(await call(session.id, "ours_echo", { message: "again" })).toMatchObject({ status: "succeeded" });
  });

  it("re-initialises transparently when the upstream forgets its MCP session (HTTP 404)", async () => {
    const first = await call(session.id, "ours_echo", { message: "one" });
    const before = ours.initializations;
    ours.forgetSessions();
    const second = await call(session.id, "ours_echo", { message: "two" });
    expect(second).toMatchObject({ status: "succeeded", output: { content: [{ text: "upstream: two" }] } });
    expect(ours.initializations).toBe(before + 1);
    // A new upstream connection served it.
    expect(second.provider_run_id).toMatch(/^prn_/);
    expect(second.provider_run_id).not.toBe(first.provider_run_id);
  });

  it("fails calls to an upstream that went down while the session's other provider keeps working", async () => {
    expect(await call(session.id, "down_echo", { message: "up" })).toMatchObject({ status: "succeeded" });
    await down.close();
    expect(await call(session.id, "down_echo", { message: "gone" })).toMatchObject({
      status: "failed",
      error: { code: "upstream_unavailable" },
    });
    expect(await call(session.id, "ours_echo", { message: "fine" })).toMatchObject({ status: "succeeded" });
    // An MCP client still lists the tools of the providers it can reach.
    const client = await connectMcp(t, session);
    try {
      const keys = (await client.listTools()).tools.map((tool) => tool.name);
      expect(keys).toContain("ours_echo");
    } finally {
      await client.close();
    }
  });

  it("lists and calls the other providers while one upstream hangs, and tells the client which one it left out", async () => {
    // Accepts connections and never answers: no HTTP status, no MCP.
    const sockets = new Set<Socket>();
    const hung = createServer((socket) => sockets.add(socket)).listen(0, "127.0.0.1");
    await once(hung, "listening");
    const hungProvider = await remoteProvider(
      t.db,
      "hung",
      `http://127.0.0.1:${(hung.address() as AddressInfo).port}/mcp`,
    );
    const withHung = await createSession(t.client, [
      { provider_deployment: deploymentRef((await deployProvider(t.client, hungProvider.providerId, "Hung")).id) },
      { provider_deployment: deploymentRef(oursDeploymentId) },
    ]);
    const client = await connectMcp(t, withHung);
    const warnings: string[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
      warnings.push(String(n.params.data));
    });
    try {
      const startedAt = Date.now();
      const keys = (await client.listTools()).tools.map((tool) => tool.name);
      // Bounded by the list timeout, not by the hung upstream (the upstream timeout is six times longer).
      expect(Date.now() - startedAt).toBeLessThan(3000);
      expect(keys).toContain("ours_echo");
      expect(keys.some((key) => key.startsWith("hung_"))).toBe(false);
      expect(warnings).toEqual([expect.stringMatching(/^Provider hung was left out: /)]);
      // A call never asks the hung provider: the key's prefix names its provider.
      expect(firstText(await client.callTool({ name: "ours_echo", arguments: { message: "still" } }))).toBe(
        "upstream: still",
      );
    } finally {
      await client.close();
      for (const socket of sockets) socket.destroy();
      hung.close();
    }
  });

  it("waits for a slow provider while no other has answered, and leaves it out once one has", async () => {
    // Lists after 1.5 s: three times the list timeout, half the upstream timeout.
    const slow = await startTestUpstream({ listDelayMs: 1_500 });
    const sockets = new Set<Socket>();
    const hung = createServer((socket) => sockets.add(socket)).listen(0, "127.0.0.1");
    await once(hung, "listening");
    try {
      const slowDeployment = deploymentRef(
        (await deployProvider(t.client, (await remoteProvider(t.db, "slow", slow.url)).providerId, "Slow")).id,
      );
      const hungUrl = `http://127.0.0.1:${(hung.address() as AddressInfo).port}/mcp`;
      const hungDeployment = deploymentRef(
        (await deployProvider(t.client, (await remoteProvider(t.db, "hung2", hungUrl)).providerId, "Hung")).id,
      );
      // Alone, or beside a provider that never answers: the client gets its tools, not an empty list.
      for (const providers of [[slowDeployment], [slowDeployment, hungDeployment]]) {
        const alone = providers.length === 1;
        const slowSession = await createSession(
          t.client,
          providers.map((provider_deployment) => ({ provider_deployment })),
        );
        const client = await connectMcp(t, slowSession);
        try {
          const keys = (await client.listTools()).tools.map((tool) => tool.name);
          expect(keys).toContain(alone ? "echo" : "slow_echo");
          expect(keys.some((key) => key.startsWith("hung2_"))).toBe(false);
        } finally {
          await client.close();
        }
      }
      // Beside a provider that answers at once, the slow one is left out of the first listing (named in the
      // session's warning) and is in the next one.
      const mixed = await createSession(t.client, [
        { provider_deployment: slowDeployment },
        { provider_deployment: deploymentRef(oursDeploymentId) },
      ]);
      const client = await connectMcp(t, mixed);
      try {
        const first = (await client.listTools()).tools.map((tool) => tool.name);
        expect(first).toContain("ours_echo");
        expect(first.some((key) => key.startsWith("slow_"))).toBe(false);
        await expect
          .poll(async () => (await client.listTools()).tools.map((tool) => tool.name), { timeout: 10_000 })
          .toContain("slow_echo");
      } finally {
        await client.close();
      }
    } finally {
      for (const socket of sockets) socket.destroy();
      hung.close();
      await slow.close();
    }
  });

  it("records an MCP call whose input PostgreSQL cannot store as given (lone surrogate, NUL), and runs it as sent", async () => {
    const message = "half \ud800 and nul \u0000";
    // The API refuses such text outright, naming the field...
    const refused = await t.client.POST("/sessions/{session_id}/tool-calls", {
      params: { path: { session_id: session.id } },
      body: { tool_id: "ours_echo", input: { message } },
    });
    expect(refused.response.status).toBe(400);
    expect(refused.error).toMatchObject({ code: "invalid_data", errors: [{ path: ["input", "message"] }] });
    // ...while an MCP client's call runs with the input as sent (the upstream echoes it back unchanged) and is
    // recorded with U+FFFD where PostgreSQL could not store a character.
    const client = await connectMcp(t, session);
    try {
      expect(firstText(await client.callTool({ name: "ours_echo", arguments: { message } }))).toBe(
        `upstream: ${message}`,
      );
    } finally {
      await client.close();
    }
    const { data } = await t.client.GET("/sessions/{session_id}/tool-calls", {
      params: { path: { session_id: session.id }, query: { order: "desc", limit: 1 } },
    });
    expect(data?.items[0]).toMatchObject({
      transport: "mcp",
      status: "succeeded",
      input: { message: "half \ufffd and nul \ufffd" },
      output: { content: [{ text: "upstream: half \ufffd and nul \ufffd" }] },
    });
  });

  it("on shutdown fails the calls still running (shutdown), answering their clients and completing their records", async () => {
    const client = await connectMcp(t, session);
    try {
      const viaApi = call(session.id, "ours_slow", { ms: 60_000 });
      const viaMcp = client.callTool({ name: "ours_slow", arguments: { ms: 60_000 } });
      await expect.poll(() => callsInFlight.size, { timeout: 15_000 }).toBe(2);
      await callsInFlight.stopAll();
      expect(await viaApi).toMatchObject({ status: "failed", error: { code: "shutdown" } });
      const answered = await viaMcp;
      expect(answered.isError).toBe(true);
      expect(firstText(answered)).toMatch(/^Provider ours: This server stopped before the upstream answered/);
      const { data } = await t.client.GET("/sessions/{session_id}/tool-calls", {
        params: { path: { session_id: session.id }, query: { tool_id: ["ours_slow"], order: "desc", limit: 2 } },
      });
      expect(data?.items.map((item) => [item.status, item.error?.code])).toEqual([
        ["failed", "shutdown"],
        ["failed", "shutdown"],
      ]);
    } finally {
      await client.close();
    }
  });

  it("records an upstream JSON-RPC error as upstream_error", async () => {
    expect(await call(session.id, "ours_fail")).toMatchObject({
      status: "failed",
      error: { code: "upstream_error", message: "fail always fails" },
    });
  });
});

describe("the upstream pool", () => {
  it("closes connections that stayed idle, and reconnects on next use", async () => {
    const pool = new UpstreamPool(60_000);
    const target = {
      runtime: { type: "remote" as const, url: ours.url, protocol: "streamable_http" as const },
      headers: {},
      query: {},
      env: {},
    };
    const upstream = pool.get("spv_idle", target);
    expect(pool.get("spv_idle", { ...target })).toBe(upstream);
    expect(pool.get("spv_idle", { ...target, headers: { Authorization: "Bearer rotated" } })).not.toBe(upstream);
    await upstream.list("tools/list", 3000);
    const firstRun = upstream.runId;
    await pool.closeIdle(Date.now());
    expect(pool.size).toBe(2);
    await pool.closeIdle(Date.now() + 60_000);
    expect(pool.size).toBe(0);
    expect(upstream.runId).toBeNull();
    const again = pool.get("spv_idle", target);
    await again.list("tools/list", 3000);
    expect(again.runId).not.toBe(firstRun);
    await pool.closeAll();
  });
});
