import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upstreamTarget } from "../../src/custom-providers/deploy.ts";
import { DeployJobRunner } from "../../src/custom-providers/job-runner.ts";
import { connectUpstream } from "../../src/custom-providers/probe.ts";
import { SecretBox } from "../../src/secrets/secret-box.ts";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import {
  closedPortUrl,
  createRemote,
  firstVersion,
  getCustomProvider,
  REMOTE_TOOLS,
  type Runner,
  startMcpUpstream,
  startRunner,
  waitForDeployment,
} from "./support.ts";

/** A stdio MCP server written with Node.js built-ins only, as a function custom provider must be. */
const FUNCTION_SERVER = `
import { createInterface } from "node:readline";
const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\\n");
const tools = [{ name: "add", description: "Adds a and b", inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } } }];
createInterface({ input: process.stdin }).on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  if (msg.method === "initialize") {
    send({ jsonrpc: "2.0", id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "adder", version: "1.0.0" } } });
  } else if (msg.method === "tools/list") {
    send({ jsonrpc: "2.0", id: msg.id, result: { tools } });
  } else if (msg.method === "tools/call") {
    const { a, b } = msg.params.arguments;
    send({ jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: String(a + b) + " " + (process.env.GREETING ?? "") + (process.env.TOOLPLANE_TEST_SECRET ? " LEAKED" : "") }] } });
  } else {
    send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "method not found" } });
  }
});
`;

let t: StartedTestServer;
let runner: Runner;
beforeAll(async () => {
  t = await startTestServer();
  runner = await startRunner(t);
});
afterAll(async () => {
  await runner.stop();
  await t.close();
});

const createFunction = (
  name: string,
  files: { path: string; content: string }[],
  extra: Record<string, unknown> = {},
) =>
  unwrap(
    t.client.POST("/custom-providers", {
      body: { name, from: { type: "function", runtime: "node20", files, ...extra } as never },
    }),
  );

describe("deployment pipeline", () => {
  it("a failing upstream ends in deployment_failed with a code and message, and production stays empty", async () => {
    const url = await closedPortUrl();
    const cp = await createRemote(t, url, "Unreachable");
    const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    expect(v1.status).toBe("deployment_failed");
    expect(v1.deployment.error?.code).toBe("upstream_unreachable");
    expect(v1.deployment.error?.message).toContain(new URL(url).host);
    const pv = await t.db
      .selectFrom("provider_versions")
      .select("status")
      .where("id", "=", v1.provider_version_id)
      .executeTakeFirstOrThrow();
    expect(pv.status).toBe("failed");
    expect((await getCustomProvider(t, cp.id)).provider.current_version).toBeNull();
  });

  it("an HTTP server that is not an MCP server fails at initialize", async () => {
    const server = createServer((_req, res) => res.writeHead(404).end("no mcp here"));
    server.listen(0, "127.0.0.1");
    await new Promise<void>((resolve) => server.once("listening", resolve));
    try {
      const cp = await createRemote(t, `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, "Not MCP");
      const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
      expect(v1.deployment.error?.code).toBe("initialize_failed");
    } finally {
      server.close();
    }
  });

  it("sends the transformer's static headers and query to the upstream while deploying", async () => {
    const upstream = await startMcpUpstream({ tools: REMOTE_TOOLS });
    try {
      const cp = await createRemote(t, upstream.url, "Headers", {
        config: {
          schema: { type: "object", properties: { key: { type: "string" } } },
          transformer: '{"headers":{"X-Static":"plain","Authorization":"Bearer {{config.key}}"}}',
        },
      });
      const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
      expect(v1.status).toBe("deployment_succeeded");
      expect(upstream.requests.every((h) => h["x-static"] === "plain")).toBe(true);
      // No deployment config exists yet: the entry that needs one is left out.
      expect(upstream.requests.some((h) => h.authorization !== undefined)).toBe(false);
      const pv = await t.db
        .selectFrom("provider_versions")
        .select(["runtime", "config_schema"])
        .where("id", "=", v1.provider_version_id)
        .executeTakeFirstOrThrow();
      expect(pv.runtime.transformer?.headers?.Authorization).toBe("Bearer {{config.key}}");
      expect(pv.config_schema).toEqual({ type: "object", properties: { key: { type: "string" } } });
    } finally {
      await upstream.close();
    }
  });

  it("resumes a deployment interrupted by a stop on the same database", async () => {
    const upstream = await startMcpUpstream({ tools: REMOTE_TOOLS, held: true });
    // Only runner A is running while the upstream holds the request.
    await runner.stop();
    const a = await startRunner(t);
    try {
      const cp = await createRemote(t, upstream.url, "Interrupted");
      const v1 = await firstVersion(t, cp.id);
      await waitForDeployment(t, cp.id, v1.id, (v) => v.status === "deploying");
      await a.stop();
      const job = await t.db
        .selectFrom("custom_provider_jobs")
        .selectAll()
        .where("version_id", "=", v1.id)
        .executeTakeFirstOrThrow();
      expect(job).toMatchObject({ state: "running", attempts: 1 });
      expect((await firstVersion(t, cp.id)).status).toBe("deploying");

      upstream.release();
      runner = await startRunner(t);
      const done = await waitForDeployment(t, cp.id, v1.id);
      expect(done.status).toBe("deployment_succeeded");
      const gone = await t.db
        .selectFrom("custom_provider_jobs")
        .selectAll()
        .where("version_id", "=", v1.id)
        .executeTakeFirst();
      expect(gone).toBeUndefined();
      expect((await getCustomProvider(t, cp.id)).provider.current_version?.version).toBe("v1");
    } finally {
      await a.stop();
      await upstream.close();
    }
  });

  it("a second runner on the same database never deploys a job twice", async () => {
    const upstream = await startMcpUpstream({ tools: REMOTE_TOOLS });
    const second = new DeployJobRunner({
      db: t.db,
      secrets: new SecretBox([t.secretKey]),
      functionsDir: runner.functionsDir,
      pollIntervalMs: 50,
    });
    await second.start();
    try {
      const cps = await Promise.all([1, 2, 3, 4].map((n) => createRemote(t, upstream.url, `Parallel ${n}`)));
      for (const cp of cps) {
        const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
        expect(v1.status).toBe("deployment_succeeded");
        const commits = await unwrap(
          t.client.GET("/custom-providers/{custom_provider_id}/commits", {
            params: { path: { custom_provider_id: cp.id } },
          }),
        );
        expect(commits.items.filter((c) => c.to_environment.name === "production")).toHaveLength(1);
      }
    } finally {
      await second.stop();
      await upstream.close();
    }
  });

  it("deploys a function provider as a child process and answers tools/call through it", async () => {
    const cp = await createFunction(
      "Adder",
      [
        { path: "index.mjs", content: "import './lib/server.mjs';\n" },
        { path: "lib/server.mjs", content: FUNCTION_SERVER },
      ],
      { memory_mb: 64, timeout_ms: 10_000 },
    );
    expect(cp.type).toBe("function");
    const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    expect(v1.deployment.error).toBeNull();
    expect(v1.status).toBe("deployment_succeeded");
    const pv = await t.db
      .selectFrom("provider_versions")
      .select(["runtime", "tools"])
      .where("id", "=", v1.provider_version_id)
      .executeTakeFirstOrThrow();
    expect(pv.tools).toEqual([{ name: "add", description: "Adds a and b" }]);
    expect(pv.runtime.type).toBe("stdio");
    if (pv.runtime.type !== "stdio") return;
    expect(pv.runtime.args[0]).toBe("--max-old-space-size=64");
    expect(pv.runtime.args[1]).toBe("--import"); // the watch that ends the function with its server
    expect(existsSync(pv.runtime.args.at(-1) ?? "")).toBe(true);

    const connection = await connectUpstream(upstreamTarget(pv.runtime, null), { timeoutMs: 10_000 });
    try {
      const result = await connection.client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
      expect(result.content).toEqual([{ type: "text", text: "5 " }]);
    } finally {
      await connection.close();
    }
  });

  it("passes transformer env (never the server's own) to a function", async () => {
    process.env.TOOLPLANE_TEST_SECRET = "server-only";
    const cp = await createFunction("Env", [{ path: "index.mjs", content: FUNCTION_SERVER }], {});
    const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    const pv = await t.db
      .selectFrom("provider_versions")
      .select("runtime")
      .where("id", "=", v1.provider_version_id)
      .executeTakeFirstOrThrow();
    const runtime = { ...pv.runtime, transformer: { env: { GREETING: "hi {{config.name}}", NODE_OPTIONS: "x" } } };
    const connection = await connectUpstream(upstreamTarget(runtime, { name: "ann" }), { timeoutMs: 10_000 });
    try {
      const result = await connection.client.callTool({ name: "add", arguments: { a: 1, b: 1 } });
      expect(result.content).toEqual([{ type: "text", text: "2 hi ann" }]);
    } finally {
      await connection.close();
      delete process.env.TOOLPLANE_TEST_SECRET;
    }
  });

  it("a function that exits fails with process_exited and its stderr", async () => {
    const cp = await createFunction("Crasher", [
      { path: "index.mjs", content: "console.error('boom: missing dependency'); process.exit(3);\n" },
    ]);
    const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    expect(v1.deployment.error?.code).toBe("process_exited");
    expect(v1.deployment.error?.message).toContain("boom: missing dependency");
  });

  it("a function that never answers fails with timeout after timeout_ms", async () => {
    const cp = await createFunction("Sleeper", [{ path: "index.mjs", content: "setInterval(() => {}, 1000);\n" }], {
      timeout_ms: 1000,
    });
    const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    expect(v1.deployment.error?.code).toBe("timeout");
  });

  it("a container version without an engine fails with container_runtime_unavailable", async () => {
    const cp = await unwrap(
      t.client.POST("/custom-providers", {
        body: {
          name: "Boxed",
          from: { type: "container", image_ref: "ghcr.io/acme/weather:1", username: "bot", password: "pw-123" },
        },
      }),
    );
    expect(cp.type).toBe("container");
    const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    expect(v1.status).toBe("deployment_failed");
    expect(v1.deployment.error?.code).toBe("container_runtime_unavailable");
    expect(v1.deployment.error?.message).toContain("DOCKER_HOST");
  });
});
