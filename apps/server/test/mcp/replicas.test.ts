import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { upstreams } from "../../src/runtimes/pool.ts";
import { bundledSpec } from "../../src/spec.ts";
import { catalogProvider } from "../support/catalog-fixtures.ts";
import type { StartedTestServer } from "../support/server.ts";
import { startTestServer } from "../support/server.ts";
import { connectMcp, createSession, deploymentRef, deployProvider, endpointOf, firstText } from "./gateway-fixtures.ts";

let a: StartedTestServer;
let b: { url: string; server: Server };
let deploymentId: string;

/** A second app (another "replica") over the same database: PGlite here, PostgreSQL with TEST_DATABASE_URL. */
async function startReplica(of: StartedTestServer) {
  const app = createApp({
    db: of.db,
    spec: bundledSpec,
    logger: pino({ level: "silent" }),
    publicUrl: "http://127.0.0.1",
    bodyLimitBytes: 64 * 1024,
    secrets: of.secrets,
  });
  const server = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

beforeAll(async () => {
  a = await startTestServer();
  b = await startReplica(a);
  deploymentId = (await deployProvider(a.client, (await catalogProvider(a.db, "everything")).providerId, "Ev")).id;
});

afterAll(async () => {
  await upstreams.closeAll();
  b?.server.closeAllConnections();
  await new Promise<void>((resolve) => (b ? b.server.close(() => resolve()) : resolve()));
  await a?.close();
});

describe("two server processes over one database", () => {
  it("serve one MCP session alternately, request by request", async () => {
    const session = await createSession(a.client, [{ provider_deployment: deploymentRef(deploymentId) }]);
    const served: string[] = [];
    let turn = 0;
    // Every HTTP request of one MCP client goes to the other replica than the one before.
    const alternate: typeof fetch = (input, init) => {
      const target = turn++ % 2 === 0 ? a.url : b.url;
      served.push(target);
      const url = new URL(input instanceof Request ? input.url : String(input));
      return fetch(new URL(url.pathname + url.search, target), init);
    };
    const client = new Client({ name: "alternating", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(endpointOf(a, session), {
        requestInit: { headers: { Authorization: `Bearer ${session.secret}` } },
        fetch: alternate,
      }),
    );
    try {
      for (const message of ["one", "two", "three"]) {
        expect(firstText(await client.callTool({ name: "echo", arguments: { message } }))).toBe(`Echo: ${message}`);
        // Upstream connections are per process and re-established lazily: dropping them loses nothing.
        await upstreams.closeAll();
      }
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("echo");
    } finally {
      await client.close();
    }
    expect(new Set(served)).toEqual(new Set([a.url, b.url]));
    // Either replica lists every call, whichever served it.
    const viaB = await fetch(`${b.url}/sessions/${session.id}/tool-calls`, {
      headers: { authorization: `Bearer ${a.tenant.apiKey}` },
    });
    const body = (await viaB.json()) as { items: { status: string; transport: string }[] };
    expect(body.items).toHaveLength(3);
    expect(body.items.every((i) => i.status === "succeeded" && i.transport === "mcp")).toBe(true);
  });

  it("stop serving a deleted session on every replica at once", async () => {
    const session = await createSession(a.client, [{ provider_deployment: deploymentRef(deploymentId) }]);
    const onA = await connectMcp(a, session);
    const onB = await connectMcp(b, session);
    try {
      expect((await onB.listTools()).tools.length).toBeGreaterThan(0);
      const deleted = await a.client.DELETE("/sessions/{session_id}", { params: { path: { session_id: session.id } } });
      expect(deleted.response.status).toBe(200);
      for (const client of [onA, onB]) {
        const error = await client.listTools().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StreamableHTTPError);
        expect((error as StreamableHTTPError).code).toBe(404);
      }
      const call = await a.client.POST("/sessions/{session_id}/tool-calls", {
        params: { path: { session_id: session.id } },
        body: { tool_id: "echo", input: { message: "late" } },
      });
      expect(call.response.status).toBe(409);
    } finally {
      await Promise.all([onA.close(), onB.close()]);
    }
  });
});
