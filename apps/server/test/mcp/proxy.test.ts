/**
 * The session endpoint as a complete MCP proxy, for clients of both protocol eras over upstreams of both eras
 * (server-everything speaks 2025-11-25; the modern fixture 2026-07-28). Each test names the MCP behaviour it
 * checks; clients are the official SDKs (v1 for 2025, v2 pinned to 2026-07-28), never ours.
 */
import {
  LOG_LEVEL_META_KEY,
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
  SdkErrorCode,
} from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  GetTaskResultSchema,
  ListRootsRequestSchema,
  ListTasksResultSchema,
  LoggingMessageNotificationSchema,
  ResultSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Gateway } from "../../src/mcp/gateway.ts";
import { upstreams } from "../../src/runtimes/pool.ts";
import type { StartedTestServer } from "../support/server.ts";
import { startTestServer } from "../support/server.ts";
import { type EverythingHttp, startEverythingHttp } from "../support/upstream-everything.ts";
import { startLegacyTasksUpstream } from "../support/upstream-legacy-tasks.ts";
import { type ModernUpstream, startModernUpstream } from "../support/upstream-modern.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  firstText,
  initializeBody,
  latestToolCall,
  mcpHeaders,
  postModern,
  remoteProvider,
} from "./gateway-fixtures.ts";

// Read when the app is built: a call may take longer than this as long as it reports progress.
process.env.TOOLPLANE_UPSTREAM_TIMEOUT_MS = "1500";

let t: StartedTestServer;
let everything: EverythingHttp;
let modern: ModernUpstream;
/** A second 2026-07-28 upstream, with an extension of its own. */
let gadgets: ModernUpstream;
const deployments = { everything: "", modern: "" };
let mixed: CreatedSession;
/** Two providers that both declare an extension. */
let extended: CreatedSession;
let onlyModern: CreatedSession;
let onlyEverything: CreatedSession;
const closers: (() => Promise<void>)[] = [];

/** A 2025-era client (SDK v1) with the given capabilities. */
async function legacyClient(session: CreatedSession, capabilities: Record<string, unknown> = {}) {
  const client = new Client({ name: "legacy-client", version: "1.0.0" }, { capabilities });
  await client.connect(
    new StreamableHTTPClientTransport(endpointOf(t, session), {
      requestInit: { headers: { Authorization: `Bearer ${session.secret}` } },
    }),
  );
  closers.push(() => client.close());
  return client;
}

/** A client of MCP 2026-07-28 (SDK v2, pinned: it never falls back to initialize). */
async function modernClient(session: CreatedSession, capabilities: Record<string, unknown> = {}) {
  const client = new ModernClient(
    { name: "modern-client", version: "1.0.0" },
    { capabilities, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(
    new ModernTransport(endpointOf(t, session), {
      requestInit: { headers: { Authorization: `Bearer ${session.secret}` } },
    }),
  );
  closers.push(() => client.close());
  return client;
}

beforeAll(async () => {
  [t, everything, modern, gadgets] = await Promise.all([
    startTestServer(),
    startEverythingHttp(),
    startModernUpstream(),
    startModernUpstream({ extensions: { "com.example.test/gadgets": {} } }),
  ]);
  const everythingProvider = await remoteProvider(t.db, "everything-http", everything.url);
  const modernProvider = await remoteProvider(t.db, "modern", modern.url);
  const gadgetsProvider = await remoteProvider(t.db, "gadgets", gadgets.url);
  deployments.everything = (await deployProvider(t.client, everythingProvider.providerId, "Everything")).id;
  deployments.modern = (await deployProvider(t.client, modernProvider.providerId, "Modern")).id;
  const gadgetsDeployment = (await deployProvider(t.client, gadgetsProvider.providerId, "Gadgets")).id;
  mixed = await createSession(t.client, [
    { provider_deployment: deploymentRef(deployments.everything) },
    { provider_deployment: deploymentRef(deployments.modern) },
  ]);
  onlyModern = await createSession(t.client, [{ provider_deployment: deploymentRef(deployments.modern) }]);
  onlyEverything = await createSession(t.client, [{ provider_deployment: deploymentRef(deployments.everything) }]);
  extended = await createSession(t.client, [
    { provider_deployment: deploymentRef(deployments.modern) },
    { provider_deployment: deploymentRef(gadgetsDeployment) },
  ]);
});

afterAll(async () => {
  await Promise.all(closers.map((close) => close().catch(() => undefined)));
  await upstreams.closeAll();
  await Promise.all([everything?.close(), modern?.close(), gadgets?.close(), t?.close()]);
});

describe("both eras on one URL", () => {
  it("serves a 2025 client and a 2026-07-28 client the same tools, over upstreams of both eras", async () => {
    const old = await legacyClient(mixed);
    const now = await modernClient(mixed);
    expect(now.getProtocolEra()).toBe("modern");
    const oldNames = (await old.listTools()).tools.map((tool) => tool.name).sort();
    const newNames = (await now.listTools()).tools.map((tool) => tool.name).sort();
    expect(newNames).toEqual(oldNames);
    expect(oldNames).toEqual(expect.arrayContaining(["everything-http_echo", "modern_shout"]));
    for (const client of [old, now]) {
      expect(firstText(await client.callTool({ name: "modern_shout", arguments: { text: "hi" } }))).toBe("HI");
      expect(firstText(await client.callTool({ name: "everything-http_echo", arguments: { message: "yo" } }))).toBe(
        "Echo: yo",
      );
    }
  });

  it("declares a client's extensions upstream, and the upstreams' extensions to the client", async () => {
    const ui = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };
    const now = await modernClient(onlyModern, { extensions: ui });
    expect(now.getServerCapabilities()?.extensions).toEqual({ "io.toolplane.test/widgets": { version: 1 } });
    const declared = JSON.parse(firstText(await now.callTool({ name: "capabilities", arguments: {} })));
    expect(declared).toMatchObject({ extensions: ui });
    const old = await legacyClient(onlyModern, { experimental: { "toolplane.test": {} } });
    expect(old.getServerCapabilities()?.extensions).toEqual({ "io.toolplane.test/widgets": { version: 1 } });
    expect(JSON.parse(firstText(await old.callTool({ name: "capabilities", arguments: {} })))).toMatchObject({
      experimental: { "toolplane.test": {} },
    });
  });

  it("answers server/discover with the merged instructions of the upstreams", async () => {
    const now = await modernClient(onlyModern);
    expect(now.getInstructions()).toContain("Modern upstream: shouts and counts down.");
  });

  // A session of one provider is that provider's server to its clients, which cannot tell it from talking to the
  // server directly; with several providers the gateway is the one server they see.
  it("shows a one-provider session as its upstream's own server, to clients of both eras", async () => {
    const direct = new Client({ name: "direct-client", version: "1.0.0" });
    await direct.connect(new StreamableHTTPClientTransport(new URL(everything.url)));
    closers.push(() => direct.close());
    const old = await legacyClient(onlyEverything);
    expect(old.getServerVersion()).toEqual(direct.getServerVersion());
    expect(old.getInstructions()).toEqual(direct.getInstructions());

    const now = await modernClient(onlyModern);
    expect(now.getServerVersion()).toMatchObject({ name: "modern-upstream", version: "1.0.0" });
    expect(now.getInstructions()).toBe("Modern upstream: shouts and counts down.");
    // Every 2026-07-28 result names it too: a listing the gateway merged, and a call answered by a 2025 upstream
    // (whose results name no server): a call (the fast lane) and listings (the SDK's path).
    const serverOf = async (session: CreatedSession, method: string, params: Record<string, unknown>) => {
      const name = typeof params.name === "string" ? { name: params.name } : {};
      const res = await postModern(t, session, method, params, name);
      const body = (await res.json()) as { result: { _meta?: Record<string, unknown> } };
      return body.result._meta?.["io.modelcontextprotocol/serverInfo"];
    };
    expect(await serverOf(onlyModern, "tools/list", {})).toMatchObject({ name: "modern-upstream" });
    const echo = { name: "echo", arguments: { message: "who" } };
    expect(await serverOf(onlyEverything, "tools/call", echo)).toEqual(direct.getServerVersion());
    expect(await serverOf(onlyEverything, "tools/list", {})).toEqual(direct.getServerVersion());
  });

  it("shows a session of several providers as the gateway, each provider's instructions under its slug", async () => {
    const old = await legacyClient(mixed);
    expect(old.getServerVersion()).toMatchObject({ name: "toolplane-gateway" });
    expect(old.getInstructions()).toMatch(/^One MCP server for every provider[\s\S]*\n## modern\nModern upstream/);
    expect((await modernClient(mixed)).getServerVersion()).toMatchObject({ name: "toolplane-gateway" });
  });
});

describe("methods of extensions", () => {
  // MCP 2026-07-28 basic/versioning ("Extension Negotiation"; SEP-2133): a server offers an extension by declaring
  // its identifier in `capabilities.extensions`. How an extension's methods are named is the extension's own
  // business; the official ones name them after the extension (SEP-2663 reserves `tasks/` for
  // `io.modelcontextprotocol/tasks`; the Skills extension serves `skills/list`).
  const render = { method: "widgets/render", params: { widget: "clock" } };

  it("forwards a method of an extension to the one provider that declares one, in either era", async () => {
    const rendered = { extension: "io.toolplane.test/widgets", method: "widgets/render", params: { widget: "clock" } };
    expect(await (await legacyClient(mixed)).request(render, ResultSchema)).toMatchObject(rendered);
    expect(await (await modernClient(mixed)).request(render, ResultSchema)).toMatchObject(rendered);
  });

  it("forwards a method to the provider whose extension it is named after, and to no one when that is unclear", async () => {
    const client = await modernClient(extended);
    expect(await client.request(render, ResultSchema)).toMatchObject({ extension: "io.toolplane.test/widgets" });
    const spin = await client.request({ method: "gadgets/spin", params: {} }, ResultSchema);
    expect(spin).toMatchObject({ extension: "com.example.test/gadgets" });
    // Both declare an extension and neither is named like the method: sent to neither (it may have side effects).
    const sent = { modern: modern.extensionCalls.length, gadgets: gadgets.extensionCalls.length };
    const unclear = client.request({ method: "sprockets/turn", params: {} }, ResultSchema);
    // MethodNotFound, which 2026-07-28 answers with HTTP 404 (SEP-2575): the SDK client gives the body as it came.
    await expect(unclear).rejects.toMatchObject({
      code: SdkErrorCode.ClientHttpNotImplemented,
      message: expect.stringMatching(/"code":-32601.*modern, gadgets/),
    });
    expect({ modern: modern.extensionCalls.length, gadgets: gadgets.extensionCalls.length }).toEqual(sent);
  });
});

describe("standard request headers (2026-07-28)", () => {
  const modernCall = (name: string, headerName: string) =>
    fetch(endpointOf(t, mixed), {
      method: "POST",
      headers: {
        ...mcpHeaders(mixed.secret),
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": headerName,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: {
          name,
          arguments: { text: "raw" },
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
            "io.modelcontextprotocol/clientCapabilities": {},
          },
        },
      }),
    });

  it("refuses an Mcp-Name that does not match the body, and sends upstreams the name they know", async () => {
    const mismatch = await modernCall("modern_shout", "modern_other");
    expect(mismatch.status).toBe(400);
    expect(((await mismatch.json()) as { error: { code: number } }).error.code).toEqual(expect.any(Number));
    // The upstream (which checks Mcp-Name against its own body) is sent `shout`, not the session's key.
    const ok = await modernCall("modern_shout", "modern_shout");
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain("RAW");
  });
});

describe("resources", () => {
  it("lists, templates and reads resources under reversible provider-prefixed URIs", async () => {
    const client = await legacyClient(mixed);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain("modern+memo://today");
    expect(resources.some((r) => r.uri.startsWith("everything-http+"))).toBe(true);
    const read = await client.readResource({ uri: "modern+memo://today" });
    // The upstream saw its own URI; the client sees the session's.
    expect(read.contents).toEqual([
      { uri: "modern+memo://today", mimeType: "text/plain", text: "memo for memo://today" },
    ]);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((r) => r.uriTemplate)).toContain("modern+memo://day/{day}");
    const day = await client.readResource({ uri: "modern+memo://day/mon" });
    expect(day.contents[0]).toMatchObject({ text: "memo for memo://day/mon" });
    await expect(client.readResource({ uri: "nobody+memo://today" })).rejects.toThrow(/not offered/);
  });

  it("keeps upstream URIs as they are when the session has one provider", async () => {
    const client = await modernClient(onlyModern);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(["memo://today"]);
    expect((await client.readResource({ uri: "memo://today" })).contents[0]).toMatchObject({ uri: "memo://today" });
  });

  it("subscribes to a resource of a 2025 upstream and relays its update notifications", async () => {
    const client = await legacyClient(onlyEverything);
    const updated: string[] = [];
    client.fallbackNotificationHandler = async (notification) => {
      if (notification.method === "notifications/resources/updated") updated.push(String(notification.params?.uri));
    };
    const { resources } = await client.listResources();
    const uri = resources[0]?.uri ?? "";
    await client.subscribeResource({ uri });
    // server-everything sends updates of subscribed resources every few seconds once this tool switches them on.
    await client.callTool({ name: "toggle-subscriber-updates", arguments: {} });
    await expect.poll(() => updated, { timeout: 15_000, interval: 200 }).toContain(uri);
    await client.unsubscribeResource({ uri });
  });
});

describe("prompts and completion", () => {
  it("lists and gets prompts under session-wide keys, and completes their arguments", async () => {
    const client = await legacyClient(mixed);
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toContain("modern_greet");
    const prompt = await client.getPrompt({ name: "modern_greet", arguments: { who: "Ada" } });
    expect(prompt.messages[0]?.content).toMatchObject({ text: "Say hello to Ada." });
    const completed = await client.complete({
      ref: { type: "ref/prompt", name: "modern_greet" },
      argument: { name: "who", value: "a" },
    });
    expect(completed.completion.values).toEqual(["ada", "alan"]);
    // A resource template's argument, routed by the template's session-wide URI.
    const byTemplate = await client.complete({
      ref: { type: "ref/resource", uri: "modern+memo://day/{day}" },
      argument: { name: "day", value: "g" },
    });
    expect(byTemplate.completion.values).toEqual(["grace"]);
    await expect(
      client.complete({ ref: { type: "ref/resource", uri: "nobody+x://{y}" }, argument: { name: "y", value: "" } }),
    ).rejects.toThrow(/not offered/);
  });
});

describe("progress, timeouts and cancellation", () => {
  it("relays progress under the client's token and lets progress extend a call past the upstream timeout", async () => {
    const old = await legacyClient(onlyModern);
    const now = await modernClient(onlyModern);
    const call = { name: "countdown", arguments: { steps: 8, stepMs: 400 } };
    // 8 steps of 400 ms: 3.2 s in all, more than twice the 1.5 s the upstream may stay silent.
    const seen = { old: [] as number[], now: [] as number[] };
    const options = (into: number[]) => ({
      onprogress: (p: { progress: number }) => into.push(p.progress),
      resetTimeoutOnProgress: true,
      timeout: 10_000,
    });
    const [viaOld, viaNow] = await Promise.all([
      old.callTool(call, undefined, options(seen.old)),
      now.callTool(call, options(seen.now)),
    ]);
    expect(firstText(viaOld)).toBe("liftoff after 8");
    expect(firstText(viaNow)).toBe("liftoff after 8");
    expect(seen).toEqual({ old: [1, 2, 3, 4, 5, 6, 7, 8], now: [1, 2, 3, 4, 5, 6, 7, 8] });
  });

  it("extends a call that reports progress past the upstream timeout even when the client asked for none", async () => {
    const client = await modernClient(onlyModern);
    const result = await client.callTool({ name: "countdown", arguments: { steps: 6, stepMs: 400 } });
    expect(firstText(result)).toBe("liftoff after 6");
  });

  it("forwards a cancellation to the upstream that runs the call and records the call cancelled", async () => {
    const before = modern.cancelled;
    const client = await legacyClient(onlyModern);
    const controller = new AbortController();
    const call = client.callTool({ name: "countdown", arguments: { steps: 100, stepMs: 100 } }, undefined, {
      signal: controller.signal,
      onprogress: () => undefined,
    });
    setTimeout(() => controller.abort("the user clicked stop"), 500);
    await expect(call).rejects.toThrow();
    await expect.poll(() => modern.cancelled, { timeout: 5_000 }).toBe(before + 1);
    await expect
      .poll(() => latestToolCall(t, onlyModern.id))
      .toMatchObject({ tool_key: "countdown", status: "cancelled", error: { code: "cancelled" } });
  });
});

describe("server→client requests", () => {
  it("routes sampling, elicitation and roots of a 2025 upstream to the 2025 client whose call caused them", async () => {
    const client = await legacyClient(onlyEverything, { sampling: {}, elicitation: {}, roots: {} });
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({
      role: "assistant",
      content: { type: "text", text: "sampled by the client" },
      model: "test-model",
    }));
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada" } }));
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///work", name: "work" }] }));
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    // server-everything offers these only to clients that declared the capabilities: the gateway declared them.
    expect(names).toEqual(
      expect.arrayContaining(["trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"]),
    );
    const sampled = await client.callTool({
      name: "trigger-sampling-request",
      arguments: { prompt: "hi", maxTokens: 5 },
    });
    expect(JSON.stringify(sampled.content)).toContain("sampled by the client");
    const roots = await client.callTool({ name: "get-roots-list", arguments: {} });
    expect(JSON.stringify(roots.content)).toContain("file:///work");
    const elicited = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
    expect(JSON.stringify(elicited.content)).toContain("Ada");
  });

  it("turns a 2025 upstream's sampling and elicitation into input_required rounds for a 2026-07-28 client", async () => {
    const client = await modernClient(onlyEverything, { sampling: {}, elicitation: {} });
    const asked: string[] = [];
    client.setRequestHandler("sampling/createMessage", async () => {
      asked.push("sampling");
      return { role: "assistant", content: { type: "text", text: "sampled by the modern client" }, model: "m" };
    });
    client.setRequestHandler("elicitation/create", async () => {
      asked.push("elicitation");
      return { action: "accept", content: { name: "Grace" } };
    });
    const sampled = await client.callTool({
      name: "trigger-sampling-request",
      arguments: { prompt: "hi", maxTokens: 5 },
    });
    expect(JSON.stringify(sampled.content)).toContain("sampled by the modern client");
    const elicited = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
    expect(JSON.stringify(elicited.content)).toContain("Grace");
    expect(asked).toEqual(["sampling", "elicitation"]);
    // Each call is one record, completed once the upstream had its answers.
    const { data } = await t.client.GET("/sessions/{session_id}/tool-calls", {
      params: { path: { session_id: onlyEverything.id }, query: { order: "desc", limit: 2 } },
    });
    expect(data?.items.map((i) => [i.tool_key, i.status])).toEqual([
      ["trigger-elicitation-request", "succeeded"],
      ["trigger-sampling-request", "succeeded"],
    ]);
  });

  it("brings a 2026-07-28 upstream's input_required to a 2025 client as elicitation, and to a modern client as is", async () => {
    const old = await legacyClient(onlyModern, { elicitation: {} });
    old.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { ok: true } }));
    expect(firstText(await old.callTool({ name: "confirm", arguments: {} }))).toBe("confirmed");
    const own = await createSession(t.client, [{ provider_deployment: deploymentRef(deployments.modern) }]);
    const now = await modernClient(own, { elicitation: {} });
    now.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { ok: true } }));
    expect(firstText(await now.callTool({ name: "confirm", arguments: {} }))).toBe("confirmed");
    // Each exchange with the upstream is a call record of its own: the round that asked, then the answered retry,
    // which names the round (the upstream got its own requestState back: it answered "confirmed").
    for (const session of [onlyModern, own]) {
      const { data } = await t.client.GET("/sessions/{session_id}/tool-calls", {
        params: { path: { session_id: session.id }, query: { order: "desc", limit: 2 } },
      });
      const [retry, round] = data?.items ?? [];
      expect(
        [retry, round].map((i) => [
          i?.tool_key,
          i?.status,
          (i?.output as { resultType?: string } | undefined)?.resultType,
        ]),
      ).toEqual([
        ["confirm", "succeeded", undefined],
        ["confirm", "succeeded", "input_required"],
      ]);
      expect(retry?.answers_call_id).toBe(round?.id);
      expect(round?.answers_call_id).toBeNull();
    }
  });
});

describe("logging", () => {
  it("fans logging/setLevel out to the upstreams and relays their log messages to a 2025 client", async () => {
    const client = await legacyClient(onlyEverything);
    const messages: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
      messages.push(n.params.data);
    });
    await client.setLoggingLevel("debug");
    await client.callTool({ name: "toggle-simulated-logging", arguments: {} });
    await expect.poll(() => messages.length, { timeout: 15_000, interval: 200 }).toBeGreaterThan(0);
  });

  // MCP 2026-07-28: a request asks for log messages with `io.modelcontextprotocol/logLevel` in its `_meta`, and a
  // server MUST NOT send notifications/message for a request that did not.
  it("gives a 2026-07-28 request the log messages at or above its level, and none without one", async () => {
    const client = await modernClient(onlyModern);
    const messages: unknown[] = [];
    client.setNotificationHandler("notifications/message", async (n) => {
      messages.push(n.params.data);
    });
    const logs = (meta?: Record<string, unknown>) =>
      client.callTool({ name: "logs", arguments: {}, ...(meta ? { _meta: meta } : {}) });
    expect(firstText(await logs())).toBe("level: none");
    expect(messages).toEqual([]);
    // The level reaches the upstream with the request, and the gateway holds back what is below it.
    expect(firstText(await logs({ [LOG_LEVEL_META_KEY]: "info" }))).toBe("level: info");
    expect(messages).toEqual(["info line", "error line"]);
  });

  it("asks a 2026-07-28 upstream for a 2025 client's level with each request, and relays only what it wants", async () => {
    const client = await legacyClient(onlyModern);
    const messages: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
      messages.push(n.params.data);
    });
    // Until the client sets a level, it gets every message (the 2025 rule); the upstream is asked for none.
    expect(firstText(await client.callTool({ name: "logs", arguments: {} }))).toBe("level: none");
    await expect.poll(() => messages.length).toBe(3);
    messages.length = 0;
    await client.setLoggingLevel("error");
    expect(firstText(await client.callTool({ name: "logs", arguments: {} }))).toBe("level: error");
    await expect.poll(() => messages).toEqual(["error line"]);
  });
});

describe("MCP Apps", () => {
  it("makes a tool's UI resource URI session-wide, so the client reads it through the session", async () => {
    const client = await modernClient(mixed);
    const widget = (await client.listTools()).tools.find((tool) => tool.name === "modern_widget");
    const meta = widget?._meta as { ui?: { resourceUri?: string }; "ui/resourceUri"?: string } | undefined;
    expect(meta?.ui?.resourceUri).toBe("ui://modern+widget/app.html");
    expect(meta?.["ui/resourceUri"]).toBe("ui://modern+widget/app.html");
    const read = await client.readResource({ uri: meta?.ui?.resourceUri ?? "" });
    expect(read.contents[0]).toMatchObject({
      uri: "ui://modern+widget/app.html",
      text: "memo for ui://widget/app.html",
    });
    // With one provider the session is transparent: the upstream's own URI.
    const alone = (await (await modernClient(onlyModern)).listTools()).tools.find((tool) => tool.name === "widget");
    expect((alone?._meta as { ui?: { resourceUri?: string } } | undefined)?.ui?.resourceUri).toBe(
      "ui://widget/app.html",
    );
  });
});

describe("change notifications", () => {
  it("serves subscriptions/listen to a 2026-07-28 client: list changes and resource updates of upstreams of both eras", async () => {
    const client = await modernClient(mixed);
    const heard: string[] = [];
    client.setNotificationHandler("notifications/tools/list_changed", async () => {
      heard.push("tools");
    });
    client.setNotificationHandler("notifications/resources/updated", async (notification) => {
      heard.push(notification.params.uri);
    });
    const legacyUri = (await client.listResources()).resources.find((r) => r.uri.startsWith("everything-http+"))?.uri;
    const subscription = await client.listen({
      toolsListChanged: true,
      resourceSubscriptions: ["modern+memo://today", legacyUri ?? ""],
    });
    expect(subscription.honoredFilter).toMatchObject({ toolsListChanged: true });

    // A 2026-07-28 upstream announces on its own listen stream, which the gateway opened.
    const grown = firstText(await client.callTool({ name: "modern_grow", arguments: {} }));
    await expect.poll(() => heard, { timeout: 10_000, interval: 100 }).toContain("tools");
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain(`modern_${grown}`);
    await client.callTool({ name: "modern_touch", arguments: {} });
    await expect.poll(() => heard, { timeout: 10_000, interval: 100 }).toContain("modern+memo://today");
    // A 2025 upstream sends updates of resources subscribed with resources/subscribe on its session.
    await client.callTool({ name: "everything-http_toggle-subscriber-updates", arguments: {} });
    await expect.poll(() => heard, { timeout: 15_000, interval: 200 }).toContain(legacyUri);
    await subscription.close();
  });

  it("subscribes a 2025 client to a 2026-07-28 upstream's resource and relays its list changes", async () => {
    const client = await legacyClient(mixed);
    const heard: string[] = [];
    client.fallbackNotificationHandler = async (notification) => {
      const uri = notification.params?.uri;
      heard.push(typeof uri === "string" ? uri : notification.method);
    };
    await client.subscribeResource({ uri: "modern+memo://today" });
    await client.callTool({ name: "modern_touch", arguments: {} });
    await expect.poll(() => heard, { timeout: 10_000, interval: 100 }).toContain("modern+memo://today");
    const grown = firstText(await client.callTool({ name: "modern_grow", arguments: {} }));
    await expect.poll(() => heard, { timeout: 10_000, interval: 100 }).toContain("notifications/tools/list_changed");
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain(`modern_${grown}`);
    await client.unsubscribeResource({ uri: "modern+memo://today" });
  });
});

describe("tasks", () => {
  it("routes a 2025 upstream's task by its session-wide id: get, list, result", async () => {
    const client = await legacyClient(mixed);
    expect(client.getServerCapabilities()?.tasks).toMatchObject({ requests: { tools: { call: {} } } });
    const created = await client.request(
      {
        method: "tools/call",
        params: { name: "everything-http_simulate-research-query", arguments: { topic: "proxies" }, task: {} },
      },
      CreateTaskResultSchema,
    );
    const taskId = created.task.taskId;
    expect(taskId.startsWith("everything-http+")).toBe(true);
    // The call's record names the task, and follows what the session's task requests see of it.
    const record = async () => {
      const { data } = await t.client.GET("/sessions/{session_id}/tool-calls", {
        params: { path: { session_id: mixed.id }, query: { order: "desc", limit: 1 } },
      });
      return data?.items[0];
    };
    const upstreamTaskId = taskId.slice("everything-http+".length);
    expect((await record())?.task).toMatchObject({ id: upstreamTaskId, status: "working", result: null });
    const status = await client.request({ method: "tasks/get", params: { taskId } }, GetTaskResultSchema);
    expect(status).toMatchObject({ taskId, status: "working" });
    const listed = await client.request({ method: "tasks/list", params: {} }, ListTasksResultSchema);
    expect(listed.tasks.map((task) => task.taskId)).toContain(taskId);
    // tasks/result waits for the task to finish (four stages of a second each).
    const result = await client.request({ method: "tasks/result", params: { taskId } }, CallToolResultSchema, {
      timeout: 20_000,
    });
    expect(firstText(result)).toContain("Research Report: proxies");
    const finished = await record();
    expect(finished).toMatchObject({ tool_key: "everything-http_simulate-research-query", status: "succeeded" });
    expect(finished?.task).toMatchObject({ id: upstreamTaskId, status: "completed" });
    expect(JSON.stringify(finished?.task?.result)).toContain("Research Report: proxies");
    // A terminal status stays (MCP): an outcome fetched later is added to it, the status is not replaced.
    await t.db
      .updateTable("tool_calls")
      .set({ task_status: "cancelled", task_result: null })
      .where("id", "=", finished?.id ?? "")
      .execute();
    await client.request({ method: "tasks/result", params: { taskId } }, CallToolResultSchema);
    const refetched = (await record())?.task;
    expect(refetched?.status).toBe("cancelled");
    expect(JSON.stringify(refetched?.result)).toContain("Research Report: proxies");
    const unknown = client.request({ method: "tasks/get", params: { taskId: "nobody+t1" } }, GetTaskResultSchema);
    await expect(unknown).rejects.toThrow(/not known to this session/);
  });

  it("writes the status an upstream announces into the record, once however many clients share its connection", async () => {
    // MCP 2025-11-25 basic/utilities/tasks ("Task Status Notification"): a receiver MAY send
    // notifications/tasks/status with the full task, so a requestor need not poll. server-everything announces each
    // change on its connection's stream, which both clients here share (each hears it).
    const seen = vi.spyOn(Gateway.prototype, "taskSeen");
    const [client, other] = [await legacyClient(mixed), await legacyClient(mixed)];
    const heard: string[] = [];
    other.fallbackNotificationHandler = async (notification) => void heard.push(String(notification.params?.status));
    await other.listTools();
    const created = await client.request(
      {
        method: "tools/call",
        params: { name: "everything-http_simulate-research-query", arguments: { topic: "pushes" }, task: {} },
      },
      CreateTaskResultSchema,
    );
    const upstreamTaskId = created.task.taskId.slice("everything-http+".length);
    // Neither client asks about the task (no tasks/get, tasks/result): the record follows it all the same.
    await expect
      .poll(async () => (await latestToolCall(t, mixed.id))?.task, { timeout: 15_000, interval: 200 })
      .toMatchObject({ id: upstreamTaskId, status: "completed" });
    expect(heard).toContain("completed");
    const completions = seen.mock.calls.filter(
      ([, taskId, { status }]) => taskId === upstreamTaskId && status === "completed",
    );
    expect(completions).toHaveLength(1);
    seen.mockRestore();
  });

  it("writes a status announced before the call that created the task was recorded", async () => {
    const quick = await startLegacyTasksUpstream();
    closers.push(() => quick.close());
    const provider = await remoteProvider(t.db, "quick", quick.url);
    const deployment = await deployProvider(t.client, provider.providerId, "Quick");
    const session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
    const client = await legacyClient(session);
    const created = await client.request(
      { method: "tools/call", params: { name: "quick", arguments: {}, task: {} } },
      CreateTaskResultSchema,
    );
    // The task was announced completed before the call was answered (with the task as created).
    expect(created.task.status).toBe("working");
    const record = await latestToolCall(t, session.id);
    expect(record?.task).toMatchObject({ id: created.task.taskId, status: "completed" });
  });
});

describe("resumable streams (2025 sessions)", () => {
  /** The SSE events of a response as they arrive: id and JSON-RPC message. */
  async function* sseEvents(res: Response) {
    const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffered += value;
        for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
          const frame = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          const id = /^id: (.*)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (data) yield { id, message: JSON.parse(data) as { method?: string; params?: { uri?: string } } };
        }
      }
    } finally {
      await reader.cancel();
    }
  }

  it("replays what a client missed when it reconnects its GET stream with Last-Event-ID", async () => {
    const post = (body: unknown, connection?: string) =>
      fetch(endpointOf(t, onlyModern), {
        method: "POST",
        headers: {
          ...mcpHeaders(onlyModern.secret),
          "mcp-protocol-version": "2025-11-25",
          ...(connection ? { "mcp-session-id": connection } : {}),
        },
        body: JSON.stringify(body),
      }).then(async (res) => {
        await res.text();
        return res;
      });
    const initialized = await post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    });
    const connection = initialized.headers.get("mcp-session-id") ?? "";
    await post({ jsonrpc: "2.0", method: "notifications/initialized" }, connection);
    await post({ jsonrpc: "2.0", id: 2, method: "resources/subscribe", params: { uri: "memo://today" } }, connection);
    const touch = (id: number) =>
      post({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "touch", arguments: {} } }, connection);
    const openStream = (lastEventId?: string) =>
      fetch(endpointOf(t, onlyModern), {
        headers: {
          authorization: `Bearer ${onlyModern.secret}`,
          accept: "text/event-stream",
          "mcp-protocol-version": "2025-11-25",
          "mcp-session-id": connection,
          ...(lastEventId ? { "last-event-id": lastEventId } : {}),
        },
      });

    const first = await openStream();
    expect(first.status).toBe(200);
    const events = sseEvents(first);
    await touch(3);
    const seen = (await events.next()).value;
    expect(seen?.message).toMatchObject({ method: "notifications/resources/updated", params: { uri: "memo://today" } });
    // The gateway's own subscription to the upstream stays the gateway's.
    expect(JSON.stringify(seen?.message)).not.toContain("subscriptionId");
    await events.return(undefined);

    // Two updates while the client is away, then it comes back with the last id it saw.
    await touch(4);
    await touch(5);
    const resumed = await openStream(seen?.id);
    expect(resumed.status).toBe(200);
    const replayed = sseEvents(resumed);
    const missed = [(await replayed.next()).value, (await replayed.next()).value];
    expect(missed.map((e) => e?.message.method)).toEqual([
      "notifications/resources/updated",
      "notifications/resources/updated",
    ]);
    expect(missed[0]?.id).not.toBe(seen?.id);
    await replayed.return(undefined);
  });

  // MCP 2025-11-25 basic/transports (SEP-1699): a server that answers a POST with an SSE stream SHOULD open it with an
  // event that has an id and empty data, so the client can resume it, and MAY say how long to wait before
  // reconnecting (`retry`). A client that declares sampling gets its calls' answers on the SDK's stream.
  it("opens a 2025-11-25 client's SSE answer with a priming event carrying its id and reconnection delay", async () => {
    const headers = { ...mcpHeaders(onlyModern.secret), "mcp-protocol-version": "2025-11-25" };
    const initialized = await fetch(endpointOf(t, onlyModern), {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: { sampling: {} },
          clientInfo: { name: "raw", version: "1" },
        },
      }),
    });
    await initialized.text();
    const session = { ...headers, "mcp-session-id": initialized.headers.get("mcp-session-id") ?? "" };
    const call = await fetch(endpointOf(t, onlyModern), {
      method: "POST",
      headers: session,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "shout", arguments: { text: "x" } },
      }),
    });
    expect(call.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const [priming, answer] = (await call.text()).split("\n\n");
    expect(priming).toMatch(/^id: \S+\nretry: 1000\ndata: $/);
    expect(answer).toContain('"text":"X"');
  });
});

describe("access", () => {
  it("accepts the session secret as ?key= for clients that cannot set headers", async () => {
    const url = new URL(endpointOf(t, onlyModern));
    url.searchParams.set("key", onlyModern.secret);
    const { authorization: _none, ...headers } = mcpHeaders(onlyModern.secret);
    const res = await fetch(url, { method: "POST", headers, body: initializeBody });
    expect(res.status).toBe(200);
  });

  it("accepts ?key= on the legacy HTTP+SSE transport, for the stream and the messages it announces", async () => {
    const url = new URL(`${endpointOf(t, onlyModern).pathname}/sse`, t.url);
    url.searchParams.set("key", onlyModern.secret);
    const client = new Client({ name: "key-only", version: "1" });
    await client.connect(new SSEClientTransport(url));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain("confirm");
    } finally {
      await client.close();
    }
  });

  it("answers 401 with WWW-Authenticate naming RFC 9728 metadata that this server serves", async () => {
    const res = await fetch(endpointOf(t, onlyModern), {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: initializeBody,
    });
    expect(res.status).toBe(401);
    const challenge = res.headers.get("www-authenticate") ?? "";
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1] ?? "";
    expect(metadataUrl).toContain(`/.well-known/oauth-protected-resource/mcp/${onlyModern.id}`);
    const metadata = await fetch(new URL(new URL(metadataUrl).pathname, t.url));
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toMatchObject({
      resource: expect.stringContaining(`/mcp/${onlyModern.id}`),
      bearer_methods_supported: ["header"],
    });
  });

  it("refuses a browser Origin it does not know (DNS rebinding) and accepts its own", async () => {
    const post = (origin: string) =>
      fetch(endpointOf(t, onlyModern), {
        method: "POST",
        headers: { ...mcpHeaders(onlyModern.secret), origin },
        body: initializeBody,
      });
    expect((await post("http://evil.example")).status).toBe(403);
    expect((await post(new URL(onlyModern.connection_url ?? "").origin)).status).toBe(200);
  });
});
