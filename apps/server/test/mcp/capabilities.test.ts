import { McpError, ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listenOnLoopback } from "../support/loopback.ts";
import type { StartedTestServer } from "../support/server.ts";
import { startTestServer } from "../support/server.ts";
import {
  PROJECT_URI,
  type ResourcesUpstream,
  startLegacyResources,
  startModernResources,
} from "../support/upstream-resources.ts";
import {
  type CreatedSession,
  connectMcp,
  connectModernMcp,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  remoteProvider,
} from "./gateway-fixtures.ts";

let t: StartedTestServer;
/** 2026-07-28 upstreams: one offering nothing beyond resources and a prompt, one offering everything. */
let bare: ResourcesUpstream;
let rich: ResourcesUpstream;
/** 2025 upstreams: one taking subscriptions (and log levels), one offering neither. */
let files: ResourcesUpstream;
let plain: ResourcesUpstream;
const deployments: Record<string, string> = {};
let empty: CreatedSession;
let bareOnly: CreatedSession;
let all: CreatedSession;
const closers: (() => Promise<void>)[] = [];

/** A 2025-era client (SDK v1). */
async function legacyClient(session: CreatedSession) {
  const client = await connectMcp(t, session);
  closers.push(() => client.close());
  return client;
}

/** A client of MCP 2026-07-28 (SDK v2, pinned: it learns the capabilities from server/discover). */
async function modernClient(session: CreatedSession) {
  const client = await connectModernMcp(t, session);
  closers.push(() => client.close());
  return client;
}

/** What a client of each era is told the session offers. */
async function declared(session: CreatedSession) {
  const [legacy, modern] = await Promise.all([legacyClient(session), modernClient(session)]);
  return [legacy.getServerCapabilities(), modern.getServerCapabilities()];
}

const sessionOf = async (...slugs: string[]) =>
  createSession(
    t.client,
    slugs.map((slug) => ({ provider_deployment: deploymentRef(deployments[slug] ?? "") })),
  );

async function deploy(slug: string, url: string) {
  const provider = await remoteProvider(t.db, slug, url);
  deployments[slug] = (await deployProvider(t.client, provider.providerId, slug)).id;
}

beforeAll(async () => {
  [t, bare, rich, files, plain] = await Promise.all([
    startTestServer(),
    startModernResources({}),
    startModernResources({ completions: true, subscribe: true, logging: true }),
    startLegacyResources({ subscribe: true, logging: true }),
    startLegacyResources({}),
  ]);
  for (const [slug, upstream] of Object.entries({ bare, rich, files, plain })) await deploy(slug, upstream.url);
  // A session starts with a provider: one without any is what is left once they were removed.
  empty = await sessionOf("bare");
  const provider = await t.db
    .selectFrom("session_providers")
    .select("id")
    .where("session_id", "=", empty.id)
    .executeTakeFirstOrThrow();
  const removed = await t.client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", {
    params: { path: { session_id: empty.id, session_provider_id: provider.id } },
  });
  expect(removed.response.status).toBe(200);
  bareOnly = await sessionOf("bare");
  all = await sessionOf("bare", "rich", "files", "plain");
});

afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => undefined);
  await Promise.all([t?.close(), bare?.close(), rich?.close(), files?.close(), plain?.close()]);
});

describe("declared capabilities", () => {
  it("declares completions and resource subscriptions only when a provider offers them, to clients of both eras", async () => {
    const always = {
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { listChanged: true },
      logging: {},
    };
    // No provider (a session may gain some later: the lists and their changes are the gateway's), none offering them.
    for (const session of [empty, bareOnly]) {
      for (const capabilities of await declared(session)) {
        expect(capabilities).toMatchObject(always);
        expect(capabilities?.completions).toBeUndefined();
        expect(capabilities?.resources?.subscribe).toBeUndefined();
      }
    }
    for (const capabilities of await declared(all)) {
      expect(capabilities).toMatchObject({ ...always, completions: {}, resources: { subscribe: true } });
    }
  });

  it("keeps a provider's capabilities while its upstream is down, and counts one never reached as offering them", async () => {
    const flaky = await startModernResources({});
    await deploy("flaky", flaky.url);
    const session = await sessionOf("flaky");
    const [before] = await declared(session);
    expect(before?.completions).toBeUndefined();
    // The upstream goes away; a request that finds it gone drops the connection, so the next one connects again.
    await flaky.close();
    const client = await legacyClient(session);
    await expect(client.readResource({ uri: PROJECT_URI })).rejects.toThrow(/flaky/);
    for (const capabilities of await declared(session)) {
      expect(capabilities?.completions).toBeUndefined();
      expect(capabilities?.resources?.subscribe).toBeUndefined();
    }

    // Nothing ever answered at this address: what it offers is unknown, so nothing it may offer is hidden.
    const gone = await listenOnLoopback(express());
    await gone.close();
    await deploy("unreached", `${gone.base}/mcp`);
    for (const capabilities of await declared(await sessionOf("unreached"))) {
      expect(capabilities).toMatchObject({ completions: {}, resources: { subscribe: true } });
    }
  });
});

describe("requests for a provider without the capability", () => {
  it("answers completion/complete for a provider without completions with nothing, without asking it", async () => {
    const ref = (slug: string) => ({ type: "ref/prompt" as const, name: `${slug}_review` });
    const argument = { name: "path", value: "src" };
    const legacy = await legacyClient(all);
    const modern = await modernClient(all);
    for (const client of [legacy, modern]) {
      expect((await client.complete({ ref: ref("bare"), argument })).completion.values).toEqual([]);
      expect((await client.complete({ ref: ref("rich"), argument })).completion.values).toEqual(["src/a.ts"]);
    }
    expect(bare.methods).not.toContain("completion/complete");
    expect(rich.methods.filter((method) => method === "completion/complete")).toHaveLength(2);
    // A session that declared no completions has none, as a server without them: -32601 (2025 connection).
    const undeclared = await legacyClient(bareOnly);
    await expect(undeclared.complete({ ref: { type: "ref/prompt", name: "review" }, argument })).rejects.toMatchObject({
      code: -32601,
    });
    expect(bare.methods).not.toContain("completion/complete");
  });

  // MCP 2026-07-28 (basic/transports, SEP-2575): a server answers a method it does not serve with HTTP 404 and
  // -32601. That is its answer, not a lost session: the client gets it, and the connection stays.
  it("passes on a 2026-07-28 upstream's -32601 for a method it does not serve, without reconnecting", async () => {
    const client = await legacyClient(bareOnly);
    const ask = () => client.request({ method: "widgets/render", params: {} }, ResultSchema);
    await expect(ask()).rejects.toMatchObject({ code: -32601 });
    const discoveries = () => bare.methods.filter((method) => method === "server/discover").length;
    const before = discoveries();
    await expect(ask()).rejects.toMatchObject({ code: -32601 });
    expect(bare.methods.filter((method) => method === "widgets/render").length).toBeGreaterThanOrEqual(2);
    expect(discoveries()).toBe(before);
  });

  // MCP 2026-07-28 (basic/transports, SEP-2575): MethodNotFound is an HTTP 404, whether the one provider refused the
  // method or no provider of the session can own it; a 2025 request keeps its JSON-RPC error in a 200.
  it("answers a 2026-07-28 request of a method nobody serves with HTTP 404 and -32601", async () => {
    const send = (session: CreatedSession, modern: boolean) =>
      fetch(endpointOf(t, session), {
        method: "POST",
        headers: {
          authorization: `Bearer ${session.secret}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(modern ? { "mcp-protocol-version": "2026-07-28", "mcp-method": "widgets/render" } : {}),
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 7,
          method: "widgets/render",
          params: modern
            ? {
                _meta: {
                  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
                  "io.modelcontextprotocol/clientCapabilities": {},
                },
              }
            : {},
        }),
      });
    for (const session of [bareOnly, all]) {
      const answer = await send(session, true);
      expect(answer.status).toBe(404);
      expect(await answer.json()).toMatchObject({ id: 7, error: { code: -32601 } });
    }
    const legacy = await send(all, false);
    expect(legacy.status).toBe(200);
    expect(await legacy.text()).toContain('"code":-32601'); // on an SSE stream: the SDK's choice for 2025
  });

  it("refuses a 2025 client's subscription to a resource of a provider without subscriptions, naming it", async () => {
    const client = await legacyClient(all);
    for (const slug of ["bare", "plain"]) {
      const refused = await client.subscribeResource({ uri: `${slug}+${PROJECT_URI}` }).catch((error) => error);
      expect(refused).toBeInstanceOf(McpError);
      expect(refused).toMatchObject({ code: -32602, message: expect.stringContaining(`Provider ${slug}`) });
    }
    expect(bare.methods).not.toContain("subscriptions/listen");
    expect(plain.methods).not.toContain("resources/subscribe");
    await client.subscribeResource({ uri: `rich+${PROJECT_URI}` });
    await client.subscribeResource({ uri: `files+${PROJECT_URI}` });
  });

  it("leaves a provider without subscriptions out of a 2026-07-28 listen stream's acknowledgement", async () => {
    const client = await modernClient(all);
    const subscription = await client.listen({
      resourceSubscriptions: [`bare+${PROJECT_URI}`, `rich+${PROJECT_URI}`, `plain+${PROJECT_URI}`],
    });
    expect(subscription.honoredFilter).toEqual({ resourceSubscriptions: [`rich+${PROJECT_URI}`] });
    await subscription.close();
    // Nothing of the filter can be honoured: the stream is acknowledged empty and ends.
    const nothing = await client.listen({ resourceSubscriptions: [`bare+${PROJECT_URI}`] });
    expect(nothing.honoredFilter).toEqual({});
    await nothing.close();
    expect(bare.methods).not.toContain("subscriptions/listen");
    expect(plain.methods).not.toContain("resources/subscribe");
  });

  it("skips upstreams without logging when a 2025 client sets its level", async () => {
    const client = await legacyClient(all);
    await client.setLoggingLevel("info");
    expect(files.methods).toContain("logging/setLevel");
    expect(plain.methods).not.toContain("logging/setLevel");
  });
});

describe("updates of sub-resources", () => {
  const subscribed = `files+${PROJECT_URI}`;
  /** Announces an update of a URI that only shares the subscribed one's prefix, then of each sub-resource. */
  const announce = async () => {
    await files.update(`${PROJECT_URI}2`);
    await files.update(`${PROJECT_URI}/src/a.ts`);
    await files.update(`${PROJECT_URI}#readme`);
  };
  const expected = [`${subscribed}/src/a.ts`, `${subscribed}#readme`];

  it("relays a 2025 client the updates of a subscribed resource's sub-resources, not of its namesakes", async () => {
    const client = await legacyClient(all);
    const heard: string[] = [];
    client.fallbackNotificationHandler = async (notification) => {
      if (notification.method === "notifications/resources/updated") heard.push(String(notification.params?.uri));
    };
    await client.subscribeResource({ uri: subscribed });
    await announce();
    // Relayed in the order announced: the namesake, announced first, would be heard first.
    await expect.poll(() => heard.length).toBe(2);
    expect(heard).toEqual(expected);
  });

  it("relays them on a 2026-07-28 client's listen stream, not its namesakes", async () => {
    const client = await modernClient(all);
    const heard: string[] = [];
    client.setNotificationHandler("notifications/resources/updated", async (notification) => {
      heard.push(notification.params.uri);
    });
    const subscription = await client.listen({ resourceSubscriptions: [subscribed] });
    expect(subscription.honoredFilter).toEqual({ resourceSubscriptions: [subscribed] });
    await announce();
    await expect.poll(() => heard.length).toBe(2);
    expect(heard).toEqual(expected);
    await subscription.close();
  });
});
