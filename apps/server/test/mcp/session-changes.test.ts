/**
 * A change to the session itself (a provider added or removed, a tool filter edited through the API) reaches its
 * connected clients as MCP's list_changed notifications (2025-11-25 server/tools "List Changed Notification";
 * 2026-07-28 basic/patterns/subscriptions), as a change of one of its upstreams' lists does: the session declares
 * `listChanged`, so a client may rely on them instead of listing again. What an upstream announces outside any
 * request reaches every client that listens, whichever client's request led the gateway to open the upstream's stream.
 */
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
  type SubscriptionFilter,
} from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import { type ModernUpstream, startModernUpstream } from "../support/upstream-modern.ts";
import {
  type CreatedSession,
  connectMcp,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  remoteProvider,
} from "./gateway-fixtures.ts";

let t: StartedTestServer;
let first: ModernUpstream;
let second: ModernUpstream;
let deployments: { first: string; second: string };
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  [t, first, second] = await Promise.all([startTestServer(), startModernUpstream(), startModernUpstream()]);
  const deploy = async (slug: string, url: string) =>
    (await deployProvider(t.client, (await remoteProvider(t.db, slug, url)).providerId, slug)).id;
  deployments = { first: await deploy("first", first.url), second: await deploy("second", second.url) };
});

afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
  await upstreams.closeAll();
  await Promise.all([first?.close(), second?.close(), t?.close()]);
});

/** The notifications a change of the session is announced with. */
const CHANGES = [
  "notifications/tools/list_changed",
  "notifications/prompts/list_changed",
  "notifications/resources/list_changed",
] as const;
const bearer = (session: CreatedSession) => ({ headers: { Authorization: `Bearer ${session.secret}` } });
const newSession = () => createSession(t.client, [{ provider_deployment: deploymentRef(deployments.first) }]);

/** Adds a provider (by default the second) to `session` through the API, as an operator would while clients are connected. */
async function addProvider(session: CreatedSession, deployment = deployments.second): Promise<string> {
  const { data, response } = await t.client.POST("/sessions/{session_id}/providers", {
    params: { path: { session_id: session.id } },
    body: { provider_deployment: deploymentRef(deployment) } as never,
  });
  expect(response.status).toBe(201);
  return (data as { id: string }).id;
}

/** A 2025 client of `session` (SDK v1) and the methods of the notifications it has heard so far. */
async function legacyListener(session: CreatedSession) {
  const client = new Client({ name: "listening", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(endpointOf(t, session), { requestInit: bearer(session) }));
  closers.push(() => client.close());
  const heard: string[] = [];
  client.fallbackNotificationHandler = async (notification) => {
    heard.push(notification.method);
  };
  return { client, heard };
}

/** A 2026-07-28 client of `session` (SDK v2), pinned to that revision. */
async function modernClient(session: CreatedSession) {
  const client = new ModernClient(
    { name: "modern-listening", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  await client.connect(new ModernTransport(endpointOf(t, session), { requestInit: bearer(session) }));
  closers.push(() => client.close());
  return client;
}

/** A subscriptions/listen stream of a 2026-07-28 client, and what it has heard: list kinds, updated URIs. */
async function modernListener(session: CreatedSession, filter: SubscriptionFilter) {
  const client = await modernClient(session);
  const heard: string[] = [];
  for (const kind of ["tools", "prompts", "resources"] as const) {
    client.setNotificationHandler(`notifications/${kind}/list_changed`, async () => {
      heard.push(kind);
    });
  }
  client.setNotificationHandler("notifications/resources/updated", async (notification) => {
    heard.push(notification.params.uri);
  });
  const subscription = await client.listen(filter);
  closers.push(() => subscription.close());
  return { client, heard, subscription };
}

describe("what an upstream announces outside any request", () => {
  it("reaches every listener of a 2026-07-28 upstream, whichever client's request opened its listen stream", async () => {
    const session = await newSession();
    const caller = await modernClient(session);
    // The upstream connection was closed as idle (no request, no listener); the next request opens it again, and
    // with it the gateway's listen stream of the upstream: in the context of that client's request.
    await upstreams.closeIdle(Number.MAX_SAFE_INTEGER);
    expect((await caller.listTools()).tools.map((tool) => tool.name)).toContain("shout");
    const stream = await modernListener(session, { toolsListChanged: true });
    const legacy = await legacyListener(session);
    await legacy.client.listTools();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await caller.callTool({ name: "grow", arguments: {} });
    await expect.poll(() => stream.heard, { timeout: 10_000, interval: 100 }).toContain("tools");
    await expect
      .poll(() => legacy.heard, { timeout: 10_000, interval: 100 })
      .toContain("notifications/tools/list_changed");
  });
});

describe("a change of the session's providers", () => {
  it("is announced to a 2025 client on its connection, and its next listing has the new provider's tools", async () => {
    const session = await newSession();
    const { client, heard } = await legacyListener(session);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("shout");
    // The connection's GET stream carries what is announced outside any request.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await addProvider(session);
    await expect.poll(() => heard, { timeout: 10_000, interval: 100 }).toEqual(expect.arrayContaining([...CHANGES]));
    // Two providers now: every key names its provider.
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(["first_shout", "second_shout"]),
    );
  });

  it("is announced to a 2026-07-28 client on its subscriptions/listen stream", async () => {
    const session = await newSession();
    const { client, heard } = await modernListener(session, { toolsListChanged: true });
    await addProvider(session);
    await expect.poll(() => heard, { timeout: 10_000, interval: 100 }).toContain("tools");
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("second_shout");
  });

  it("is announced to a 2025 client of the legacy HTTP+SSE transport on its stream", async () => {
    const session = await newSession();
    const client = await connectMcp(t, session, session.secret, "sse");
    closers.push(() => client.close());
    const heard: string[] = [];
    client.fallbackNotificationHandler = async (notification) => {
      heard.push(notification.method);
    };
    await addProvider(session);
    await expect.poll(() => heard, { timeout: 10_000, interval: 100 }).toEqual(expect.arrayContaining([...CHANGES]));
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("second_shout");
  });

  it("has a listen stream hear the providers added while it is open", async () => {
    const session = await newSession();
    const stream = await modernListener(session, { toolsListChanged: true });
    await addProvider(session);
    await expect.poll(() => stream.heard, { timeout: 10_000, interval: 100 }).toContain("tools");
    // Announced once the stream hears the new provider: its own list changes reach the stream from then on.
    stream.heard.length = 0;
    await stream.client.callTool({ name: "second_grow", arguments: {} });
    await expect.poll(() => stream.heard, { timeout: 10_000, interval: 100 }).toContain("tools");
    // A stream opened meanwhile (on the same process, beside the first) hears an update by the URI the session now
    // gives it: with two providers, the provider's prefix.
    const updates = await modernListener(session, { resourceSubscriptions: ["first+memo://today"] });
    await updates.client.callTool({ name: "first_touch", arguments: {} });
    await expect.poll(() => updates.heard, { timeout: 10_000, interval: 100 }).toContain("first+memo://today");
  });

  it("has a listen stream stop hearing a provider removed while it is open", async () => {
    const third = await startModernUpstream();
    closers.push(() => third.close());
    const provider = await remoteProvider(t.db, "third", third.url);
    const deployment = await deployProvider(t.client, provider.providerId, "third");
    const session = await newSession();
    const stream = await modernListener(session, { toolsListChanged: true });
    const added = await addProvider(session, deployment.id);
    await expect.poll(() => stream.heard, { timeout: 10_000, interval: 100 }).toContain("tools");
    // Only the stream's hub reaches this upstream: the gateway's listen stream to it is the hub's.
    expect(third.listening).toBe(1);
    stream.heard.length = 0;
    const { response } = await t.client.DELETE("/sessions/{session_id}/providers/{session_provider_id}", {
      params: { path: { session_id: session.id, session_provider_id: added } },
    });
    expect(response.status).toBe(200);
    await expect.poll(() => stream.heard, { timeout: 10_000, interval: 100 }).toContain("tools");
    // Nothing listens to the removed provider's upstream connection any more: it idles out like any other.
    await upstreams.closeIdle(Number.MAX_SAFE_INTEGER);
    await expect.poll(() => third.listening, { timeout: 10_000, interval: 100 }).toBe(0);
  });

  it("is not announced for a change that leaves the lists as they were", async () => {
    const session = await newSession();
    const { client, heard } = await legacyListener(session);
    await client.listTools();
    await new Promise((resolve) => setTimeout(resolve, 300));
    // A session provider's name and metadata are the operator's: no list shows them, though the row changed.
    const sessionProviderId = (session as unknown as { provider_deployments: { id: string }[] }).provider_deployments[0]
      ?.id;
    const { response } = await t.client.PATCH("/sessions/{session_id}/providers/{session_provider_id}", {
      params: { path: { session_id: session.id, session_provider_id: sessionProviderId ?? "" } },
      body: { name: "Renamed", metadata: { team: "blue" } } as never,
    });
    expect(response.status).toBe(200);
    await addProvider(await newSession()); // another session's change, heard by this process too
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(heard).toEqual([]);
  });
});
