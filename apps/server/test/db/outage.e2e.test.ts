// A database outage is survived: the built server (dist/main.mjs) runs on a PostgreSQL cluster of its own under
// write load, the cluster's postmaster is killed with SIGKILL, and the process must live on, answer 503 with
// Retry-After (and /ready 503) meanwhile, recover by itself when the cluster is back, and have lost no write it
// acknowledged. PostgreSQL only (`pnpm test:pg`): PGlite lives inside the process and cannot fail this way.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error a plain .mjs script shared with scripts/with-postgres.mjs (no type declarations)
import { startCluster } from "../../../../scripts/postgres-cluster.mjs";

interface Cluster {
  url: string;
  start(): void;
  kill9(): void;
  remove(): void;
}

const root = fileURLToPath(new URL("../..", import.meta.url));
const TIMEOUT_MS = 240_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let cluster: Cluster;
let server: ChildProcess;
let url = "";
let key = "";
let output = "";

describe.skipIf(!process.env.TEST_DATABASE_URL)("database outage (PostgreSQL)", () => {
  beforeAll(async () => {
    await promisify(execFile)(process.execPath, ["scripts/build.mjs"], { cwd: root });
    cluster = (await startCluster()) as Cluster;
    server = spawn(process.execPath, ["dist/main.mjs"], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: cluster.url,
        TOOLPLANE_SECRET_KEY: `k1:${randomBytes(32).toString("base64")}`,
        PORT: "0",
        LOG_LEVEL: "error",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    server.stdout?.on("data", (d) => {
      output += d;
    });
    server.stderr?.on("data", (d) => {
      output += d;
    });
    const deadline = Date.now() + 60_000;
    while (!/listening on/.test(output) && server.exitCode === null && Date.now() < deadline) await sleep(50);
    url = /listening on (http:\/\/\S+)/.exec(output)?.[1] ?? "";
    key = /(tp_[a-z0-9]{12}_[A-Za-z0-9_-]{43})/.exec(output)?.[1] ?? "";
    if (!url || !key) throw new Error(`server did not start:\n${output}`);
  }, TIMEOUT_MS);

  afterAll(() => {
    server?.kill("SIGKILL");
    cluster?.remove();
  });

  it(
    "lives through kill -9 of the postmaster under write load, answers 503 meanwhile, recovers, loses nothing",
    async () => {
      const acknowledged: string[] = [];
      const statuses = new Map<number, number>();
      const unavailable: { retryAfter: string | null; code: unknown }[] = [];
      let running = true;
      let n = 0;
      const writer = async () => {
        while (running) {
          const res = await fetch(`${url}/provider-groups`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: JSON.stringify({ name: `load ${n++}` }),
          }).catch(() => undefined);
          if (!res) continue;
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const body = (await res.json()) as { id?: string; code?: unknown };
          if (res.status === 201 && body.id) acknowledged.push(body.id);
          if (res.status === 503) unavailable.push({ retryAfter: res.headers.get("retry-after"), code: body.code });
          // During the outage answers come at once; pace the loop instead of spinning.
          if (res.status !== 201) await sleep(50);
        }
      };
      const writers = Array.from({ length: 6 }, writer);

      await sleep(1_500);
      const beforeKill = acknowledged.length;
      cluster.kill9();
      await sleep(3_000);
      const ready = await fetch(`${url}/ready`);
      expect(ready.status).toBe(503);
      expect(server.exitCode, output).toBeNull();

      // A killed postmaster leaves its backends to notice and exit; pg_ctl may need a moment before it can start.
      for (let attempt = 0; ; attempt++) {
        try {
          cluster.start();
          break;
        } catch (err) {
          if (attempt >= 20) throw err;
          await sleep(500);
        }
      }
      const recoveryStarted = Date.now();
      while ((await fetch(`${url}/ready`)).status !== 200) {
        if (Date.now() - recoveryStarted > 60_000) throw new Error("the server did not recover within 60 s");
        await sleep(200);
      }
      const recoveredAfterMs = Date.now() - recoveryStarted;
      const atRecovery = acknowledged.length;
      await sleep(1_500);
      running = false;
      await Promise.all(writers);

      console.log(
        `outage: ${beforeKill} writes before the kill, ${acknowledged.length} acknowledged in all, statuses ` +
          `${JSON.stringify(Object.fromEntries(statuses))}, ready again ${recoveredAfterMs} ms after the restart`,
      );
      expect(server.exitCode, output).toBeNull();
      expect(beforeKill).toBeGreaterThan(0);
      expect(acknowledged.length).toBeGreaterThan(atRecovery);
      expect(
        [...statuses.keys()].every((s) => s === 201 || s === 503),
        JSON.stringify([...statuses]),
      ).toBe(true);
      expect(unavailable.length).toBeGreaterThan(0);
      expect(unavailable.every((u) => u.retryAfter === "5" && u.code === "service_unavailable")).toBe(true);

      const db = new pg.Client({ connectionString: cluster.url });
      await db.connect();
      try {
        const found = await db.query<{ id: string }>("select id from provider_groups where id = any($1)", [
          acknowledged,
        ]);
        expect(found.rows.length).toBe(acknowledged.length);
      } finally {
        await db.end();
      }
    },
    TIMEOUT_MS,
  );
});
