/**
 * The fast lane for tools/calls on 2025-era MCP sessions (src/mcp/fast-call.ts, sessionCallOf/answerSessionCall)
 * answers the same JSON-RPC messages as the SDK's Streamable HTTP transport: each call is sent twice on one
 * session, once through the lane and once with TOOLPLANE_MCP_FAST_CALLS=0 (read per request), and the messages of
 * the two answers are compared. The lane answers JSON where the SDK opens an SSE stream (MCP lets a server do
 * either), and switches to SSE when the call sends a notification.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { Request } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SessionLane, sessionCallOf } from "../../src/mcp/fast-call.ts";
import { upstreams } from "../../src/runtimes/pool.ts";
import type { StartedTestServer } from "../support/server.ts";
import type { ModernUpstream } from "../support/upstream-modern.ts";
import { startTestUpstream, type TestUpstream } from "../support/upstream-server.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  firstText,
  latestToolCall,
  mcpHeaders,
  remoteProvider,
  startModernSession,
} from "./gateway-fixtures.ts";

let t: StartedTestServer;
let modern: ModernUpstream;
let ours: TestUpstream;
/** The session of the 2026-07-28 upstream fixture, and of our SDK v1 upstream (which sends what it likes). */
let session: CreatedSession;
let oursSession: CreatedSession;
/** One 2025-11-25 MCP session of a client that declared no capabilities, on `session`. */
let connection: string;

const VERSION = "2025-11-25";

beforeAll(async () => {
  ({ t, modern, session } = await startModernSession());
  ours = await startTestUpstream();
  const provider = await remoteProvider(t.db, "ours", ours.url);
  const deployment = await deployProvider(t.client, provider.providerId, "Ours");
  oursSession = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
  connection = await initialize({});
});

afterAll(async () => {
  delete process.env.TOOLPLANE_MCP_FAST_CALLS;
  await upstreams.closeAll();
  await Promise.all([modern?.close(), ours?.close(), t?.close()]);
});

const headersFor = (mcpSession: string, on = session) => ({
  ...mcpHeaders(on.secret),
  "mcp-protocol-version": VERSION,
  "mcp-session-id": mcpSession,
});

/** Opens a 2025-11-25 session (initialize, then notifications/initialized) and returns its Mcp-Session-Id. */
async function initialize(capabilities: Record<string, unknown>, on = session): Promise<string> {
  const response = await fetch(endpointOf(t, on), {
    method: "POST",
    headers: mcpHeaders(on.secret),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: VERSION, capabilities, clientInfo: { name: "raw", version: "1" } },
    }),
  });
  await response.text();
  const id = response.headers.get("mcp-session-id") ?? "";
  expect(id).toMatch(/^scn_/);
  const initialized = await post({ jsonrpc: "2.0", method: "notifications/initialized" }, id, undefined, on);
  expect(initialized.status).toBe(202);
  return id;
}

const post = (body: unknown, mcpSession = connection, signal?: AbortSignal, on = session) =>
  fetch(endpointOf(t, on), {
    method: "POST",
    headers: headersFor(mcpSession, on),
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });

interface Call {
  name: string;
  arguments?: Record<string, unknown>;
  meta?: Record<string, unknown>;
}

const callBody = (call: Call, id: number) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: {
    name: call.name,
    ...(call.arguments ? { arguments: call.arguments } : {}),
    ...(call.meta ? { _meta: call.meta } : {}),
  },
});

/** The lane of a session with no calls under way, for asking sessionCallOf. */
const laneOf = (clientCapabilities: Record<string, unknown>): SessionLane => ({
  connectionId: connection,
  callOnConnection: async () => ({ content: [] }),
  running: new Map(),
  clientCapabilities: () => clientCapabilities,
});

/** Whether the router takes the session lane for this call (lane on). */
const takesLane = (call: Call, headers: Record<string, string> = {}, capabilities = {}) =>
  sessionCallOf(
    {
      method: "POST",
      headers: { ...headersFor(connection), ...headers },
      body: callBody(call, 1),
    } as unknown as Request,
    laneOf(capabilities),
  ) !== null;

interface Answer {
  status: number;
  contentType: string | null;
  sessionHeader: string | null;
  /** The JSON-RPC messages of the answer (an SSE stream's events with data, in order). */
  messages: unknown[];
}

async function read(response: Response): Promise<Answer> {
  const contentType = response.headers.get("content-type");
  const text = await response.text();
  const messages = contentType?.startsWith("text/event-stream")
    ? text
        .split("\n\n")
        .map((frame) => frame.split("\n").find((line) => line.startsWith("data: ")))
        .filter((data): data is string => data !== undefined && data.length > "data: ".length)
        .map((data) => JSON.parse(data.slice("data: ".length)))
    : [JSON.parse(text)];
  return { status: response.status, contentType, sessionHeader: response.headers.get("mcp-session-id"), messages };
}

/** Where a call goes: an MCP session (Mcp-Session-Id) of a Toolplane session. */
interface Target {
  on: CreatedSession;
  connection: string;
}

async function send(call: Call, lane: "fast" | "sdk", to?: Target): Promise<Answer> {
  if (lane === "sdk") process.env.TOOLPLANE_MCP_FAST_CALLS = "0";
  else delete process.env.TOOLPLANE_MCP_FAST_CALLS;
  try {
    const body = callBody(call, lane === "fast" ? 1 : 2);
    return await read(await post(body, to?.connection ?? connection, undefined, to?.on ?? session));
  } finally {
    delete process.env.TOOLPLANE_MCP_FAST_CALLS;
  }
}

/** Both answers' messages, with the request id (the only intended difference) blanked out. */
async function bothLanes(call: Call, to?: Target) {
  const fast = await send(call, "fast", to);
  const sdk = await send(call, "sdk", to);
  const blank = (messages: unknown[]) =>
    JSON.parse(JSON.stringify(messages).replace(/"id":[12](?=[,}])/g, '"id":0')) as unknown[];
  return { fast, sdk, same: () => expect(blank(fast.messages)).toEqual(blank(sdk.messages)) };
}

describe("the session lane answers what the SDK's transport answers", () => {
  it("a successful call: the same result, as JSON on the session", async () => {
    const call = { name: "shout", arguments: { text: "hi" } };
    expect(takesLane(call)).toBe(true);
    const { fast, sdk, same } = await bothLanes(call);
    same();
    expect(sdk.contentType).toBe("text/event-stream");
    expect(fast).toMatchObject({ status: 200, contentType: "application/json", sessionHeader: connection });
    expect(fast.messages).toEqual([{ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "HI" }] } }]);
  });

  it("a call without arguments and with a _meta of the client's own", async () => {
    const call = { name: "shout", meta: { "example.com/trace": "abc" } };
    expect(takesLane(call)).toBe(true);
    (await bothLanes(call)).same();
  });

  it("an unknown tool: the same JSON-RPC error", async () => {
    const call = { name: "nope" };
    expect(takesLane(call)).toBe(true);
    const { fast, same } = await bothLanes(call);
    same();
    expect(fast.messages).toMatchObject([{ error: { code: -32602 } }]);
  });

  it("a call that sends a notification: an SSE stream with the notification and then the result", async () => {
    const call = { name: "chatty" };
    expect(takesLane(call)).toBe(true);
    const { fast, same } = await bothLanes(call);
    same();
    expect(fast).toMatchObject({ contentType: "text/event-stream", sessionHeader: connection });
    expect(fast.messages).toMatchObject([
      { method: "notifications/tools/list_changed" },
      { result: { content: [{ text: "done" }] } },
    ]);
  });

  it("an upstream's question (input_required) for a client that declared nothing: the same -32021 error", async () => {
    const call = { name: "confirm", arguments: {} };
    expect(takesLane(call)).toBe(true);
    const { fast, same } = await bothLanes(call);
    same();
    expect(fast.messages).toMatchObject([{ error: { code: -32021, message: expect.stringContaining("modern") } }]);
  });

  it("results another server may send: the same members dropped, the same -32602 for an invalid one", async () => {
    const to = { on: oursSession, connection: await initialize({}, oursSession) };
    const loose = await bothLanes({ name: "loose" }, to);
    loose.same();
    expect(loose.fast).toMatchObject({ contentType: "application/json" });
    expect(loose.fast.messages).toEqual([
      { jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "loose" }], extra: { kept: true } } },
    ]);
    const malformed = await bothLanes({ name: "malformed" }, to);
    malformed.same();
    expect(malformed.fast.messages).toMatchObject([{ error: { code: -32602 } }]);
  });

  it("leaves to the SDK calls with progress, clients that may be asked things, and headers it would refuse", () => {
    expect(takesLane({ name: "countdown", meta: { progressToken: "p" } })).toBe(false);
    expect(takesLane({ name: "shout" }, {}, { sampling: {} })).toBe(false);
    expect(takesLane({ name: "shout" }, {}, { roots: { listChanged: true } })).toBe(false);
    expect(takesLane({ name: "shout" }, { "mcp-protocol-version": "1999-01-01" })).toBe(false);
    expect(takesLane({ name: "shout" }, { accept: "application/json" })).toBe(false);
    expect(takesLane({ name: "shout" }, {}, { experimental: {} })).toBe(true);
  });
});

describe("cancellation and the end of a session reach the lane's calls", () => {
  it("notifications/cancelled cancels the call upstream, records it cancelled and sends no response", async () => {
    const before = modern.cancelled;
    const call = { name: "countdown", arguments: { steps: 100, stepMs: 50 } };
    expect(takesLane(call)).toBe(true);
    const answer = post(callBody(call, 41)).then(read);
    await expect.poll(() => latestToolCall(t, session.id)).toMatchObject({ status: "waiting_for_response" });
    const cancelled = await post({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 41, reason: "changed my mind" },
    });
    expect(cancelled.status).toBe(202);
    expect(await answer).toMatchObject({ status: 200, messages: [] });
    await expect.poll(() => modern.cancelled, { timeout: 5_000 }).toBe(before + 1);
    expect(await latestToolCall(t, session.id)).toMatchObject({
      tool_key: "countdown",
      status: "cancelled",
      error: { code: "cancelled" },
    });
  });

  it("a client that goes away does not cancel the call (MCP 2025: only notifications/cancelled does)", async () => {
    const controller = new AbortController();
    const call = { name: "countdown", arguments: { steps: 3, stepMs: 100 } };
    const gone = post(callBody(call, 42), connection, controller.signal).catch((error: unknown) => error);
    await expect.poll(() => latestToolCall(t, session.id)).toMatchObject({ status: "waiting_for_response" });
    controller.abort();
    expect(await gone).toMatchObject({ name: "AbortError" });
    await expect
      .poll(() => latestToolCall(t, session.id), { timeout: 5_000 })
      .toMatchObject({ tool_key: "countdown", status: "succeeded" });
  });

  it("ending the MCP session (DELETE) cancels its calls under way", async () => {
    const ending = await initialize({});
    const answer = post(callBody({ name: "countdown", arguments: { steps: 100, stepMs: 50 } }, 43), ending).then(read);
    await expect.poll(() => latestToolCall(t, session.id)).toMatchObject({ status: "waiting_for_response" });
    const deleted = await fetch(endpointOf(t, session), { method: "DELETE", headers: headersFor(ending) });
    expect(deleted.status).toBe(200);
    await answer;
    await expect
      .poll(() => latestToolCall(t, session.id), { timeout: 5_000 })
      .toMatchObject({ tool_key: "countdown", status: "cancelled" });
  });
});

describe("official clients through the lane", () => {
  it("the SDK v2 client on a 2025 session gets its result as JSON", async () => {
    const calls: { session: string | null; contentType: string | null }[] = [];
    const client = new Client({ name: "v2-client", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(endpointOf(t, session), {
        requestInit: { headers: { Authorization: `Bearer ${session.secret}` } },
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          const body = typeof init?.body === "string" ? init.body : "";
          if (body.includes('"tools/call"')) {
            const sent = new Headers(init?.headers).get("mcp-session-id");
            calls.push({ session: sent, contentType: response.headers.get("content-type") });
          }
          return response;
        },
      }),
    );
    try {
      expect(firstText(await client.callTool({ name: "shout", arguments: { text: "v2" } }))).toBe("V2");
      expect(calls).toEqual([{ session: expect.stringMatching(/^scn_/), contentType: "application/json" }]);
    } finally {
      await client.close();
    }
  });
});
