/**
 * SEP-2243 (MCP 2026-07-28, Streamable HTTP): a tool's `inputSchema` may mark an argument with `x-mcp-header`; a
 * client then also sends it as an `Mcp-Param-<Name>` header (base64-wrapped when it is not plain ASCII), and a
 * server refuses a call whose header is missing or disagrees (400, -32020). The upstream here is built as the SDK
 * v2 documents (McpServer, registerTool), which enforces that. The gateway's upstream leg must send the headers as
 * the SDK client's callTool does, or such tools cannot be called through a session.
 */
import type { Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { createMcpHandler, fromJsonSchema, McpServer } from "@modelcontextprotocol/server";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  firstText,
  remoteProvider,
} from "./gateway-fixtures.ts";

let t: StartedTestServer;
let upstream: HttpServer;
let upstreamUrl: string;
let session: CreatedSession;
const clients: Client[] = [];

beforeAll(async () => {
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: "regional", version: "1.0.0" });
    // The SEP-2243 extension keyword is not in the JSON Schema type the SDK declares.
    const schema = {
      type: "object",
      properties: { region: { type: "string", "x-mcp-header": "Region" }, zone: { type: "integer" } },
    } as Parameters<typeof fromJsonSchema>[0];
    const inputSchema = fromJsonSchema<{ region?: string; zone?: number }>(schema);
    server.registerTool("locate", { description: "Names its region.", inputSchema }, async (args) => ({
      content: [{ type: "text", text: `region ${args.region}` }],
    }));
    return server;
  });
  const app = express();
  app.use(express.json());
  const node = toNodeHandler(handler);
  app.all("/mcp", (req, res) => void node(req, res, req.body));
  upstream = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => upstream.once("listening", resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
  t = await startTestServer();
  const provider = await remoteProvider(t.db, "regional", upstreamUrl);
  const deployment = await deployProvider(t.client, provider.providerId, "Regional");
  session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await upstreams.closeAll();
  upstream?.closeAllConnections();
  await Promise.all([new Promise((resolve) => upstream?.close(resolve)), t?.close()]);
});

/** A 2026-07-28 client (SDK v2, pinned) of `url`. */
async function client(url: URL, headers: Record<string, string> = {}) {
  const connected = new Client(
    { name: "param-client", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await connected.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  clients.push(connected);
  return connected;
}

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

describe("Mcp-Param headers (x-mcp-header)", () => {
  /** A raw 2026-07-28 tools/call of `locate` to `url`, with `headers` besides the standard ones. */
  const rawCall = (
    url: string | URL,
    args: Record<string, unknown>,
    headers: Record<string, string>,
    extra: Record<string, unknown> = {},
  ) =>
    fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "locate",
        ...headers,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: {
          ...call("locate", args),
          ...extra,
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
            "io.modelcontextprotocol/clientCapabilities": {},
          },
        },
      }),
    });

  it("are required by the upstream: a call without them is refused", async () => {
    const raw = await rawCall(upstreamUrl, { region: "eu-west" }, {});
    expect(raw.status).toBe(400);
    expect(((await raw.json()) as { error: { code: number } }).error.code).toBe(-32020);
  });

  for (const lanes of ["on", "off"]) {
    // Both paths answer 400 as the upstream does: the fast lane, and the SDK's server (fast lanes off, or a call
    // with a task), which would answer a handler's error in-band with 200 and so gets the check before it.
    it(`are checked by the gateway as the upstream checks them: -32020 when they disagree (fast lanes ${lanes})`, async () => {
      if (lanes === "off") process.env.TOOLPLANE_MCP_FAST_CALLS = "0";
      try {
        const auth = { authorization: `Bearer ${session.secret}` };
        const cases: [Record<string, unknown>, Record<string, string>, number][] = [
          [{ region: "us" }, { "mcp-param-region": "eu" }, 400], // disagrees
          [{ region: "us" }, {}, 400], // absent
          [{ region: "Zürich" }, { "mcp-param-region": "=?base64?not base64?=" }, 400],
          [{ region: "Zürich" }, { "mcp-param-region": `=?base64?${Buffer.from("Zürich").toString("base64")}?=` }, 200],
          [{ region: "us" }, { "mcp-param-region": "us" }, 200],
          [{ zone: 2 }, {}, 200], // the declared argument is not in the body: no header needed
        ];
        for (const [args, headers, status] of cases) {
          const direct = await rawCall(upstreamUrl, args, headers);
          const viaSession = await rawCall(endpointOf(t, session), args, { ...auth, ...headers });
          const label = JSON.stringify({ args, headers });
          expect(direct.status, label).toBe(status);
          expect(viaSession.status, label).toBe(status);
          const answer = (await viaSession.json()) as { error?: { code: number; message: string } };
          if (status === 400) {
            expect(answer.error?.code, label).toBe(-32020);
            expect(answer.error?.message, label).toMatch(/Mcp-Param-Region/);
          } else expect(answer.error, label).toBeUndefined();
        }
        // A call with a task always takes the SDK's path: refused the same way before anything runs.
        const tasked = await rawCall(
          endpointOf(t, session),
          { region: "us" },
          { ...auth, "mcp-param-region": "eu" },
          {
            task: { ttl: 60_000 },
          },
        );
        expect(tasked.status).toBe(400);
        expect(((await tasked.json()) as { error: { code: number } }).error.code).toBe(-32020);
      } finally {
        delete process.env.TOOLPLANE_MCP_FAST_CALLS;
      }
    });

    it(`reach the upstream with the call, plain and base64-wrapped, as a direct client's (fast lanes ${lanes})`, async () => {
      if (lanes === "off") process.env.TOOLPLANE_MCP_FAST_CALLS = "0";
      try {
        const direct = await client(new URL(upstreamUrl));
        const viaSession = await client(endpointOf(t, session), { Authorization: `Bearer ${session.secret}` });
        for (const region of ["eu-west", "Zürich "]) {
          const args = { region, zone: 3 };
          expect(firstText(await direct.callTool(call("locate", args)))).toBe(`region ${region}`);
          const result = await viaSession.callTool(call("locate", args));
          expect(firstText(result)).toBe(`region ${region}`);
          expect(result.isError ?? false).toBe(false);
        }
        // An argument left out needs no header.
        expect(firstText(await viaSession.callTool(call("locate", { zone: 1 })))).toBe("region undefined");
      } finally {
        delete process.env.TOOLPLANE_MCP_FAST_CALLS;
      }
    });
  }
});
