import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createApiKey, createInstance } from "../../src/auth/api-keys.ts";
import { type DatabaseHandle, openDatabase } from "../../src/db/database.ts";
import { type ServerProcess, startServerProcess } from "../support/server-process.ts";
import { startEverythingHttp } from "../support/upstream-everything.ts";
import { startModernUpstream } from "../support/upstream-modern.ts";
import { firstText, remoteProvider } from "./gateway-fixtures.ts";

/**
 * The real proof of the Scale requirement: two `main.ts` server processes over one PostgreSQL database serve one
 * MCP session alternately. Runs when TEST_DATABASE_URL is set (`node scripts/with-postgres.mjs pnpm vitest run …`).
 */
const adminUrl = process.env.TEST_DATABASE_URL;

/** The server-everything processes started by the process `pid`. */
const upstreamsOf = (pid: number): number[] =>
  execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(pid)], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.includes("server-everything"))
    .map((line) => Number.parseInt(line, 10));

/** Whether the process still runs (a zombie left for init to reap has ended). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

describe.skipIf(!adminUrl)("two server processes over one PostgreSQL database", () => {
  const name = `toolplane_procs_${randomBytes(6).toString("hex")}`;
  let database: DatabaseHandle;
  let servers: ServerProcess[] = [];
  let apiKey: string;

  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${name} template ${inject("postgresTemplate")}`);
    await admin.end();
    const url = new URL(adminUrl ?? "");
    url.pathname = `/${name}`;
    database = await openDatabase({ kind: "postgres", url: url.toString(), poolSize: 2 });
    apiKey = (await createApiKey(database.db, await createInstance(database.db, "procs"), "test")).key;
    const secretKey = `k1:${randomBytes(32).toString("base64")}`;
    servers = await Promise.all([
      startServerProcess(url.toString(), secretKey),
      startServerProcess(url.toString(), secretKey),
    ]);
  });

  afterAll(async () => {
    for (const { child } of servers) if (child.exitCode === null) child.kill("SIGKILL");
    await database?.close();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  });

  it("see a change made through the other process within moments (session views in memory, dropped by NOTIFY)", async () => {
    const [a, b] = servers;
    if (!a || !b) throw new Error("servers not started");
    const api = (base: string, method: string, path: string, body?: unknown) =>
      fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: body ? JSON.stringify(body) : undefined,
      });
    const everything = await database.db
      .selectFrom("providers")
      .select("id")
      .where("slug", "=", "everything")
      .executeTakeFirstOrThrow();
    const deployment = (await (
      await api(a.url, "POST", "/provider-deployments", { name: "Views", provider_id: everything.id })
    ).json()) as { id: string };
    const session = (await (
      await api(a.url, "POST", "/sessions", {
        providers: { provider_deployment: { type: "reference", provider_deployment_id: deployment.id } },
      })
    ).json()) as { id: string; secret: string; provider_deployments: { id: string }[] };
    /** tools/list through process B (a 2025 request without an MCP session: served per request). */
    const toolsViaB = async (): Promise<number | string[]> => {
      const res = await fetch(`${b.url}/mcp/${session.id}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${session.secret}`,
          accept: "application/json, text/event-stream",
          "content-type": "application/json",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      });
      if (res.status !== 200) return res.status;
      const text = await res.text();
      const message = JSON.parse(/^data: (.+)$/m.exec(text)?.[1] ?? text) as { result: { tools: { name: string }[] } };
      return message.result.tools.map((tool) => tool.name);
    };
    // B has read (and keeps) the session's view.
    expect(await toolsViaB()).toContain("echo");
    expect(await toolsViaB()).toContain("echo");

    // The provider removed through A: B no longer offers its tools.
    const removed = await api(
      a.url,
      "DELETE",
      `/sessions/${session.id}/providers/${session.provider_deployments[0]?.id}`,
    );
    expect(removed.status).toBeLessThan(300);
    await expect.poll(toolsViaB, { timeout: 5_000 }).toEqual([]);

    // The session deleted through A: B answers 404.
    expect((await api(a.url, "DELETE", `/sessions/${session.id}`)).status).toBeLessThan(300);
    await expect.poll(toolsViaB, { timeout: 5_000 }).toBe(404);
  });

  it("cancel a call that runs in one process when its client's notifications/cancelled reaches the other", async () => {
    const [a, b] = servers;
    if (!a || !b) throw new Error("servers not started");
    const upstream = await startEverythingHttp();
    try {
      const provider = await remoteProvider(database.db, "everything-remote", upstream.url);
      const api = async (path: string, body?: unknown) => {
        const res = await fetch(`${a.url}${path}`, {
          method: body ? "POST" : "GET",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          body: body ? JSON.stringify(body) : undefined,
        });
        return (await res.json()) as Record<string, unknown> & { id: string; secret: string };
      };
      const deployment = await api("/provider-deployments", { name: "Remote", provider_id: provider.providerId });
      const session = await api("/sessions", {
        providers: { provider_deployment: { type: "reference", provider_deployment_id: deployment.id } },
      });
      // The MCP session opens on A (A holds it); its tools/calls go to B, everything else to A.
      const routed: typeof fetch = (input, init) => {
        const url = new URL(input instanceof Request ? input.url : String(input));
        const target = String(init?.body ?? "").includes('"tools/call"') ? b.url : a.url;
        return fetch(new URL(url.pathname + url.search, target), init);
      };
      const client = new Client({ name: "cancelling", version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(`/mcp/${session.id}`, a.url), {
        requestInit: { headers: { Authorization: `Bearer ${session.secret}` } },
        fetch: routed,
      });
      await client.connect(transport);
      const abort = new AbortController();
      let progressed: () => void = () => undefined;
      const running = new Promise<void>((resolve) => (progressed = resolve));
      const call = client.callTool(
        { name: "trigger-long-running-operation", arguments: { duration: 30, steps: 30 } },
        undefined,
        { signal: abort.signal, onprogress: () => progressed(), timeout: 60_000 },
      );
      await running;
      const latest = async () => {
        const calls = (await api(`/sessions/${session.id}/tool-calls`)) as unknown as { items: { status: string }[] };
        return calls.items[0]?.status;
      };
      // Another session cannot cancel it, even knowing its connection's id: that connection is not its own.
      const other = await api("/sessions", {
        providers: { provider_deployment: { type: "reference", provider_deployment_id: deployment.id } },
      });
      const forged = Array.from({ length: 10 }, (_, requestId) => ({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId, reason: "forged" },
      }));
      const refused = await fetch(`${b.url}/mcp/${other.id}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${other.secret}`,
          "mcp-session-id": transport.sessionId ?? "",
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify(forged),
      });
      expect(refused.status).toBe(404);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await latest()).toBe("waiting_for_response");
      abort.abort("changed my mind");
      await expect(call).rejects.toThrow();
      // B stops the call and records it cancelled long before its 30 s are up.
      await expect.poll(latest, { timeout: 10_000, interval: 200 }).toBe("cancelled");
      await client.close();
    } finally {
      await upstream.close();
    }
  });

  // A 2025 client's logging/setLevel may land on a replica that does not hold its connection, and its later
  // requests on either: each one relays only the messages at or above the level, and asks a 2026-07-28 upstream
  // for it (the level is on the connection's row; the holding process hears of it through NOTIFY).
  it("honour a 2025 client's log level on both processes, whichever one it was set on", async () => {
    const [a, b] = servers;
    if (!a || !b) throw new Error("servers not started");
    const upstream = await startModernUpstream();
    try {
      const provider = await remoteProvider(database.db, "modern-logs", upstream.url);
      const api = async (path: string, body: unknown) => {
        const res = await fetch(`${a.url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        return (await res.json()) as { id: string; secret: string };
      };
      const deployment = await api("/provider-deployments", { name: "Modern", provider_id: provider.providerId });
      const session = await api("/sessions", {
        providers: { provider_deployment: { type: "reference", provider_deployment_id: deployment.id } },
      });
      // The MCP session opens on A (A holds it). Where each later request goes is chosen per request.
      let next = a.url;
      const routed: typeof fetch = (input, init) => {
        const url = new URL(input instanceof Request ? input.url : String(input));
        const target = init?.method === "POST" && !String(init.body).includes('"initialize"') ? next : a.url;
        return fetch(new URL(url.pathname + url.search, target), init);
      };
      const client = new Client({ name: "leveled", version: "1.0.0" });
      const messages: unknown[] = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
        messages.push(n.params.data);
      });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`/mcp/${session.id}`, a.url), {
          requestInit: { headers: { Authorization: `Bearer ${session.secret}` } },
          fetch: routed,
        }),
      );
      const logsOn = async (url: string) => {
        next = url;
        messages.length = 0;
        const result = await client.callTool({ name: "logs", arguments: {} });
        return { result: firstText(result), messages: [...messages] };
      };
      next = b.url;
      await client.setLoggingLevel("error");
      const leveled = { result: "level: error", messages: ["error line"] };
      expect(await logsOn(b.url)).toEqual(leveled);
      await expect.poll(() => logsOn(a.url), { timeout: 5_000, interval: 100 }).toEqual(leveled);
      // And back: set on A, honoured on B.
      next = a.url;
      await client.setLoggingLevel("info");
      expect(await logsOn(b.url)).toEqual({ result: "level: info", messages: ["info line", "error line"] });
      await client.close();
    } finally {
      await upstream.close();
    }
  });

  it("serve one session alternately, and stop their upstream children on SIGTERM", async () => {
    const [a, b] = servers;
    if (!a || !b) throw new Error("servers not started");
    const api = async (base: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method: body ? "POST" : "GET",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: body ? JSON.stringify(body) : undefined,
      });
      return (await res.json()) as Record<string, unknown> & { id: string };
    };
    const everything = await database.db
      .selectFrom("providers")
      .select("id")
      .where("slug", "=", "everything")
      .executeTakeFirstOrThrow();
    const deployment = await api(a.url, "/provider-deployments", { name: "Ev", provider_id: everything.id });
    const session = await api(b.url, "/sessions", {
      providers: { provider_deployment: { type: "reference", provider_deployment_id: deployment.id } },
    });

    const served: string[] = [];
    const alternate: typeof fetch = (input, init) => {
      const target = served.length % 2 === 0 ? a.url : b.url;
      served.push(target);
      const url = new URL(input instanceof Request ? input.url : String(input));
      return fetch(new URL(url.pathname + url.search, target), init);
    };
    const client = new Client({ name: "alternating", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`/mcp/${session.id}`, a.url), {
        requestInit: { headers: { Authorization: `Bearer ${String(session.secret)}` } },
        fetch: alternate,
      }),
    );
    for (const message of ["one", "two", "three", "four"]) {
      expect(firstText(await client.callTool({ name: "echo", arguments: { message } }))).toBe(`Echo: ${message}`);
    }
    await client.close();
    expect(new Set(served)).toEqual(new Set([a.url, b.url]));
    const calls = (await api(a.url, `/sessions/${session.id}/tool-calls`)) as unknown as { items: unknown[] };
    expect(calls.items).toHaveLength(4);

    // Each process started its own stdio upstreams (one for this session; the test before left another in B); a
    // graceful stop ends them.
    const upstreamChildren = servers.map(({ child }) => upstreamsOf(child.pid ?? 0));
    expect(upstreamChildren.map((children) => children.length)).toEqual([1, 2]);
    await Promise.all(
      servers.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            child.once("exit", () => resolve());
            child.kill("SIGTERM");
          }),
      ),
    );
    expect(servers.map(({ child }) => child.exitCode)).toEqual([0, 0]);
    expect(upstreamChildren.flat().filter(running)).toEqual([]);
  });
});
