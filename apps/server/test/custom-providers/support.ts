import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { type ErrorBody, unwrap } from "@toolplane/client";
import type { components } from "@toolplane/types";
import { DeployJobRunner } from "../../src/custom-providers/job-runner.ts";
import type { Db } from "../../src/db/database.ts";
import { SecretBox, type SecretKey } from "../../src/secrets/secret-box.ts";
import { fixture, useTestServer } from "../support/fixture.ts";
import type { TestServer } from "../support/server.ts";

type Version = components["schemas"]["CustomProviderVersion"];
type CustomProvider = components["schemas"]["CustomProvider"];

export interface McpUpstream {
  url: string;
  /** Headers of every request received. */
  requests: IncomingHttpHeaders[];
  /** Opens the gate of an upstream started with `held: true`. */
  release(): void;
  close(): Promise<void>;
}

/**
 * A real MCP server (the SDK's, stateless Streamable HTTP) on 127.0.0.1 listing `tools`. With `held`, every
 * request waits until `release()`: a deployment against it stays `deploying`.
 */
export async function startMcpUpstream(options: { tools: string[]; held?: boolean }): Promise<McpUpstream> {
  let release = () => {};
  const gate = options.held ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve();
  const requests: IncomingHttpHeaders[] = [];
  const http = createServer(async (req, res) => {
    requests.push(req.headers);
    await gate;
    const server = new Server({ name: "test-upstream", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: options.tools.map((name) => ({ name, description: `The ${name} tool`, inputSchema: { type: "object" } })),
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => ({
      content: [{ type: "text", text: `${request.params.name} called` }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  http.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => http.once("listening", resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    requests,
    release: () => release(),
    close: async () => {
      release();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** A URL nothing listens on: a port that was free a moment ago. */
export async function closedPortUrl(): Promise<string> {
  const http = createServer();
  http.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => http.once("listening", resolve));
  const port = (http.address() as AddressInfo).port;
  await new Promise<void>((resolve) => http.close(() => resolve()));
  return `http://127.0.0.1:${port}/mcp`;
}

export interface Runner {
  runner: DeployJobRunner;
  functionsDir: string;
  stop(): Promise<void>;
}

/** A job runner on the test database, polling fast; its function files go to a temporary directory. */
export async function startRunner(
  t: { db: Db; secretKey: SecretKey },
  options: { dockerHost?: string } = {},
): Promise<Runner> {
  const dir = mkdtempSync(join(tmpdir(), "toolplane-functions-"));
  const runner = new DeployJobRunner({
    db: t.db,
    secrets: new SecretBox([t.secretKey]),
    functionsDir: dir,
    pollIntervalMs: 50,
    remoteTimeoutMs: 10_000,
    ...options,
  });
  await runner.start();
  return {
    runner,
    functionsDir: dir,
    stop: async () => {
      await runner.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const REMOTE_TOOLS = ["forecast", "alerts"];

export async function createRemote(t: TestServer, url: string, name = "Weather", extra: Record<string, unknown> = {}) {
  return await unwrap(
    t.client.POST("/custom-providers", {
      body: { name, from: { type: "remote", remote_url: url, protocol: "streamable_http" }, ...extra },
    }),
  );
}

export async function firstVersion(t: TestServer, customProviderId: string): Promise<Version> {
  const page = await unwrap(
    t.client.GET("/custom-providers/{custom_provider_id}/versions", {
      params: { path: { custom_provider_id: customProviderId } },
    }),
  );
  const [v1] = page.items;
  if (!v1) throw new Error("no version");
  return v1;
}

const ENDED = new Set(["deployment_succeeded", "deployment_failed"]);

/** Polls the version until its deployment ends (bounded: the runner polls every 50 ms, probes time out). */
export async function waitForDeployment(
  t: TestServer,
  customProviderId: string,
  versionId: string,
  until: (v: Version) => boolean = (v) => ENDED.has(v.status),
): Promise<Version> {
  for (let i = 0; i < 600; i++) {
    const version = await unwrap(
      t.client.GET("/custom-providers/{custom_provider_id}/versions/{custom_provider_version_id}", {
        params: { path: { custom_provider_id: customProviderId, custom_provider_version_id: versionId } },
      }),
    );
    if (until(version)) return version;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`version ${versionId} did not reach the expected state`);
}

export async function getCustomProvider(t: TestServer, id: string): Promise<CustomProvider> {
  return await unwrap(
    t.client.GET("/custom-providers/{custom_provider_id}", { params: { path: { custom_provider_id: id } } }),
  );
}

/** The ids of a custom provider's two environments. */
export async function environments(t: TestServer, customProviderId: string) {
  const cp = await getCustomProvider(t, customProviderId);
  const id = (name: string) => {
    const env = cp.environments.find((e) => e.name === name);
    if (!env) throw new Error(`no ${name} environment`);
    return env.id;
  };
  return { development: id("development"), production: id("production") };
}

/** A commit merging the version deployed in environment `from` into environment `to` (e.g. development → production). */
export async function promote(t: TestServer, customProviderId: string, from: string, to: string, message = "Promote") {
  return await unwrap(
    t.client.POST("/custom-providers/{custom_provider_id}/commits", {
      params: { path: { custom_provider_id: customProviderId } },
      body: {
        message,
        action: { type: "merge_version_into_environment", from_environment_id: from, to_environment_id: to },
      },
    }),
  );
}

export type { ErrorBody };

/**
 * A file's usual setup: a test server, a deploy job runner on it and a remote MCP upstream serving REMOTE_TOOLS,
 * made in beforeAll and stopped in afterAll.
 */
export function useRemoteProviderSetup() {
  const t = useTestServer();
  const runner = fixture(
    () => startRunner(t),
    (r) => r.stop(),
  );
  const upstream = fixture(
    () => startMcpUpstream({ tools: REMOTE_TOOLS }),
    (u) => u.close(),
  );
  return { t, runner, upstream };
}
