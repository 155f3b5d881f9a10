// The documented deployment, run as documented: deploy/replicas.mjs starts 3 replicas of the build (copied outside
// the checkout) over one PostgreSQL database behind nginx. Through nginx, API writes and MCP tool calls of one session
// keep going while a replica is killed with SIGKILL and restarted by the script: every operation succeeds after a
// short retry, and every write that was acknowledged is in the database. The CLI runs beside the replicas on the
// same PostgreSQL. PostgreSQL only (`pnpm test:pg`): replicas need a database server to share.
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  buildElsewhere,
  ensureNginx,
  KEY_PATTERN,
  REPO_ROOT,
  runNode,
  type Started,
  scratchDir,
  sleep,
  startNode,
  waitFor,
} from "./built-server.ts";

const REPLICAS = 3;
const TIMEOUT_MS = 300_000;
const adminUrl = process.env.TEST_DATABASE_URL ?? "";
const database = `toolplane_deploy_${process.pid}`;
const scratch = scratchDir();
const runDir = join(scratch, "run");
let dist = "";
let env: NodeJS.ProcessEnv = {};
let deployment: Started;
let lb = "";
let key = "";
let port = 0;

/** A port with the next REPLICAS ports free too (the script puts the replicas on consecutive ports). */
async function freePorts(count: number): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const probe = createServer()
        .once("error", () => resolve(false))
        .listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
    });
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    const all = await Promise.all(Array.from({ length: count }, (_, i) => free(base + i)));
    if (all.every(Boolean)) return base;
  }
}

/** One operation through the load balancer, retried while a replica is down (502, refused, reset, MCP errors). */
async function withRetry<T>(attempt: () => Promise<T>): Promise<{ value: T; retries: number }> {
  for (let retries = 0; ; retries++) {
    try {
      return { value: await attempt(), retries };
    } catch (err) {
      // A short retry is all a client needs: nginx skips the dead replica and the others serve.
      if (retries >= 50) throw err;
      await sleep(100);
    }
  }
}

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${lb}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 500) throw new Error(`${method} ${path}: ${res.status}`);
  return { status: res.status, json };
}

const replicaPid = (n: number) => Number(readFileSync(join(runDir, `replica-${n}.pid`), "utf8"));

/** The replica nginx sends this client's MCP requests to (all of one client's go to one, for its GET stream). */
async function mcpReplica(sessionPath: string): Promise<number> {
  for (;;) {
    for (let n = 1; n <= REPLICAS; n++) {
      if (readFileSync(join(runDir, `replica-${n}.log`), "utf8").includes(`"url":"${sessionPath}"`)) return n;
    }
    await sleep(100);
  }
}

describe.skipIf(!adminUrl)("3 replicas over one PostgreSQL behind nginx (deploy/replicas.mjs)", () => {
  beforeAll(async () => {
    ensureNginx();
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${database}`);
    await admin.end();
    const url = new URL(adminUrl);
    url.pathname = `/${database}`;
    dist = await buildElsewhere(scratch);
    env = {
      ...process.env,
      DATABASE_URL: url.toString(),
      TOOLPLANE_SECRET_KEY: `k1:${randomBytes(32).toString("base64")}`,
      // Request lines tell which replica serves the MCP session.
      LOG_LEVEL: "info",
    };
    port = await freePorts(REPLICAS + 1);
    deployment = startNode(
      join(REPO_ROOT, "deploy/replicas.mjs"),
      ["--replicas", String(REPLICAS), "--port", String(port), "--dist", dist, "--run-dir", runDir],
      scratch,
      env,
    );
    lb = (await waitFor(deployment, /ready: 3 replicas behind nginx on (http:\/\/\S+)/))[1] ?? "";
    key = KEY_PATTERN.exec(deployment.output())?.[1] ?? "";
  }, TIMEOUT_MS);

  afterAll(async () => {
    deployment?.child.kill("SIGTERM");
    await deployment?.exited;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
    rmSync(scratch, { recursive: true, force: true });
  }, TIMEOUT_MS);

  it(
    "serves the API and an MCP session through nginx while a replica is killed and restarted; loses no write",
    async () => {
      expect(key).toMatch(KEY_PATTERN);
      // The CLI beside running replicas, on the database they share.
      const cli = await runNode(join(dist, "cli.mjs"), ["catalog", "list", "--json"], scratch, env);
      expect(cli.code).toBe(0);
      const everything = (JSON.parse(cli.stdout) as { slug: string; provider_id: string }[]).find(
        (p) => p.slug === "everything",
      );
      const made = await runNode(join(dist, "cli.mjs"), ["keys", "create", "--name", "ops", "--json"], scratch, env);
      expect(JSON.parse(made.stdout)).toMatchObject({ name: "ops", key: expect.stringMatching(KEY_PATTERN) });

      const deployed = await api("POST", "/provider-deployments", {
        name: "Everything",
        provider_id: everything?.provider_id,
      });
      expect(deployed.status).toBe(201);
      const session = await api("POST", "/sessions", {
        providers: [
          {
            provider_deployment: {
              type: "reference",
              provider_deployment_id: (deployed.json as { id: string }).id,
            },
          },
        ],
      });
      const { connection_url, secret } = session.json as { connection_url: string; secret: string };
      // The session's URL is the public one: nginx's address (TOOLPLANE_PUBLIC_URL).
      expect(connection_url.startsWith(`${lb}/`)).toBe(true);
      const mcp = new Client({ name: "deploy-test", version: "1.0.0" });
      await mcp.connect(
        new StreamableHTTPClientTransport(new URL(connection_url), {
          requestInit: { headers: { authorization: `Bearer ${secret}` } },
        }),
      );

      // The replica holding the session's GET stream is the one killed: the hardest case for the client.
      expect(await mcp.callTool({ name: "echo", arguments: { message: "hi" } })).toMatchObject({
        content: [{ type: "text", text: "Echo: hi" }],
      });
      const victim = await mcpReplica(new URL(connection_url).pathname);

      const acknowledged: string[] = [];
      let retried = 0;
      let calls = 0;
      let running = true;
      const writer = async (w: number) => {
        for (let i = 0; running; i++) {
          const created = await withRetry(async () => {
            const res = await api("POST", "/provider-groups", { name: `w${w}-${i}` });
            if (res.status !== 201) throw new Error(`POST: ${res.status}`);
            return (res.json as { id: string }).id;
          });
          acknowledged.push(created.value);
          const read = await withRetry(() => api("GET", `/provider-groups/${created.value}`));
          expect(read.value.status).toBe(200);
          const renamed = await withRetry(() =>
            api("PATCH", `/provider-groups/${created.value}`, { name: `r${w}-${i}` }),
          );
          expect(renamed.value.status).toBe(200);
          retried += created.retries + read.retries + renamed.retries;
        }
      };
      const caller = async () => {
        for (let i = 0; running; i++) {
          // A call whose replica dies mid-answer never hears back: the client gives up on it after a while (the
          // SDK's default is 60 s) and sends it again.
          const result = await withRetry(() =>
            mcp.callTool({ name: "echo", arguments: { message: `m${i}` } }, undefined, { timeout: 5_000 }),
          );
          expect(result.value.content).toEqual([{ type: "text", text: `Echo: m${i}` }]);
          retried += result.retries;
          calls++;
        }
      };
      const load = [writer(1), writer(2), caller()];

      await sleep(1_000);
      const killed = replicaPid(victim);
      process.kill(killed, "SIGKILL");
      // The script starts it again; then load runs on all three for a while longer.
      await waitFor(deployment, new RegExp(`replica ${victim} \\(pid (?!${killed}\\))\\d+\\) ready`));
      const [writesBefore, callsBefore] = [acknowledged.length, calls];
      while (acknowledged.length < writesBefore + 20 || calls < callsBefore + 5) await sleep(100);
      running = false;
      await Promise.all(load);
      await mcp.close();

      // The restarted replica (on the script's port + its number) serves requests itself.
      expect(replicaPid(victim)).not.toBe(killed);
      expect(deployment.output()).toContain(`replica ${victim} (pid ${killed}) exited (SIGKILL); restarting`);
      const direct = await fetch(`http://127.0.0.1:${port + victim}/provider-groups/${acknowledged[0]}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(direct.status).toBe(200);
      const doomed = (
        await api("POST", "/provider-deployments", { name: "Doomed", provider_id: everything?.provider_id })
      ).json as { id: string };
      expect((await api("DELETE", `/provider-deployments/${doomed.id}`)).status).toBe(200);
      expect((await api("GET", `/provider-deployments/${doomed.id}`)).status).toBe(404);

      // Every acknowledged write is in the database.
      const db = new pg.Client({ connectionString: env.DATABASE_URL });
      await db.connect();
      const stored = await db.query<{ id: string }>("select id from provider_groups where id = any($1)", [
        acknowledged,
      ]);
      await db.end();
      expect(stored.rows.map((r) => r.id).sort()).toEqual([...acknowledged].sort());
      expect(calls).toBeGreaterThan(0);
      console.log(
        `deploy: killed replica ${victim}; ${acknowledged.length} writes, ${calls} MCP calls, ${retried} retries`,
      );
    },
    TIMEOUT_MS,
  );
});
