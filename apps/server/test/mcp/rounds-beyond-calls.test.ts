/**
 * input_required rounds beyond tools/call, and rounds a client abandons. MCP 2026-07-28 lets tools/call, prompts/get
 * and resources/read answer `input_required` (basic/patterns/mrtr, "Supported Requests"), and no other request: a
 * 2025 upstream's sampling, elicitation and roots during prompts/get and resources/read reach a 2026-07-28 client as
 * rounds, as during tools/call; a 2026-07-28 upstream's own rounds reach a 2026-07-28 client as they are and a 2025
 * client as requests. A client abandons a round by never retrying (MCP gives it no message for that): the gateway
 * then cancels the upstream's request once TOOLPLANE_CLIENT_ANSWER_MS (here 2 s) has passed. Clients are the official
 * SDKs (v1 for 2025, v2 pinned to 2026-07-28); upstreams the SDK v1 test upstream (2025) and the modern fixture.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import { ASKING_MEMO, type ModernUpstream, startModernUpstream } from "../support/upstream-modern.ts";
import { startTestUpstream, type TestUpstream } from "../support/upstream-server.ts";
import {
  type CreatedSession,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  latestToolCall,
  remoteProvider,
} from "./gateway-fixtures.ts";

const ANSWER_MS = 2_000;

let t: StartedTestServer;
let asking: TestUpstream;
let modern: ModernUpstream;
/** A session of the 2025 upstream that asks, and one of the 2026-07-28 fixture. */
let old: CreatedSession;
let current: CreatedSession;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  process.env.TOOLPLANE_CLIENT_ANSWER_MS = String(ANSWER_MS);
  [t, asking, modern] = await Promise.all([
    startTestServer(),
    startTestUpstream({ asking: true }),
    startModernUpstream(),
  ]);
  const askingProvider = await remoteProvider(t.db, "asking", asking.url);
  const modernProvider = await remoteProvider(t.db, "modern", modern.url);
  const [askingDeployment, modernDeployment] = await Promise.all([
    deployProvider(t.client, askingProvider.providerId, "Asking"),
    deployProvider(t.client, modernProvider.providerId, "Modern"),
  ]);
  old = await createSession(t.client, [{ provider_deployment: deploymentRef(askingDeployment.id) }]);
  current = await createSession(t.client, [{ provider_deployment: deploymentRef(modernDeployment.id) }]);
});

afterAll(async () => {
  delete process.env.TOOLPLANE_CLIENT_ANSWER_MS;
  await Promise.all(closers.map((close) => close()));
  await upstreams.closeAll();
  await Promise.all([asking?.close(), modern?.close(), t?.close()]);
});

const requestInit = (session: CreatedSession) => ({ headers: { Authorization: `Bearer ${session.secret}` } });

/** A client of MCP 2026-07-28 (SDK v2, pinned: it never falls back to initialize). */
async function modernClient(session: CreatedSession, capabilities: Record<string, unknown>) {
  const client = new ModernClient(
    { name: "modern-client", version: "1.0.0" },
    { capabilities, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(new ModernTransport(endpointOf(t, session), { requestInit: requestInit(session) }));
  closers.push(() => client.close());
  return client;
}

/** A 2025-era client (SDK v1) with the given capabilities. */
async function legacyClient(session: CreatedSession, capabilities: Record<string, unknown>) {
  const client = new Client({ name: "legacy-client", version: "1.0.0" }, { capabilities });
  await client.connect(
    new StreamableHTTPClientTransport(endpointOf(t, session), { requestInit: requestInit(session) }),
  );
  closers.push(() => client.close());
  return client;
}

const textOf = (value: unknown) => JSON.stringify(value);

describe("a 2025 upstream's questions outside tools/call, for a 2026-07-28 client", () => {
  it("leave prompts/get as input_required rounds (elicitation, then sampling) that the retries answer", async () => {
    const client = await modernClient(old, { elicitation: {}, sampling: {} });
    const asked: string[] = [];
    client.setRequestHandler("elicitation/create", async () => {
      asked.push("elicitation");
      return { action: "accept", content: { name: "Ada" } };
    });
    client.setRequestHandler("sampling/createMessage", async () => {
      asked.push("sampling");
      return { role: "assistant", content: { type: "text", text: "Kind regards" }, model: "m" };
    });
    const prompt = await client.getPrompt({ name: "sign-off", arguments: { style: "warm" } });
    expect(prompt.messages[0]?.content).toMatchObject({ type: "text", text: "Kind regards, Ada" });
    expect(asked).toEqual(["elicitation", "sampling"]);
  });

  it("leave resources/read as an input_required round of roots/list", async () => {
    const client = await modernClient(old, { roots: {} });
    client.setRequestHandler("roots/list", async () => ({ roots: [{ uri: "file:///work", name: "work" }] }));
    const read = await client.readResource({ uri: "ask://roots" });
    expect(read.contents[0]).toMatchObject({ uri: "ask://roots", text: "roots: file:///work" });
  });

  it("answer a round's retry only for the request that got the round", async () => {
    const client = await modernClient(old, { elicitation: {}, sampling: {} });
    const round = (await client.getPrompt(
      { name: "sign-off", arguments: { style: "short" } },
      { allowInputRequired: true },
    )) as unknown as { resultType: string; requestState: string };
    expect(round.resultType).toBe("input_required");
    const answers = { q1: { action: "accept", content: { name: "Eve" } } };
    // The round's state names a prompts/get of sign-off: a resources/read cannot take its call over.
    await expect(
      client.readResource({ uri: "ask://roots", requestState: round.requestState, inputResponses: answers } as never),
    ).rejects.toThrow(/not waiting on this server process/);
  });

  it("fail completion/complete, which MCP 2026-07-28 does not let answer input_required", async () => {
    const client = await modernClient(old, { elicitation: {} });
    client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { name: "Ada" } }));
    await expect(
      client.complete({ ref: { type: "ref/prompt", name: "sign-off" }, argument: { name: "style", value: "w" } }),
    ).rejects.toThrow();
  });

  it("still reach a 2025 client as requests on its connection", async () => {
    const client = await legacyClient(old, { elicitation: {}, sampling: {}, roots: {} });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Grace" } }));
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({
      role: "assistant",
      content: { type: "text", text: "Cheers" },
      model: "m",
    }));
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///home", name: "home" }] }));
    const prompt = await client.getPrompt({ name: "sign-off", arguments: { style: "brief" } });
    expect(textOf(prompt.messages)).toContain("Cheers, Grace");
    const read = await client.readResource({ uri: "ask://roots" });
    expect(read.contents[0]).toMatchObject({ text: "roots: file:///home" });
  });
});

describe("a 2026-07-28 upstream's own rounds of prompts/get and resources/read", () => {
  it("reach a 2026-07-28 client as rounds, and its retries bring the upstream its own requestState back", async () => {
    const client = await modernClient(current, { elicitation: {} });
    client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { name: "Alan" } }));
    const prompt = await client.getPrompt({ name: "greet", arguments: { who: "?" } });
    expect(prompt.messages[0]?.content).toMatchObject({ text: "Say hello to Alan." });
    const read = await client.readResource({ uri: ASKING_MEMO });
    expect(read.contents[0]).toMatchObject({ uri: ASKING_MEMO, text: "memo for Alan" });
  });

  it("reach a 2025 client as elicitation requests", async () => {
    const client = await legacyClient(current, { elicitation: {} });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Grace" } }));
    const prompt = await client.getPrompt({ name: "greet", arguments: { who: "?" } });
    expect(textOf(prompt.messages)).toContain("Say hello to Grace.");
    const read = await client.readResource({ uri: ASKING_MEMO });
    expect(read.contents[0]).toMatchObject({ text: "memo for Grace" });
  });
});

describe("a 2026-07-28 client that gives up on a round", () => {
  it("cancels the upstream call once it did not answer in time, and the call is recorded cancelled", async () => {
    const client = await modernClient(old, { elicitation: {} });
    const giveUp = new AbortController();
    // The person behind the client never answers: the client gives up, which MCP has it tell nobody.
    client.setRequestHandler("elicitation/create", () => {
      giveUp.abort();
      return new Promise<never>(() => undefined);
    });
    const before = asking.cancelled.length;
    // (Its unanswered handler keeps the SDK's call pending whatever the signal: not awaited.)
    void client.callTool({ name: "ask", arguments: {} }, { signal: giveUp.signal }).catch(() => undefined);
    await expect.poll(() => giveUp.signal.aborted).toBe(true);
    await expect.poll(() => asking.cancelled.length, { timeout: 4 * ANSWER_MS }).toBe(before + 1);
    await expect
      .poll(() => latestToolCall(t, old.id), { timeout: 4 * ANSWER_MS })
      .toMatchObject({ tool_key: "ask", status: "cancelled", error: { code: "cancelled" } });
  });

  it("cancels the upstream prompts/get once it did not answer in time", async () => {
    const client = await modernClient(old, { elicitation: {}, sampling: {} });
    const giveUp = new AbortController();
    client.setRequestHandler("elicitation/create", () => {
      giveUp.abort();
      return new Promise<never>(() => undefined);
    });
    const before = asking.cancelled.length;
    void client.getPrompt({ name: "sign-off" }, { signal: giveUp.signal }).catch(() => undefined);
    await expect.poll(() => giveUp.signal.aborted).toBe(true);
    await expect.poll(() => asking.cancelled.length, { timeout: 4 * ANSWER_MS }).toBe(before + 1);
  });
});
