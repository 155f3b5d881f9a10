/**
 * 2025-era MCP connections are stored so that any replica can serve them; clients rarely send DELETE, so a
 * connection no replica used for TOOLPLANE_MCP_CONNECTION_IDLE_MS is deleted, and one in use is kept.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { upstreams } from "../../src/runtimes/pool.ts";
import type { StartedTestServer } from "../support/server.ts";
import type { ModernUpstream } from "../support/upstream-modern.ts";
import { type CreatedSession, endpointOf, mcpHeaders, startModernSession } from "./gateway-fixtures.ts";

// Read when the app is built.
process.env.TOOLPLANE_MCP_CONNECTION_IDLE_MS = "2000";

let t: StartedTestServer;
let modern: ModernUpstream;
let session: CreatedSession;

beforeAll(async () => {
  ({ t, modern, session } = await startModernSession());
});

afterAll(async () => {
  await upstreams.closeAll();
  await Promise.all([modern?.close(), t?.close()]);
});

const post = (body: unknown, connection?: string) =>
  fetch(endpointOf(t, session), {
    method: "POST",
    headers: { ...mcpHeaders(session.secret), ...(connection ? { "mcp-session-id": connection } : {}) },
    body: JSON.stringify(body),
  }).then(async (res) => ({
    status: res.status,
    connection: res.headers.get("mcp-session-id"),
    body: await res.text(),
  }));

const stored = (id: string) => t.db.selectFrom("mcp_connections").select("id").where("id", "=", id).executeTakeFirst();

it("keeps a connection that clients use and deletes one nobody used for the idle time", async () => {
  const initialized = await post({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  });
  const connection = initialized.connection ?? "";
  expect(connection).toMatch(/^scn_/);

  // In use for twice the idle time: kept.
  const started = Date.now();
  for (let id = 2; Date.now() - started < 4_000; id++) {
    expect((await post({ jsonrpc: "2.0", id, method: "ping" }, connection)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  expect(await stored(connection)).toBeDefined();

  // Left alone: gone from the database, and the client is told to initialise again.
  await expect.poll(() => stored(connection), { timeout: 15_000, interval: 250 }).toBeUndefined();
  expect((await post({ jsonrpc: "2.0", id: 99, method: "ping" }, connection)).status).toBe(404);
});

it("answers an initialize whose connection cannot be stored in the error shape, not as the SDK's 400 Parse error", async () => {
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  };
  // The table is briefly out of reach, as under a database failure (a lock that never comes, a broken connection).
  await t.db.schema.alterTable("mcp_connections").renameTo("mcp_connections_away").execute();
  try {
    const refused = await post(initialize);
    expect(refused.status).toBe(500);
    expect(refused.connection).toBeNull();
    expect(JSON.parse(refused.body)).toMatchObject({ __typename: "error", code: "internal_server_error" });
    expect(refused.body).not.toContain("Parse error");
  } finally {
    await t.db.schema.alterTable("mcp_connections_away").renameTo("mcp_connections").execute();
  }
  // Back in reach: the next initialize opens a connection as usual.
  const opened = await post(initialize);
  expect(opened.connection).toMatch(/^scn_/);
  expect(await stored(opened.connection ?? "")).toBeDefined();
});
