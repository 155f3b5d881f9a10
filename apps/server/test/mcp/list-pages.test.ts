/**
 * An upstream's paginated lists (MCP 2025-11-25 server/utilities/pagination: a result's `nextCursor` asks for the
 * next page; the cursor is opaque): the session lists every page of them, and stops reading a server whose cursors
 * never end instead of piling up its items until the upstream deadline. Each upstream here is an SDK v2 server (it
 * speaks 2026-07-28) whose `tools/list` pages as its `paging` says.
 */

import { createMcpHandler, Server, type Tool } from "@modelcontextprotocol/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import { serveMcpOnLoopback } from "../support/loopback.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import {
  type CreatedSession,
  connectMcp,
  createSession,
  deploymentRef,
  deployProvider,
  remoteProvider,
} from "./gateway-fixtures.ts";

/** The page a cursor asks for: its tools and the cursor of the next one (none: the last page). */
type Paging = (cursor: string | undefined) => { tools: string[]; nextCursor?: string };

interface PagedUpstream {
  url: string;
  /** The tools/list requests it answered. */
  pagesServed: number;
  close: () => Promise<void>;
}

const tool = (name: string): Tool => ({ name, description: `Says ${name}.`, inputSchema: { type: "object" } });

async function startPagedUpstream(paging: Paging): Promise<PagedUpstream> {
  const upstream = { url: "", pagesServed: 0, close: async () => undefined };
  const handler = createMcpHandler(() => {
    const server = new Server({ name: "paged", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler("tools/list", async (request) => {
      upstream.pagesServed++;
      const { tools, nextCursor } = paging(request.params?.cursor);
      return { tools: tools.map(tool), ...(nextCursor !== undefined ? { nextCursor } : {}) };
    });
    return server;
  });
  return Object.assign(upstream, await serveMcpOnLoopback(handler));
}

let t: StartedTestServer;
const started: PagedUpstream[] = [];

beforeAll(async () => {
  t = await startTestServer({ logLevel: "warn" });
});

afterAll(async () => {
  await upstreams.closeAll();
  await Promise.all([...started.map((upstream) => upstream.close()), t?.close()]);
});

/** A one-provider session over an upstream that pages as `paging` says. */
async function sessionOver(
  slug: string,
  paging: Paging,
): Promise<{ upstream: PagedUpstream; session: CreatedSession }> {
  const upstream = await startPagedUpstream(paging);
  started.push(upstream);
  const provider = await remoteProvider(t.db, slug, upstream.url);
  const deployment = await deployProvider(t.client, provider.providerId, slug);
  const session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
  return { upstream, session };
}

const listedNames = async (session: CreatedSession) => {
  const client = await connectMcp(t, session);
  try {
    return (await client.listTools()).tools.map((listed) => listed.name);
  } finally {
    await client.close();
  }
};

describe("an upstream's paginated listing", () => {
  it("is listed whole: every page, in order, each tool once", async () => {
    const pages = [["one", "two"], ["three", "four"], ["five"]];
    const { upstream, session } = await sessionOver("three-pages", (cursor) => {
      const at = cursor === undefined ? 0 : Number(cursor);
      return { tools: pages[at] ?? [], ...(at + 1 < pages.length ? { nextCursor: String(at + 1) } : {}) };
    });
    expect(await listedNames(session)).toEqual(["one", "two", "three", "four", "five"]);
    expect(upstream.pagesServed).toBe(3);
  });

  it("stops at a cursor the upstream gave before, with what it read, and says so in the server log", async () => {
    // Every page after the first names itself as the next: read directly, it never ends.
    const { upstream, session } = await sessionOver("cursor-loop", (cursor) =>
      cursor === undefined ? { tools: ["first"], nextCursor: "again" } : { tools: ["again"], nextCursor: "again" },
    );
    expect(await listedNames(session)).toEqual(["first", "again"]);
    expect(upstream.pagesServed).toBe(2);
    expect(t.logs()).toMatch(/"method":"tools\/list","pages":2,"reason":"repeated cursor".*upstream listing cut short/);
  });

  it("stops after 1,000 pages of an upstream whose cursors never end", async () => {
    const { upstream, session } = await sessionOver("endless", (cursor) => {
      const at = cursor === undefined ? 0 : Number(cursor);
      return { tools: [`tool-${at}`], nextCursor: String(at + 1) };
    });
    const names = await listedNames(session);
    expect(names).toHaveLength(1_000);
    expect(names.at(-1)).toBe("tool-999");
    expect(upstream.pagesServed).toBe(1_000);
    expect(t.logs()).toMatch(/"pages":1000,"reason":"page limit"/);
  }, 60_000);
});
