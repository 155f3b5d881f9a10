import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { observeDatabasePool } from "../../src/observability/metrics.ts";
import { upstreams } from "../../src/runtimes/pool.ts";
import {
  type CreatedSession,
  connectMcp,
  createSession,
  deploymentRef,
  deployProvider,
  firstText,
  remoteProvider,
} from "../mcp/gateway-fixtures.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import { startTestUpstream, type TestUpstream } from "../support/upstream-server.ts";

const TOKEN = "metrics-scrape-token-0123456789";
const PROVIDER = "metered";

let t: StartedTestServer;
let guarded: StartedTestServer;
let upstream: TestUpstream;
let session: CreatedSession;
let mcp: Client;
let database: TestDatabase;

/** The value of one sample of the exposition text (`name{labels} value`), or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const given = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => given[key] === value)) return Number(match[3]);
  }
  return undefined;
}

const scrape = async (server: StartedTestServer, token?: string) => {
  const response = await fetch(`${server.url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  return { status: response.status, type: response.headers.get("content-type"), text: await response.text() };
};

beforeAll(async () => {
  // The token is read when the app is built: only this server requires it. The gateway logs to the process's
  // logger, the one of the app built last: `t`'s.
  process.env.TOOLPLANE_METRICS_TOKEN = TOKEN;
  guarded = await startTestServer().finally(() => delete process.env.TOOLPLANE_METRICS_TOKEN);
  [t, upstream, database] = await Promise.all([
    startTestServer({ logLevel: "warn" }),
    startTestUpstream(),
    createTestDatabase(),
  ]);
  const provider = await remoteProvider(t.db, PROVIDER, upstream.url);
  const deployment = await deployProvider(t.client, provider.providerId, "Metered");
  session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
  mcp = await connectMcp(t, session);
});

afterAll(async () => {
  await mcp?.close();
  await upstreams.closeAll();
  await Promise.all([upstream?.close(), t?.close(), guarded?.close(), database?.close()]);
});

describe("GET /metrics", () => {
  it("counts API requests under their route template, and gateway tool calls, errors and connections per provider", async () => {
    expect((await t.fetch(`/sessions/${session.id}`)).status).toBe(200);
    expect((await t.fetch("/sessions")).status).toBe(200);
    expect(firstText(await mcp.callTool({ name: "echo", arguments: { message: "hi" } }))).toBe("upstream: hi");
    await expect(mcp.callTool({ name: "fail" })).rejects.toThrow();

    const { status, type, text } = await scrape(t);
    expect(status).toBe(200);
    expect(type).toMatch(/^text\/plain; version=0\.0\.4/);
    // The session id never becomes a label value: the route template does.
    expect(text).not.toContain(session.id);
    const route = { method: "GET", route: "/sessions/:session_id", status_code: "200" };
    expect(sample(text, "http_request_duration_seconds_count", route)).toBe(1);
    expect(sample(text, "http_request_duration_seconds_count", { method: "GET", route: "/sessions" })).toBe(1);
    expect(
      sample(text, "http_request_duration_seconds_count", { method: "POST", route: "/mcp/:sessionId" }),
    ).toBeGreaterThan(0);

    expect(sample(text, "toolplane_gateway_tool_calls_total", { provider: PROVIDER, status: "succeeded" })).toBe(1);
    expect(sample(text, "toolplane_gateway_tool_calls_total", { provider: PROVIDER, status: "failed" })).toBe(1);
    expect(
      sample(text, "toolplane_gateway_upstream_errors_total", { provider: PROVIDER, code: "upstream_error" }),
    ).toBe(1);
    expect(sample(text, "toolplane_gateway_tool_call_duration_seconds_count", { provider: PROVIDER })).toBe(2);
    expect(sample(text, "toolplane_gateway_upstream_connections", { provider: PROVIDER })).toBe(1);
    expect(sample(text, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(sample(text, "nodejs_eventloop_lag_seconds")).toBeDefined();

    // Closed upstream connections leave the gauge.
    await upstreams.closeAll();
    expect(sample((await scrape(t)).text, "toolplane_gateway_upstream_connections", { provider: PROVIDER })).toBe(0);
  });

  it("reports the database pool's connections", async () => {
    observeDatabasePool(database.pool);
    await database.db.selectFrom("instances").select("id").execute();
    const { text } = await scrape(t);
    expect(sample(text, "toolplane_db_pool_connections")).toBeGreaterThanOrEqual(1);
    expect(sample(text, "toolplane_db_pool_idle_connections")).toBeGreaterThanOrEqual(1);
    expect(sample(text, "toolplane_db_pool_waiting_requests")).toBe(0);
  });

  it("logs an upstream failure naming the provider, session and call, without the session's secret", () => {
    const line = t
      .logs()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === "upstream tool call failed");
    expect(line).toMatchObject({ provider: PROVIDER, sessionId: session.id, code: "upstream_error" });
    expect(line?.toolCallId).toMatch(/^tcl_/);
    expect(t.logs()).not.toContain(session.secret);
  });

  it("requires TOOLPLANE_METRICS_TOKEN as a bearer token when one is set", async () => {
    const missing = await scrape(guarded);
    expect(missing.status).toBe(401);
    expect(JSON.parse(missing.text)).toMatchObject({ code: "unauthorized" });
    expect((await scrape(guarded, "wrong-token")).status).toBe(401);
    // An API key of the instance is no substitute for the scrape token.
    expect((await scrape(guarded, guarded.tenant.apiKey)).status).toBe(401);
    const allowed = await scrape(guarded, TOKEN);
    expect(allowed.status).toBe(200);
    expect(allowed.text).toContain("# TYPE http_request_duration_seconds histogram");
  });
});
