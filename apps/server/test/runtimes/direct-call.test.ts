/**
 * Direct calls (src/runtimes/direct-call.ts): a tools/call to a 2026-07-28 upstream without the SDK client's
 * protocol layer and transport must put on the wire what the SDK client puts there, and hand back what it hands
 * back: results, input_required, progress (which resets the timeout), notifications, errors, timeouts and
 * cancellation. The upstream is the test fixture built with the SDK v2's createMcpHandler; a recording proxy in
 * front of it shows both clients' requests; a small node:http server gives the answers a well-behaved server
 * never gives.
 */
import { createServer, type Server } from "node:http";
import {
  type Client,
  type Notification,
  type Progress,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
} from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, createTransport, directTargetOf, type UpstreamTarget } from "../../src/runtimes/connect.ts";
import { callDirect, DirectCallRedirected, type DirectTarget } from "../../src/runtimes/direct-call.ts";
import {
  anyResult,
  listen,
  directCallOptions as options,
  startRecordingProxy,
  toolCallsIn,
} from "../support/direct-call.ts";
import { type ModernUpstream, startModernUpstream } from "../support/upstream-modern.ts";

let upstream: ModernUpstream;
let proxy: Awaited<ReturnType<typeof startRecordingProxy>>;
let odd: Server;
let oddUrl: string;
let client: Client;
let direct: DirectTarget;

const targetAt = (url: string): UpstreamTarget => ({
  runtime: { type: "remote", url, protocol: "streamable_http" },
  headers: { "x-api-key": "k1" },
  query: {},
  env: {},
});

beforeAll(async () => {
  upstream = await startModernUpstream();
  proxy = await startRecordingProxy(upstream.url);
  const target = targetAt(`${proxy.url}/`);
  client = createClient(target, "toolplane-gateway", { elicitation: {} });
  await client.connect(createTransport(target));
  const found = directTargetOf(target, client, "toolplane-gateway", { elicitation: {} });
  if (!found) throw new Error("a 2026-07-28 upstream over Streamable HTTP is reached directly");
  direct = found;
  // Not over the legacy SSE transport (nor stdio, nor a 2025 server: see connect.ts).
  const legacy: UpstreamTarget = { ...target, runtime: { type: "remote", url: upstream.url, protocol: "sse" } };
  expect(directTargetOf(legacy, client, "toolplane-gateway", {})).toBeUndefined();
  // Answers no well-behaved server gives, by path.
  odd = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    {
      const id = (JSON.parse(body) as { id: number }).id;
      if (req.url === "/moved") res.writeHead(307, { location: "/elsewhere" }).end();
      else if (req.url === "/refused") {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: "other", error: { code: -32600, message: "no" } }));
      } else if (req.url === "/refused-ours") {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32020, message: "header mismatch" } }));
      } else if (req.url === "/broken") res.writeHead(500, { "content-type": "text/plain" }).end("it broke");
      else if (req.url === "/text") res.writeHead(200, { "content-type": "text/plain" }).end("hello");
      else if (req.url === "/untyped") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id, result: { content: [] } }));
      } else if (req.url === "/cut") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(": nothing\n\n");
      } else res.writeHead(404).end();
    }
  });
  oddUrl = await listen(odd);
});

afterAll(async () => {
  await client?.close();
  await Promise.all([
    upstream?.close(),
    new Promise((resolve) => proxy?.server.close(resolve)),
    new Promise((resolve) => odd?.close(resolve)),
  ]);
});

describe("direct tools/calls to a 2026-07-28 upstream", () => {
  it("send the SDK client's request and return its result", async () => {
    proxy.seen.length = 0;
    const params = { name: "shout", arguments: { text: "hi" }, _meta: { "example.com/trace": "t1" } };
    const viaSdk = await client.request({ method: "tools/call", params }, anyResult, {
      onprogress: () => undefined,
      allowInputRequired: true,
    });
    const viaDirect = await callDirect(direct, params, options({ onprogress: () => undefined }));
    expect(viaDirect).toEqual(viaSdk);
    expect(viaDirect).toMatchObject({ content: [{ type: "text", text: "HI" }] });
    expect(viaDirect).not.toHaveProperty("resultType");
    const [sdk, ours] = toolCallsIn(proxy.seen);
    if (!sdk?.body || !ours?.body) throw new Error("the proxy saw both calls");
    // The same body but for the request id, which is also the progress token.
    type Body = { id: number; params: { _meta: Record<string, unknown> } };
    const withoutIds = ({ id, params, ...body }: Body) => {
      const { progressToken, ...meta } = params._meta;
      return { ...body, params: { ...params, _meta: { ...meta, progressTokenIsId: progressToken === id } } };
    };
    expect(withoutIds(ours.body as Body)).toEqual(withoutIds(sdk.body as Body));
    expect((ours.body as Body).params._meta).toMatchObject({
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
      "example.com/trace": "t1",
      progressToken: ours.body.id,
    });
    for (const name of ["accept", "content-type", "mcp-protocol-version", "mcp-method", "mcp-name", "x-api-key"]) {
      expect(ours.headers[name], name).toBe(sdk.headers[name]);
    }
  });

  it("pass progress on, each one restarting the timeout, and other notifications", async () => {
    const progress: Progress[] = [];
    const notifications: Notification[] = [];
    // Four steps of 150 ms: only progress keeps a 400 ms timeout from striking.
    const result = await callDirect(
      direct,
      { name: "countdown", arguments: { steps: 4, stepMs: 150 } },
      options({ timeout: 400, onprogress: (p) => progress.push(p) }),
    );
    expect(result).toMatchObject({ content: [{ text: "liftoff after 4" }] });
    expect(progress).toEqual([1, 2, 3, 4].map((n) => ({ progress: n, total: 4 })));
    await callDirect(direct, { name: "chatty" }, options({ onnotification: (n) => notifications.push(n) }));
    expect(notifications).toEqual([{ jsonrpc: "2.0", method: "notifications/tools/list_changed" }]);
  });

  it("time out without progress, and past the total however much progress comes", async () => {
    const slow = { name: "countdown", arguments: { steps: 4, stepMs: 150 } };
    const silent = callDirect(direct, slow, options({ timeout: 100 }));
    await expect(silent).rejects.toMatchObject({ code: SdkErrorCode.RequestTimeout, message: "Request timed out" });
    const capped = callDirect(direct, slow, options({ timeout: 400, maxTotalTimeout: 200, onprogress: () => {} }));
    await expect(capped).rejects.toMatchObject({
      code: SdkErrorCode.RequestTimeout,
      message: "Maximum total timeout exceeded",
    });
  });

  it("end the exchange when cancelled, which the upstream sees", async () => {
    const before = upstream.cancelled;
    const control = new AbortController();
    // Straight to the upstream: the recording proxy does not pass a closed request on.
    const call = callDirect(
      { ...direct, url: new URL(upstream.url) },
      { name: "countdown", arguments: { steps: 10, stepMs: 100 } },
      options({ signal: control.signal, onprogress: () => control.abort(new Error("the client went away")) }),
    );
    await expect(call).rejects.toMatchObject({
      code: SdkErrorCode.RequestTimeout,
      message: "Error: the client went away",
    });
    await expect.poll(() => upstream.cancelled).toBe(before + 1);
  });

  it("return input_required as it came, and JSON-RPC errors as the SDK's errors", async () => {
    const asked = await callDirect(direct, { name: "confirm" }, options());
    expect(asked).toMatchObject({
      resultType: "input_required",
      inputRequests: { ok: { method: "elicitation/create" } },
    });
    const viaSdk = (await client.request({ method: "tools/call", params: { name: "confirm" } }, anyResult, {
      allowInputRequired: true,
    })) as Record<string, unknown>;
    expect(Object.keys(asked).sort()).toEqual(Object.keys(viaSdk).sort());
    const invalid = { name: "shout", arguments: "not an object" } as unknown as Record<string, unknown>;
    const refused = callDirect(direct, invalid, options());
    await expect(refused).rejects.toBeInstanceOf(ProtocolError);
    const sdkRefused = await client
      .request({ method: "tools/call", params: invalid }, anyResult)
      .catch((error: ProtocolError) => error);
    await expect(refused).rejects.toMatchObject({ code: (sdkRefused as ProtocolError).code });
  });

  it("fail as the SDK client fails on answers no good server gives, and step aside on a redirect", async () => {
    const at = (path: string): DirectTarget => ({ ...direct, url: new URL(`${oddUrl}${path}`) });
    const call = (path: string) => callDirect(at(path), { name: "shout" }, options({ timeout: 1_000 }));
    await expect(call("/moved")).rejects.toBeInstanceOf(DirectCallRedirected);
    await expect(call("/refused")).rejects.toMatchObject({ status: 400 });
    await expect(call("/refused")).rejects.toBeInstanceOf(SdkHttpError);
    await expect(call("/refused-ours")).rejects.toMatchObject({
      code: -32020,
      message: expect.stringMatching(/header mismatch/),
    });
    await expect(call("/refused-ours")).rejects.toBeInstanceOf(ProtocolError);
    await expect(call("/broken")).rejects.toMatchObject({
      status: 500,
      message: "Error POSTing to endpoint: it broke",
    });
    await expect(call("/text")).rejects.toMatchObject({ code: SdkErrorCode.ClientHttpUnexpectedContent });
    await expect(call("/untyped")).rejects.toMatchObject({ code: SdkErrorCode.InvalidResult });
    await expect(call("/cut")).rejects.toBeInstanceOf(SdkError);
  });
});
