/**
 * A 2025-11-25 upstream that needs the user to visit a URL first answers with URLElicitationRequiredError (-32042,
 * 2025-11-25 client/elicitation "URL Elicitation Required Error"): its client shows the URL, then retries. MCP
 * 2026-07-28 has no such error (its schema keeps -32042 for 2025-11-25 only): a URL-mode elicitation is an
 * `input_required` round (basic/patterns/mrtr). A 2026-07-28 client of such an upstream gets that round, and its
 * retry is the call again.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  UrlElicitationRequiredError,
} from "@modelcontextprotocol/sdk/types.js";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { listenOnLoopback } from "../support/loopback.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  firstText,
  latestToolCall,
  remoteProvider,
} from "./gateway-fixtures.ts";

const SIGN_IN = {
  mode: "url",
  elicitationId: "sign-in-1",
  url: "https://auth.example.test/connect",
  message: "Sign in",
};

let t: StartedTestServer;
let session: CreatedSession;
let upstream: { url: string; signedIn: boolean; lastParams: unknown; close: () => Promise<void> };

/** A 2025-11-25 upstream (SDK v1, stateless) whose `connect` needs a sign-in at SIGN_IN.url until `signedIn`. */
async function startSignInUpstream() {
  const state = { signedIn: false, lastParams: undefined as unknown };
  const app = express();
  app.use(express.json());
  app.post("/mcp", async (req, res) => {
    // As sent, before the SDK's schema drops what it does not know.
    if (req.body?.method === "tools/call") state.lastParams = req.body.params;
    const server = new Server({ name: "sign-in", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{ name: "connect", description: "Needs a sign-in first.", inputSchema: { type: "object" as const } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, async () => {
      if (!state.signedIn) throw new UrlElicitationRequiredError([SIGN_IN as never]);
      return { content: [{ type: "text" as const, text: "connected" }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => void transport.close());
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  const { base, close } = await listenOnLoopback(app);
  return Object.assign(state, {
    url: `${base}/mcp`,
    close,
  });
}

beforeAll(async () => {
  [t, upstream] = await Promise.all([startTestServer(), startSignInUpstream()]);
  const provider = await remoteProvider(t.db, "sign-in", upstream.url);
  const deployment = await deployProvider(t.client, provider.providerId, "Sign-in");
  session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
});

afterAll(async () => {
  await upstreams.closeAll();
  await Promise.all([upstream?.close(), t?.close()]);
});

const requestInit = () => ({ headers: { Authorization: `Bearer ${session.secret}` } });

describe("a 2025 upstream's URL elicitation required error", () => {
  it("reaches a 2026-07-28 client as a URL-mode input_required round, whose retry calls again", async () => {
    upstream.signedIn = false;
    const client = new ModernClient(
      { name: "browser-host", version: "1.0.0" },
      { capabilities: { elicitation: { url: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(new ModernTransport(endpointOf(t, session), { requestInit: requestInit() }));
    const shown: unknown[] = [];
    client.setRequestHandler("elicitation/create", async (request) => {
      shown.push(request.params);
      upstream.signedIn = true; // the user signed in at the URL
      return { action: "accept" };
    });
    const result = await client.callTool({ name: "connect", arguments: {} });
    expect(firstText(result)).toBe("connected");
    expect(shown).toEqual([expect.objectContaining({ mode: "url", url: SIGN_IN.url, message: SIGN_IN.message })]);
    // The upstream got the call again as its 2025 client would send it: no round state, no answers.
    expect(upstream.lastParams).not.toHaveProperty("requestState");
    expect(upstream.lastParams).not.toHaveProperty("inputResponses");
    // The retry is recorded as answering the round of the call that needed the sign-in.
    const retry = await latestToolCall(t, session.id);
    expect(retry).toMatchObject({ status: "succeeded", answers_call_id: expect.any(String) });
    await client.close();
  });

  it("reaches a 2025 client as the error it is", async () => {
    upstream.signedIn = false;
    const client = new Client({ name: "old-host", version: "1.0.0" }, { capabilities: { elicitation: { url: {} } } });
    await client.connect(new StreamableHTTPClientTransport(endpointOf(t, session), { requestInit: requestInit() }));
    const error = await client.callTool({ name: "connect", arguments: {} }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: -32042 });
    await client.close();
  });
});
