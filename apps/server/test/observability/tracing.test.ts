import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createMcpHandler, Server as McpServer } from "@modelcontextprotocol/server";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTracing, stopTracing, tracingRequested } from "../../src/observability/tracing.ts";
import { upstreams } from "../../src/runtimes/pool.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  firstText,
  remoteProvider,
} from "../mcp/gateway-fixtures.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";

/** A span as the SDK exports it over OTLP/HTTP JSON. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string } }[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
}
const SERVER = 2;
const CLIENT = 3;
const attribute = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue;

const readBody = async (req: IncomingMessage) => {
  let body = "";
  for await (const chunk of req) body += chunk;
  return body;
};

/** What the upstream saw of each request: its JSON-RPC method, `_meta` and `traceparent` header. */
interface Seen {
  method: string;
  meta: Record<string, unknown> | undefined;
  traceparent: string | undefined;
}

const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN = "00f067aa0ba902b7";
const HTTP_TRACE = "0af7651916cd43dd8448eb211c80319c";
const HTTP_SPAN = "b7ad6b7169203331";

let receiver: Server;
const exported: OtlpSpan[] = [];
let upstream: { url: string; seen: Seen[]; close(): Promise<void> };
let t: StartedTestServer;
let session: CreatedSession;
let mcp: Client;

/** An upstream (MCP SDK v2) that notes what every request carried. */
async function startUpstream() {
  const seen: Seen[] = [];
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: "traced-upstream", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler("tools/list", async () => ({
      tools: [{ name: "echo", description: "Echoes.", inputSchema: { type: "object" } }],
    }));
    server.setRequestHandler("tools/call", async (request) => ({
      content: [{ type: "text", text: `echo ${String(request.params.arguments?.message)}` }],
    }));
    return server;
  });
  const app = express();
  app.use(express.json());
  const node = toNodeHandler(handler);
  app.all("/mcp", (req, res) => {
    if (typeof req.body?.method === "string") {
      const traceparent = req.headers.traceparent;
      seen.push({ method: req.body.method, meta: req.body.params?._meta, traceparent: traceparent as string });
    }
    void node(req, res, req.body);
  });
  const server = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    seen,
    close: async () => {
      await handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

beforeAll(async () => {
  // A real OTLP/HTTP receiver: the SDK is configured by the standard variables only.
  receiver = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as {
      resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
    };
    for (const resource of body.resourceSpans) for (const scope of resource.scopeSpans) exported.push(...scope.spans);
    res.setHeader("content-type", "application/json");
    res.end("{}");
  });
  receiver.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => receiver.once("listening", resolve));
  Object.assign(process.env, {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  });
  expect(await startTracing()).toBe(true);

  [t, upstream] = await Promise.all([startTestServer(), startUpstream()]);
  const provider = await remoteProvider(t.db, "traced", upstream.url);
  const deployment = await deployProvider(t.client, provider.providerId, "Traced");
  session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
  // Every HTTP request of this client carries a traceparent header of its own, unrelated to the one in `_meta`.
  mcp = new Client({ name: "tracing-test", version: "1.0.0" });
  const headers = { Authorization: `Bearer ${session.secret}`, traceparent: `00-${HTTP_TRACE}-${HTTP_SPAN}-01` };
  await mcp.connect(new StreamableHTTPClientTransport(endpointOf(t, session), { requestInit: { headers } }));
});

afterAll(async () => {
  await mcp?.close();
  await upstreams.closeAll();
  await Promise.all([upstream?.close(), t?.close()]);
  await stopTracing();
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  for (const name of ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL"]) delete process.env[name];
});

describe("tracing", () => {
  it("is off unless OTEL_TRACES_EXPORTER or an OTLP endpoint is set", () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://x" })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://x", OTEL_SDK_DISABLED: "true" })).toBe(false);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: "console" })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://x" })).toBe(true);
  });

  it("makes a traceparent in MCP _meta the parent of the gateway's span, and propagates it to the upstream", async () => {
    const result = await mcp.callTool({
      name: "echo",
      arguments: { message: "hi" },
      _meta: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` },
    });
    expect(firstText(result)).toBe("echo hi");
    await mcp.listTools();
    // An error whose message quotes a URL with a credential (as a re-authentication link does) is exported masked.
    await expect(mcp.getPrompt({ name: "https://example.test/start?token=s3cret" })).rejects.toThrow(/not offered/);
    await stopTracing(); // exports every span ended so far

    const call = exported.find((s) => s.name === "tools/call echo" && s.kind === SERVER);
    expect(call).toMatchObject({ traceId: CLIENT_TRACE, parentSpanId: CLIENT_SPAN });
    expect(attribute(call as OtlpSpan, "mcp.method.name")).toBe("tools/call");
    expect(attribute(call as OtlpSpan, "gen_ai.tool.name")).toBe("echo");
    expect(attribute(call as OtlpSpan, "gen_ai.operation.name")).toBe("execute_tool");
    expect(attribute(call as OtlpSpan, "mcp.session.id")).toMatch(/^scn_/);
    expect(attribute(call as OtlpSpan, "jsonrpc.request.id")).toMatch(/^\d+$/);
    // The HTTP request's own context is linked, not the parent.
    expect(call?.links).toEqual([expect.objectContaining({ traceId: HTTP_TRACE, spanId: HTTP_SPAN })]);

    // The gateway's request to the upstream: a CLIENT span under it, whose context the upstream received in
    // `_meta` (replacing the client's) and in the traceparent header.
    const upstreamCall = exported.find((s) => s.kind === CLIENT && s.parentSpanId === call?.spanId);
    expect(upstreamCall).toMatchObject({ name: "tools/call echo", traceId: CLIENT_TRACE });
    expect(attribute(upstreamCall as OtlpSpan, "toolplane.provider")).toBe("traced");
    const received = upstream.seen.find((s) => s.method === "tools/call");
    const propagated = `00-${CLIENT_TRACE}-${upstreamCall?.spanId}-01`;
    expect(received?.meta?.traceparent).toBe(propagated);
    expect(received?.traceparent).toBe(propagated);

    const failed = exported.find((s) => s.name.startsWith("prompts/get") && s.kind === SERVER);
    expect(failed?.status?.message).toMatch(/not offered/);
    expect(failed?.status?.message).not.toContain("s3cret");

    // Without a traceparent in `_meta`, the HTTP header's context is the parent.
    const list = exported.find((s) => s.name === "tools/list" && s.kind === SERVER);
    expect(list).toMatchObject({ traceId: HTTP_TRACE, parentSpanId: HTTP_SPAN });
  });
});
