import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unwrap } from "@toolplane/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type StartedTestServer, startTestServer } from "../support/server.ts";
import {
  firstVersion,
  type McpUpstream,
  REMOTE_TOOLS,
  type Runner,
  startMcpUpstream,
  startRunner,
  waitForDeployment,
} from "./support.ts";

/**
 * A stand-in for the Docker Engine API on a unix socket (no Docker here): it answers the calls the engine path
 * makes and "runs" every container as the test MCP upstream, whose port it reports as the published one.
 */
interface FakeEngine {
  dockerHost: string;
  calls: { method: string; path: string; headers: Record<string, unknown>; body: unknown }[];
  close(): Promise<void>;
}

async function startFakeEngine(upstream: McpUpstream): Promise<FakeEngine> {
  const dir = mkdtempSync(join(tmpdir(), "fake-docker-"));
  const socket = join(dir, "docker.sock");
  const calls: FakeEngine["calls"] = [];
  const port = new URL(upstream.url).port;
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const path = (req.url ?? "").replace(/^\/v[\d.]+/, "");
    calls.push({ method: req.method ?? "", path, headers: req.headers, body: text ? JSON.parse(text) : undefined });
    const json = (status: number, body?: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(body === undefined ? "" : JSON.stringify(body));
    if (req.method === "POST" && path.startsWith("/images/create")) {
      const image = new URL(path, "http://x").searchParams.get("fromImage") ?? "";
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`${JSON.stringify({ status: `Pulling from ${image}` })}\n`);
      if (image.includes("missing")) res.write(`${JSON.stringify({ error: "manifest unknown" })}\n`);
      return res.end();
    }
    if (req.method === "DELETE" && path.startsWith("/containers/")) return json(404, { message: "No such container" });
    if (req.method === "POST" && path.startsWith("/containers/create")) return json(201, { Id: "c0ffee" });
    if (req.method === "POST" && path === "/containers/c0ffee/start") return json(204);
    if (req.method === "GET" && path === "/containers/c0ffee/json") {
      return json(200, { NetworkSettings: { Ports: { "8080/tcp": [{ HostIp: "127.0.0.1", HostPort: port }] } } });
    }
    return json(404, { message: `unexpected ${req.method} ${path}` });
  });
  server.listen(socket);
  await new Promise<void>((resolve) => server.once("listening", resolve));
  return {
    dockerHost: `unix://${socket}`,
    calls,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let t: StartedTestServer;
let upstream: McpUpstream;
let engine: FakeEngine;
let runner: Runner;
beforeAll(async () => {
  t = await startTestServer();
  upstream = await startMcpUpstream({ tools: REMOTE_TOOLS });
  engine = await startFakeEngine(upstream);
  runner = await startRunner(t, { dockerHost: engine.dockerHost });
});
afterAll(async () => {
  await runner.stop();
  await engine.close();
  await upstream.close();
  await t.close();
});

const createContainer = (name: string, from: Record<string, unknown>) =>
  unwrap(t.client.POST("/custom-providers", { body: { name, from: { type: "container", ...from } as never } }));

describe("container versions through a Docker Engine API", () => {
  it("pulls with the registry credentials, runs the container and probes its published port", async () => {
    const cp = await createContainer("Boxed weather", {
      image_ref: "ghcr.io/acme/weather:1.4.0",
      username: "bot",
      password: "pw-registry-1",
    });
    const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    expect(v1.deployment.error).toBeNull();
    expect(v1.status).toBe("deployment_succeeded");

    const pull = engine.calls.find((c) => c.path.startsWith("/images/create"));
    expect(pull?.path).toContain(encodeURIComponent("ghcr.io/acme/weather:1.4.0"));
    const auth = JSON.parse(Buffer.from(String(pull?.headers["x-registry-auth"]), "base64url").toString("utf8"));
    expect(auth).toEqual({ username: "bot", password: "pw-registry-1", serveraddress: "ghcr.io" });
    const create = engine.calls.find((c) => c.path.startsWith("/containers/create"));
    expect(create?.path).toContain(`name=toolplane-${v1.id}`);
    expect(create?.body).toMatchObject({ Image: "ghcr.io/acme/weather:1.4.0", Env: ["PORT=8080"] });

    const pv = await t.db
      .selectFrom("provider_versions")
      .select(["runtime", "tools"])
      .where("id", "=", v1.provider_version_id)
      .executeTakeFirstOrThrow();
    expect(pv.runtime).toMatchObject({ type: "remote", url: upstream.url, protocol: "streamable_http" });
    expect(pv.tools.map((tool) => tool.name)).toEqual(REMOTE_TOOLS);
  });

  it("fails with image_pull_failed when the engine cannot pull the image", async () => {
    const cp = await createContainer("Missing image", { image_ref: "ghcr.io/acme/missing:1" });
    const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    expect(v1.deployment.error).toMatchObject({ code: "image_pull_failed" });
    expect(v1.deployment.error?.message).toContain("manifest unknown");
  });

  it("fails with container_runtime_unavailable when DOCKER_HOST cannot be reached", async () => {
    await runner.stop();
    runner = await startRunner(t, { dockerHost: "unix:///nonexistent/docker.sock" });
    const cp = await createContainer("Unreachable engine", { image_ref: "ghcr.io/acme/weather:1" });
    const v1 = await waitForDeployment(t, cp.id, (await firstVersion(t, cp.id)).id);
    expect(v1.deployment.error).toMatchObject({ code: "container_runtime_unavailable" });
    expect(v1.deployment.error?.message).toContain("DOCKER_HOST");
  });
});
