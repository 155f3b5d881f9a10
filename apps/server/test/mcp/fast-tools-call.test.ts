/**
 * The fast lane for MCP 2026-07-28 tools/calls (src/mcp/fast-call.ts) answers exactly what the SDK's per-request
 * server answers: each request is sent twice over the wire, once through the lane and once with
 * TOOLPLANE_MCP_FAST_CALLS=0 (read per request), and the two HTTP answers are compared.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import type { Request } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fastCallOf } from "../../src/mcp/fast-call.ts";
import { upstreams } from "../../src/runtimes/pool.ts";
import type { StartedTestServer } from "../support/server.ts";
import type { ModernUpstream } from "../support/upstream-modern.ts";
import {
  type CreatedSession,
  endpointOf,
  firstText,
  latestToolCall,
  mcpHeaders,
  startModernSession,
} from "./gateway-fixtures.ts";

let t: StartedTestServer;
let modern: ModernUpstream;
let session: CreatedSession;

beforeAll(async () => {
  ({ t, modern, session } = await startModernSession());
});

afterAll(async () => {
  delete process.env.TOOLPLANE_MCP_FAST_CALLS;
  await upstreams.closeAll();
  await Promise.all([modern?.close(), t?.close()]);
});

const ENVELOPE = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
};

interface Call {
  name: string;
  arguments?: Record<string, unknown>;
  meta?: Record<string, unknown>;
  headers?: Record<string, string>;
}

function callRequest(call: Call, id: number) {
  const headers = {
    ...mcpHeaders(session.secret),
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": call.name,
    ...call.headers,
  };
  const body = {
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: {
      name: call.name,
      ...(call.arguments ? { arguments: call.arguments } : {}),
      _meta: { ...ENVELOPE, ...call.meta },
    },
  };
  return { headers, body };
}

/** Whether the router would take the fast lane for this request (the lane is on). */
const takesFastLane = (call: Call) => {
  const { headers, body } = callRequest(call, 1);
  return fastCallOf({ method: "POST", headers, body } as unknown as Request) !== null;
};

interface Answer {
  status: number;
  contentType: string | null;
  cacheControl: string | null;
  body: unknown;
}

/** One call over HTTP, through the fast lane or the SDK; an SSE answer is read as the list of its messages. */
async function send(call: Call, lane: "fast" | "sdk", signal?: AbortSignal): Promise<Answer> {
  if (lane === "sdk") process.env.TOOLPLANE_MCP_FAST_CALLS = "0";
  else delete process.env.TOOLPLANE_MCP_FAST_CALLS;
  const { headers, body } = callRequest(call, lane === "fast" ? 1 : 2);
  const response = await fetch(endpointOf(t, session), {
    method: "POST",
    headers,
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
  const contentType = response.headers.get("content-type");
  const text = await response.text();
  const parsed = contentType?.startsWith("text/event-stream")
    ? text
        .split("\n\n")
        .filter((frame) => frame.startsWith("event: message"))
        .map((frame) => JSON.parse(frame.slice(frame.indexOf("data: ") + 6)))
    : JSON.parse(text);
  return { status: response.status, contentType, cacheControl: response.headers.get("cache-control"), body: parsed };
}

/** Both answers, with the request id (the only intended difference) blanked out. */
async function bothLanes(call: Call) {
  const blank = (answer: Answer) => JSON.parse(JSON.stringify(answer).replace(/"id":[12](?=[,}])/g, '"id":0'));
  const fast = await send(call, "fast");
  const sdk = await send(call, "sdk");
  return { fast: blank(fast), sdk: blank(sdk) };
}

describe("the fast lane answers like the SDK", () => {
  it("a successful call: the same JSON result, resultType and server identity (the one provider's own)", async () => {
    const call = { name: "shout", arguments: { text: "hi" } };
    expect(takesFastLane(call)).toBe(true);
    const { fast, sdk } = await bothLanes(call);
    expect(fast).toEqual(sdk);
    expect(fast).toMatchObject({
      status: 200,
      contentType: "application/json",
      body: {
        result: {
          content: [{ type: "text", text: "HI" }],
          resultType: "complete",
          _meta: { "io.modelcontextprotocol/serverInfo": { name: "modern-upstream", version: "1.0.0" } },
        },
      },
    });
  });

  it("a call without arguments and with a _meta of the client's own", async () => {
    const call = { name: "shout", meta: { "example.com/trace": "abc" } };
    expect(takesFastLane(call)).toBe(true);
    const { fast, sdk } = await bothLanes(call);
    expect(fast).toEqual(sdk);
  });

  it("an unknown tool: the same JSON-RPC error with HTTP 200", async () => {
    const call = { name: "nope" };
    expect(takesFastLane(call)).toBe(true);
    const { fast, sdk } = await bothLanes(call);
    expect(fast).toEqual(sdk);
    expect(fast).toMatchObject({ status: 200, body: { error: { code: -32602 } } });
  });

  it("a call with progress: the same SSE stream of progress notifications and then the result", async () => {
    const call = { name: "countdown", arguments: { steps: 3, stepMs: 20 }, meta: { progressToken: "p1" } };
    expect(takesFastLane(call)).toBe(true);
    const { fast, sdk } = await bothLanes(call);
    expect(fast).toEqual(sdk);
    expect(fast.contentType).toBe("text/event-stream");
    expect(fast.cacheControl).toBe("no-cache, no-transform");
    const messages = fast.body as { method?: string; result?: unknown }[];
    expect(messages.map((m) => m.method ?? "result")).toEqual([
      "notifications/progress",
      "notifications/progress",
      "notifications/progress",
      "result",
    ]);
  });

  it("header mismatches and envelope-less calls are left to the SDK's validation ladder", async () => {
    const mismatches: Call[] = [
      { name: "shout", headers: { "mcp-name": "other" } },
      { name: "shout", headers: { "mcp-method": "tools/list" } },
      { name: "shout", headers: { "mcp-protocol-version": "2025-11-25" } },
    ];
    for (const call of mismatches) {
      expect(takesFastLane(call)).toBe(false);
      const { fast, sdk } = await bothLanes(call);
      expect(fast).toEqual(sdk);
      expect(fast.status).toBe(400);
    }
  });

  // The lane keeps the SDK's verdict on each envelope it saw (fast-call.ts, envelopeVerdicts).
  it("an envelope the SDK refuses stays refused after a valid one was taken, and the valid one stays in the lane", async () => {
    const valid: Call = { name: "shout", arguments: { text: "a" } };
    const versionless: Call = { ...valid, meta: { "io.modelcontextprotocol/clientInfo": { name: "raw" } } };
    for (let round = 0; round < 2; round++) {
      expect(takesFastLane(valid)).toBe(true);
      expect(takesFastLane(versionless)).toBe(false);
      const { fast, sdk } = await bothLanes(versionless);
      expect(fast).toEqual(sdk);
      expect(fast.status).toBe(400);
    }
  });

  it("a message the SDK's schemas may refuse apart from its envelope is left to the SDK", () => {
    const { headers, body } = callRequest({ name: "shout" }, 1);
    const lane = (changed: Record<string, unknown>) =>
      fastCallOf({ method: "POST", headers, body: { ...body, ...changed } } as unknown as Request) !== null;
    expect(lane({})).toBe(true);
    expect(lane({ id: 1.5 })).toBe(false);
    expect(lane({ jsonrpc: "1.0" })).toBe(false);
    expect(lane({ result: {} })).toBe(false);
    expect(lane({ params: { ...body.params, _meta: { ...body.params._meta, progressToken: 0.5 } } })).toBe(false);
  });
});

describe("cancellation and input_required through the fast lane", () => {
  it("a client that goes away cancels the call upstream, and the call is recorded cancelled", async () => {
    const before = modern.cancelled;
    const controller = new AbortController();
    const call = { name: "countdown", arguments: { steps: 100, stepMs: 50 }, meta: { progressToken: "c1" } };
    expect(takesFastLane(call)).toBe(true);
    // The first progress frame shows the call runs; then the client hangs up.
    delete process.env.TOOLPLANE_MCP_FAST_CALLS;
    const { headers, body } = callRequest(call, 3);
    const response = await fetch(endpointOf(t, session), {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain("notifications/progress");
    controller.abort();
    await expect.poll(() => modern.cancelled, { timeout: 5_000 }).toBe(before + 1);
    await expect
      .poll(() => latestToolCall(t, session.id))
      .toMatchObject({ tool_key: "countdown", status: "cancelled", error: { code: "cancelled" } });
  });

  it("an upstream's question reaches the SDK v2 client as input_required, and its answer completes the call", async () => {
    const call = { name: "confirm", meta: {}, arguments: {} };
    expect(takesFastLane(call)).toBe(true);
    // The first round as the wire carries it: the same input_required on both lanes (apart from its token).
    const { fast, sdk } = await bothLanes({
      ...call,
      meta: { "io.modelcontextprotocol/clientCapabilities": { elicitation: {} } },
    });
    const untokened = (answer: { body: { result: { requestState?: string } } }) => ({
      ...answer,
      body: { ...answer.body, result: { ...answer.body.result, requestState: "token" } },
    });
    expect(untokened(fast)).toEqual(untokened(sdk));
    expect(fast).toMatchObject({ body: { result: { resultType: "input_required" } } });
    // A client that did not declare elicitation is not asked: the same -32021 error on both lanes.
    const undeclared = await bothLanes(call);
    expect(undeclared.fast).toEqual(undeclared.sdk);
    expect(undeclared.fast).toMatchObject({ status: 400, body: { error: { code: -32021 } } });
    // The whole round trip with the official client.
    delete process.env.TOOLPLANE_MCP_FAST_CALLS;
    const client = new ModernClient(
      { name: "modern-client", version: "1.0.0" },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(
      new ModernTransport(endpointOf(t, session), {
        requestInit: { headers: { Authorization: `Bearer ${session.secret}` } },
      }),
    );
    try {
      client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { ok: true } }));
      expect(firstText(await client.callTool({ name: "confirm", arguments: {} }))).toBe("confirmed");
    } finally {
      await client.close();
    }
  });
});
