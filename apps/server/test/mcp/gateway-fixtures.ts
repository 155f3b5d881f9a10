import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expect } from "vitest";
import type { CatalogEntry } from "../../src/catalog/loader.ts";
import type { Runtime } from "../../src/db/schema.ts";
import { EMPTY_CONFIG_SCHEMA, loadTestCatalog } from "../support/catalog-fixtures.ts";
import { expectCreated } from "../support/deployment-fixtures.ts";
import { startTestServer, type TestServer } from "../support/server.ts";
import { startModernUpstream } from "../support/upstream-modern.ts";

type ApiClient = TestServer["client"];

/** A catalog provider whose runtime is a remote MCP server (ours, or server-everything over HTTP). */
export const remoteProvider = (
  db: TestServer["db"],
  slug: string,
  url: string,
  options: { oauth?: boolean; protocol?: "streamable_http" | "sse" } = {},
) => runtimeProvider(db, slug, { type: "remote", url, protocol: options.protocol ?? "streamable_http" }, options);

/** A catalog provider with the given runtime, loaded as the server loads catalog/ files. */
export async function runtimeProvider(
  db: TestServer["db"],
  slug: string,
  runtime: Runtime,
  options: { oauth?: boolean } = {},
) {
  const entry: CatalogEntry = {
    slug,
    name: `Remote ${slug}`,
    description: `${slug} over MCP`,
    publisher: { slug: "toolplane-tests", name: "Toolplane tests" },
    metadata: { origin: "test" },
    current_version: "1.0.0",
    versions: [
      {
        version: "1.0.0",
        status: "released",
        runtime,
        config_schema: EMPTY_CONFIG_SCHEMA,
        tools: [],
      },
    ],
    auth_methods: options.oauth
      ? [
          {
            key: "oauth",
            type: "oauth",
            name: "OAuth",
            description: null,
            scopes: [],
            oauth: {
              authorization_endpoint: "https://auth.example.test/authorize",
              token_endpoint: "https://auth.example.test/token",
            },
          },
        ]
      : [],
  } as CatalogEntry;
  const loaded = (await loadTestCatalog(db, [entry]))[slug];
  if (!loaded) throw new Error(`${slug} not loaded`);
  return loaded;
}

export const deploymentRef = (id: string) => ({ type: "reference" as const, provider_deployment_id: id });

export async function deployProvider(client: ApiClient, providerId: string, name: string) {
  return expectCreated(client.POST("/provider-deployments", { body: { name, provider_id: providerId } as never }));
}

export interface CreatedSession {
  id: string;
  secret: string;
  connection_url: string | null;
}

export async function createSession(client: ApiClient, providers: Record<string, unknown>[]): Promise<CreatedSession> {
  const session = (await expectCreated(client.POST("/sessions", { body: { providers } as never }))) as CreatedSession;
  expect(session.secret).toEqual(expect.any(String));
  return session;
}

/** The session's connection_url on the test server (the app's public URL has no port). */
export const endpointOf = (t: Pick<TestServer, "url">, session: CreatedSession) =>
  new URL(new URL(session.connection_url ?? "").pathname, t.url);

/** The official MCP client connected to a session's endpoint with a bearer token. */
export async function connectMcp(
  t: Pick<TestServer, "url">,
  session: CreatedSession,
  token: string = session.secret,
  transport: "streamable_http" | "sse" = "streamable_http",
): Promise<Client> {
  const client = new Client({ name: "gateway-test", version: "1.0.0" });
  const requestInit = { headers: { Authorization: `Bearer ${token}` } };
  const url = endpointOf(t, session);
  await client.connect(
    transport === "sse"
      ? new SSEClientTransport(new URL(`${url.pathname}/sse`, url), { requestInit })
      : new StreamableHTTPClientTransport(url, { requestInit }),
  );
  return client;
}

/**
 * A client of MCP 2026-07-28 (the SDK v2, pinned: it learns the session's capabilities from server/discover) of
 * `session`'s endpoint, authorised with `token`.
 */
export async function connectModernMcp(
  t: Pick<TestServer, "url">,
  session: CreatedSession,
  token: string = session.secret,
): Promise<ModernClient> {
  const client = new ModernClient(
    { name: "gateway-test", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  const requestInit = { headers: { Authorization: `Bearer ${token}` } };
  await client.connect(new ModernTransport(endpointOf(t, session), { requestInit }));
  return client;
}

/** The text of a tool result's first content block. */
export const firstText = (result: unknown) =>
  ((result as { content?: { type: string; text?: string }[] }).content?.[0]?.text ?? "") as string;

/** An MCP initialize request as raw JSON (for status-code assertions the SDK client hides). */
export const initializeBody = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});

export const mcpHeaders = (token: string) => ({
  authorization: `Bearer ${token}`,
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
});

/**
 * A raw MCP 2026-07-28 request to a session: its standard headers (`Mcp-Name` when given) and the `_meta` envelope
 * of a client that declares `capabilities`.
 */
export const postModern = (
  t: Pick<TestServer, "url">,
  session: CreatedSession,
  method: string,
  params: Record<string, unknown>,
  { name, capabilities = {} }: { name?: string; capabilities?: Record<string, unknown> } = {},
) =>
  fetch(endpointOf(t, session), {
    method: "POST",
    headers: {
      ...mcpHeaders(session.secret),
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...(name !== undefined ? { "mcp-name": name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method,
      params: {
        ...params,
        _meta: modernEnvelope(capabilities),
      },
    }),
  });

/** The `_meta` envelope of a raw MCP 2026-07-28 request from a client that declares `capabilities`. */
export const modernEnvelope = (capabilities: Record<string, unknown> = {}) => ({
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": capabilities,
});

/** A test server with one session whose only provider is the MCP 2026-07-28 upstream fixture. */
export async function startModernSession() {
  const [t, modern] = await Promise.all([startTestServer(), startModernUpstream()]);
  const provider = await remoteProvider(t.db, "modern", modern.url);
  const deployment = await deployProvider(t.client, provider.providerId, "Modern");
  const session = await createSession(t.client, [{ provider_deployment: deploymentRef(deployment.id) }]);
  return { t, modern, session };
}

/** The tool call a session recorded last, as the API lists it. */
export async function latestToolCall(t: Pick<TestServer, "client">, sessionId: string) {
  const { data } = await t.client.GET("/sessions/{session_id}/tool-calls", {
    params: { path: { session_id: sessionId }, query: { order: "desc", limit: 1 } },
  });
  return data?.items[0];
}
