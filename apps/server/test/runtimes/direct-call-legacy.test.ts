/**
 * Direct calls (src/runtimes/direct-call.ts) to a server of a 2025 revision: the request on the wire is the SDK
 * client's (session, revision, no envelope), and what comes back is what the SDK client hands back: results
 * (without a foreign `resultType`), progress that resets the timeout, notifications, a ping answered and other
 * questions refused, a stream the server closed resumed with Last-Event-ID, cancellation by
 * `notifications/cancelled`, and HTTP errors the pool retries on. The upstream is a stateful SDK v1 server with an
 * event store (it closes streams on request and replays them); a recording proxy in front of it shows both
 * clients' requests.
 */
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type Client,
  type Notification,
  type Progress,
  SdkErrorCode,
  SdkHttpError,
} from "@modelcontextprotocol/client";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import { Server as McpServer } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  EmptyResultSchema,
  isInitializeRequest,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, createTransport, directTargetOf, type UpstreamTarget } from "../../src/runtimes/connect.ts";
import { callDirect, type DirectTarget } from "../../src/runtimes/direct-call.ts";
import {
  anyResult,
  listen,
  directCallOptions as options,
  startRecordingProxy,
  toolCallsIn,
} from "../support/direct-call.ts";

const text = (s: string) => ({ content: [{ type: "text" as const, text: s }] });

/** What the upstream saw: cancellations (by request id, with their reason) and calls whose handler was aborted. */
const upstreamState = { cancelled: [] as { requestId: unknown; reason: unknown }[], aborted: 0 };
let upstream: { url: string; server: Server };
let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;
let odd: Server;
let oddUrl: string;
let client: Client;
let direct: DirectTarget;
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** A stateful SDK v1 server (2025-11-25) answering on SSE streams, with an event store so streams can resume. */
async function startLegacyUpstream() {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const mcpServer = () => {
    const server = new McpServer(
      { name: "legacy-upstream", version: "1.0.0" },
      { capabilities: { tools: {}, logging: {} } },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [] }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const args = (request.params.arguments ?? {}) as Record<string, number>;
      const token = request.params._meta?.progressToken;
      switch (request.params.name) {
        case "shout":
          return text(String(request.params.arguments?.text ?? "").toUpperCase());
        case "countdown":
          for (let step = 1; step <= (args.steps ?? 1); step++) {
            await sleep(args.stepMs ?? 0);
            if (token !== undefined) {
              await extra.sendNotification({
                method: "notifications/progress",
                params: { progressToken: token, progress: step, total: args.steps ?? 1 },
              });
            }
          }
          return text(`liftoff after ${args.steps}`);
        case "chatty":
          await extra.sendNotification({ method: "notifications/message", params: { level: "info", data: "hi" } });
          // A cancellation of a server→client request is the protocol layer's, never handed on.
          await extra.sendNotification({ method: "notifications/cancelled", params: { requestId: 99, reason: "x" } });
          return text("done");
        case "questions": {
          await extra.sendRequest({ method: "ping" }, EmptyResultSchema);
          const refused = await extra.sendRequest({ method: "example/ask" }, EmptyResultSchema).then(
            () => "answered",
            (error: { code?: number; message?: string }) => `${error.code} ${error.message}`,
          );
          return text(`pinged; example/ask: ${refused}`);
        }
        case "polled":
          // Ends the call's stream (SEP-1699 polling): the client resumes it to get the result.
          extra.closeSSEStream?.();
          await sleep(150);
          return text("after the break");
        case "typed":
          return { ...text("typed"), resultType: "complete" };
        case "slow":
          await sleep(args.ms ?? 0, extra.signal);
          if (extra.signal.aborted) upstreamState.aborted++;
          return text("slept");
        default:
          return text(`called ${request.params.name}`);
      }
    });
    return server;
  };
  const app = express();
  app.use(express.json());
  app.all("/mcp", async (req, res) => {
    if (req.body?.method === "notifications/cancelled") upstreamState.cancelled.push(req.body.params);
    const sessionId = req.headers["mcp-session-id"];
    let transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId !== undefined || !isInitializeRequest(req.body)) {
        res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
        return;
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        eventStore: new InMemoryEventStore(),
        retryInterval: 50,
        onsessioninitialized: (id) => {
          transports.set(id, created);
        },
      });
      transport = created;
      await mcpServer().connect(transport);
    }
    await transport.handleRequest(req, res, req.body);
  });
  const server = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server };
}

beforeAll(async () => {
  upstream = await startLegacyUpstream();
  proxy = await startRecordingProxy(upstream.url);
  const target: UpstreamTarget = {
    runtime: { type: "remote", url: `${proxy.url}/`, protocol: "streamable_http" },
    headers: { "x-api-key": "k1" },
    query: {},
    env: {},
  };
  client = createClient(target, "toolplane-gateway", {});
  await client.connect(createTransport(target));
  expect(client.getProtocolEra()).toBe("legacy");
  const found = directTargetOf(target, client, "toolplane-gateway", {});
  if (!found) throw new Error("a 2025 upstream over Streamable HTTP is reached directly");
  direct = found;
  expect(direct).toMatchObject({ protocolVersion: "2025-11-25", sessionId: expect.any(String) });
  expect(direct.envelope).toBeUndefined();
  // Answers no well-behaved server gives, by path.
  odd = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const id = (JSON.parse(body) as { id: number }).id;
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32600, message: "refused" } }));
  });
  oddUrl = await listen(odd);
});

afterAll(async () => {
  await client?.close();
  upstream?.server.closeAllConnections();
  await Promise.all([
    new Promise((resolve) => upstream?.server.close(resolve)),
    new Promise((resolve) => proxy?.server.close(resolve)),
    new Promise((resolve) => odd?.close(resolve)),
  ]);
});

const toolCalls = () => toolCallsIn(proxy.seen);

describe("direct tools/calls to a 2025-11-25 upstream", () => {
  it("send the SDK client's request on the client's session and return its result", async () => {
    proxy.seen.length = 0;
    const params = { name: "shout", arguments: { text: "hi" }, _meta: { "example.com/trace": "t1" } };
    const viaSdk = await client.request({ method: "tools/call", params }, anyResult, { onprogress: () => undefined });
    const viaDirect = await callDirect(direct, params, options({ onprogress: () => undefined }));
    expect(viaDirect).toEqual(viaSdk);
    expect(viaDirect).toEqual(text("HI"));
    const [sdk, ours] = toolCalls();
    if (!sdk?.body || !ours?.body) throw new Error("the proxy saw both calls");
    type Body = { id: number; params: { _meta: Record<string, unknown> } };
    const withoutIds = ({ id, params, ...body }: Body) => {
      const { progressToken, ...meta } = params._meta;
      return { ...body, params: { ...params, _meta: { ...meta, progressTokenIsId: progressToken === id } } };
    };
    expect(withoutIds(ours.body as Body)).toEqual(withoutIds(sdk.body as Body));
    // No 2026-07-28 envelope: just the caller's _meta and the progress token.
    expect((ours.body as Body).params._meta).toEqual({ "example.com/trace": "t1", progressToken: ours.body.id });
    for (const name of [
      "accept",
      "content-type",
      "mcp-protocol-version",
      "mcp-session-id",
      "x-api-key",
      "mcp-method",
    ]) {
      expect(ours.headers[name], name).toBe(sdk.headers[name]);
    }
    expect(ours.headers["mcp-session-id"]).toBe(direct.sessionId);
    expect(ours.headers["mcp-method"]).toBeUndefined();
    // The server routes answers by request id within the session it shares with the SDK client, whose ids count
    // up from 0: a direct call's id is one that client does not reach.
    expect(ours.body.id).toBeGreaterThanOrEqual(1_000_000_000);
    expect(ours.body.id).toBeLessThan(2 ** 31);
    expect(sdk.body.id).toBeLessThan(1_000);
    // Without progress, the params go as they are.
    proxy.seen.length = 0;
    await callDirect(direct, { name: "shout", arguments: { text: "x" } }, options());
    expect(toolCalls()[0]?.body?.params).toEqual({ name: "shout", arguments: { text: "x" } });
  });

  it("pass progress on, each one restarting the timeout, and other notifications as the SDK client does", async () => {
    const progress: Progress[] = [];
    const result = await callDirect(
      direct,
      { name: "countdown", arguments: { steps: 4, stepMs: 150 } },
      options({ timeout: 400, onprogress: (p) => progress.push(p) }),
    );
    expect(result).toEqual(text("liftoff after 4"));
    expect(progress).toEqual([1, 2, 3, 4].map((n) => ({ progress: n, total: 4 })));
    const notifications: Notification[] = [];
    await callDirect(direct, { name: "chatty" }, options({ onnotification: (n) => notifications.push(n) }));
    expect(notifications).toEqual([
      { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "hi" } },
    ]);
    const viaSdk: Notification[] = [];
    client.fallbackNotificationHandler = async (notification) => void viaSdk.push(notification);
    await client.request({ method: "tools/call", params: { name: "chatty" } }, anyResult);
    client.fallbackNotificationHandler = undefined;
    expect(viaSdk.map((n) => n.method)).toEqual(notifications.map((n) => n.method));
  });

  it("answer the server's ping and refuse its other questions as the SDK client does", async () => {
    const viaSdk = await client.request({ method: "tools/call", params: { name: "questions" } }, anyResult);
    const viaDirect = await callDirect(direct, { name: "questions" }, options());
    expect(viaDirect).toEqual(viaSdk);
    expect(viaDirect).toEqual(text("pinged; example/ask: -32601 MCP error -32601: Method not found"));
  });

  it("resume a stream the server closed before its response, with Last-Event-ID", async () => {
    proxy.seen.length = 0;
    const viaSdk = await client.request({ method: "tools/call", params: { name: "polled" } }, anyResult);
    const sdkResumes = proxy.seen.filter((request) => request.method === "GET" && request.headers["last-event-id"]);
    proxy.seen.length = 0;
    const viaDirect = await callDirect(direct, { name: "polled" }, options());
    const ourResumes = proxy.seen.filter((request) => request.method === "GET" && request.headers["last-event-id"]);
    expect(viaDirect).toEqual(viaSdk);
    expect(viaDirect).toEqual(text("after the break"));
    expect(sdkResumes).toHaveLength(1);
    expect(ourResumes).toHaveLength(1);
    for (const name of ["accept", "mcp-protocol-version", "mcp-session-id", "x-api-key"]) {
      expect(ourResumes[0]?.headers[name], name).toBe(sdkResumes[0]?.headers[name]);
    }
  });

  it("drop a foreign resultType, as the SDK client does", async () => {
    const viaSdk = await client.request({ method: "tools/call", params: { name: "typed" } }, anyResult);
    const viaDirect = await callDirect(direct, { name: "typed" }, options());
    expect(viaDirect).toEqual(viaSdk);
    expect(viaDirect).toEqual(text("typed"));
  });

  it("cancel by notifications/cancelled, on the caller's signal and on a timeout", async () => {
    // Straight to the upstream: the recording proxy does not pass a closed request on.
    const target = { ...direct, url: new URL(upstream.url) };
    const control = new AbortController();
    const before = { cancelled: upstreamState.cancelled.length, aborted: upstreamState.aborted };
    const call = callDirect(target, { name: "slow", arguments: { ms: 5_000 } }, options({ signal: control.signal }));
    setTimeout(() => control.abort(new Error("the client went away")), 100);
    await expect(call).rejects.toMatchObject({
      code: SdkErrorCode.RequestTimeout,
      message: "Error: the client went away",
    });
    await expect.poll(() => upstreamState.aborted).toBe(before.aborted + 1);
    expect(upstreamState.cancelled.at(-1)).toEqual({
      requestId: expect.any(Number),
      reason: "Error: the client went away",
    });
    const timedOut = callDirect(target, { name: "slow", arguments: { ms: 5_000 } }, options({ timeout: 100 }));
    await expect(timedOut).rejects.toMatchObject({ code: SdkErrorCode.RequestTimeout, message: "Request timed out" });
    await expect.poll(() => upstreamState.aborted).toBe(before.aborted + 2);
    expect(upstreamState.cancelled).toHaveLength(before.cancelled + 2);
  });

  it("turn HTTP errors into SdkHttpErrors, a 400 included, for the pool to reconnect", async () => {
    const lost = callDirect({ ...direct, sessionId: "forgotten" }, { name: "shout" }, options());
    await expect(lost).rejects.toBeInstanceOf(SdkHttpError);
    await expect(lost).rejects.toMatchObject({ status: 404 });
    // A 2026-07-28 server's 400 with the request's JSON-RPC error is that error; in 2025 it is an HTTP error.
    const odd400 = callDirect({ ...direct, url: new URL(`${oddUrl}/`) }, { name: "shout" }, options());
    await expect(odd400).rejects.toMatchObject({ status: 400 });
  });
});
