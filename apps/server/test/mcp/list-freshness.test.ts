/**
 * An upstream's lists as the session shows them stay current. MCP makes `listChanged` optional (2025-11-25
 * server/tools "Capabilities"): a server that did not declare it may change its tools without a word, and each
 * `tools/list` a client sends directly gets what it has now. Here an upstream of 2026-07-28 (SDK v2) that declares
 * tools without `listChanged` gains tools behind the gateway's back.
 */

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createMcpHandler, Server, type Tool } from "@modelcontextprotocol/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { serveMcpOnLoopback } from "../support/loopback.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import {
  connectMcp,
  createSession,
  deploymentRef,
  deployProvider,
  endpointOf,
  firstText,
  remoteProvider,
} from "./gateway-fixtures.ts";

const LIST_CACHE_MS = 500;

let t: StartedTestServer;
let upstream: { url: string; tools: Tool[]; close: () => Promise<void> };
let session: Awaited<ReturnType<typeof createSession>>;

const tool = (name: string): Tool => ({ name, description: `Says ${name}.`, inputSchema: { type: "object" } });

/**
 * A server whose tools are `tools` as they are at each request; it declares `tools` without `listChanged`. `hints`
 * are the caching hints (MCP 2026-07-28) its listings carry; the SDK gives none a time to live of 0, private.
 */
async function startQuietUpstream(tools = [tool("first")], hints: { ttlMs?: number; cacheScope?: string } = {}) {
  const handler = createMcpHandler(() => {
    const server = new Server({ name: "quiet", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler("tools/list", async () => ({ tools, ...hints }));
    server.setRequestHandler("tools/call", async (request) => ({
      content: [{ type: "text", text: `${request.params.name} ran` }],
    }));
    return server;
  });
  return { ...(await serveMcpOnLoopback(handler)), tools };
}

beforeAll(async () => {
  process.env.TOOLPLANE_UPSTREAM_LIST_CACHE_MS = String(LIST_CACHE_MS); // read at each listing
  [t, upstream] = await Promise.all([startTestServer(), startQuietUpstream()]);
  const provider = await remoteProvider(t.db, "quiet", upstream.url);
  const deployment = await deployProvider(t.client, provider.providerId, "Quiet");
  session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
});

afterAll(async () => {
  delete process.env.TOOLPLANE_UPSTREAM_LIST_CACHE_MS;
  await upstreams.closeAll();
  await Promise.all([upstream?.close(), t?.close()]);
});

describe("an upstream that does not announce list changes", () => {
  it("shows its tools as they are now once TOOLPLANE_UPSTREAM_LIST_CACHE_MS has passed", async () => {
    const client = await connectMcp(t, session);
    await client.listTools();
    upstream.tools.push(tool("third"));
    await new Promise((resolve) => setTimeout(resolve, LIST_CACHE_MS + 100));
    expect((await client.listTools()).tools.map((listed) => listed.name)).toContain("third");
    await client.close();
  });

  it("has a tool it added since the last listing called, not refused as not offered", async () => {
    process.env.TOOLPLANE_UPSTREAM_LIST_CACHE_MS = "60000"; // the list as kept is still good: the miss reads it again
    await new Promise((resolve) => setTimeout(resolve, LIST_CACHE_MS + 100)); // the list kept before has run out
    const client = await connectMcp(t, session);
    expect((await client.listTools()).tools.map((listed) => listed.name)).not.toContain("second");
    expect(firstText(await client.callTool({ name: "first", arguments: {} }))).toBe("first ran");
    upstream.tools.push(tool("second"));
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the 1 s a missed key waits to list again
    const result = await client.callTool({ name: "second", arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(firstText(result)).toBe("second ran");
    await client.close();
    process.env.TOOLPLANE_UPSTREAM_LIST_CACHE_MS = String(LIST_CACHE_MS);
  });
});

describe("a listing's caching hints (MCP 2026-07-28 server/utilities/caching)", () => {
  const started: Awaited<ReturnType<typeof startQuietUpstream>>[] = [];
  /** A session of one upstream per hint, each with one tool named after its slug. */
  async function sessionOf(hints: Record<string, { ttlMs?: number; cacheScope?: string }>) {
    const deployments = await Promise.all(
      Object.entries(hints).map(async ([slug, hint]) => {
        const quiet = await startQuietUpstream([tool(slug)], hint);
        started.push(quiet);
        const provider = await remoteProvider(t.db, slug, quiet.url);
        return (await deployProvider(t.client, provider.providerId, slug)).id;
      }),
    );
    return createSession(
      t.client,
      deployments.map((id) => ({ provider_deployment: deploymentRef(id) })),
    );
  }
  /** The session's tools/list as a client of `era` gets it, raw (what the SDK's schemas would not keep). */
  async function listing(of: Awaited<ReturnType<typeof createSession>>, era: "2026-07-28" | "2025-11-25") {
    const client = new Client({ name: "cache-test", version: "1.0.0" }, {
      versionNegotiation: { mode: era === "2025-11-25" ? "legacy" : { pin: era } },
    } as never);
    const requestInit = { headers: { authorization: `Bearer ${of.secret}` } };
    await client.connect(new StreamableHTTPClientTransport(endpointOf(t, of), { requestInit }));
    try {
      return (await client.listTools()) as Record<string, unknown>;
    } finally {
      await client.close();
    }
  }

  afterAll(async () => {
    await Promise.all(started.map((quiet) => quiet.close()));
  });

  it("holds as long as its stalest provider's listing says, public when every provider's is", async () => {
    const both = await sessionOf({
      long: { ttlMs: 600_000, cacheScope: "public" },
      short: { ttlMs: 300_000, cacheScope: "public" },
    });
    const listed = await listing(both, "2026-07-28");
    expect((listed.tools as Tool[]).map((listedTool) => listedTool.name).sort()).toEqual(["long_long", "short_short"]);
    expect(listed.cacheScope).toBe("public");
    // Counted from when the gateway read the list, so a little under the shorter provider's 300 s.
    expect(listed.ttlMs).toBeGreaterThan(250_000);
    expect(listed.ttlMs).toBeLessThanOrEqual(300_000);
  });

  it("is private when a provider's listing is, and stale at once when a provider gives no hint", async () => {
    const secret = await sessionOf({
      open: { ttlMs: 600_000, cacheScope: "public" },
      own: { ttlMs: 600_000, cacheScope: "private" },
    });
    expect(await listing(secret, "2026-07-28")).toMatchObject({ cacheScope: "private" });
    const unhinted = await sessionOf({ hinted: { ttlMs: 600_000, cacheScope: "public" }, bare: {} });
    expect(await listing(unhinted, "2026-07-28")).toMatchObject({ ttlMs: 0, cacheScope: "private" });
  });

  it("carries no hints to a 2025 client, whose revision has none", async () => {
    const one = await sessionOf({ solo: { ttlMs: 600_000, cacheScope: "public" } });
    const listed = await listing(one, "2025-11-25");
    expect(listed).not.toHaveProperty("ttlMs");
    expect(listed).not.toHaveProperty("cacheScope");
  });
});
