// One build that runs anywhere: `scripts/build.mjs` output, copied outside the checkout, runs the server and the
// CLI with plain node from there: migrations logged file by file (a failing one named), the CLI beside a running
// server on the embedded database (through the server's admin socket), --json output, every key form revocable.
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminSocketPath } from "../../src/cli/admin-socket.ts";
import {
  buildElsewhere,
  KEY_PATTERN,
  REPO_ROOT,
  runNode,
  type Started,
  scratchDir,
  startNode,
  waitFor,
} from "./built-server.ts";

const scratch = scratchDir();
const dataDir = join(scratch, "data");
let dist = "";
// Started with a relative data dir from a working directory of its own: nothing resolves against the checkout.
const env = {
  ...process.env,
  TOOLPLANE_DATA_DIR: "./data",
  PORT: "0",
  LOG_LEVEL: "info",
  DATABASE_URL: "",
  INIT_CWD: "",
};
let server: Started;
let url = "";
let firstKey = "";
const cli = (...args: string[]) => runNode(join(dist, "cli.mjs"), args, scratch, env);
const json = async (...args: string[]) => {
  const result = await cli(...args, "--json");
  expect(result).toMatchObject({ code: 0 });
  return JSON.parse(result.stdout);
};
const statusWith = async (key: string) =>
  (await fetch(`${url}/provider-groups`, { headers: { authorization: `Bearer ${key}` } })).status;

async function startServer(): Promise<Started> {
  const started = startNode(join(dist, "main.mjs"), [], scratch, env);
  url = (await waitFor(started, /listening on (http:\/\/\S+)/))[1] ?? "";
  return started;
}

// Process starts open PGlite and the build bundles everything: seconds of CPU, many times that on a busy machine.
const TIMEOUT_MS = 300_000;

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))("the built server, copied outside the checkout", () => {
  beforeAll(async () => {
    dist = await buildElsewhere(scratch);
    server = await startServer();
    firstKey = KEY_PATTERN.exec(server.output())?.[1] ?? "";
  }, TIMEOUT_MS);
  afterAll(async () => {
    server?.child.kill("SIGKILL");
    await server?.exited;
    rmSync(scratch, { recursive: true, force: true });
  });

  it("holds everything it needs: no path into the checkout in any file it runs", () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
      );
    const runnable = files(dist).filter((f) => /\.(mjs|js|cjs|json|sql|yaml)$/.test(f));
    expect(runnable.map((f) => f.slice(dist.length + 1))).toEqual(
      expect.arrayContaining(["main.mjs", "cli.mjs", "migrations/0001_foundation.sql", "catalog/everything.yaml"]),
    );
    expect(runnable.filter((f) => readFileSync(f, "utf8").includes(REPO_ROOT))).toEqual([]);
  });

  it(
    "starts with node from there, logging each migration, and serves the API, its spec and docs",
    async () => {
      expect(firstKey).toMatch(KEY_PATTERN);
      // Logs are written asynchronously: they may follow the banner.
      await waitFor(server, /"migration":"0014_tool_call_leases.sql","ms":\d+,"msg":"applied migration"/);
      expect(server.output()).toContain('"migration":"0001_foundation.sql","msg":"applying migration"');
      expect(await statusWith(firstKey)).toBe(200);
      expect((await fetch(`${url}/openapi.json`)).status).toBe(200);
      expect((await fetch(`${url}/docs/redoc.standalone.js`)).status).toBe(200);
    },
    TIMEOUT_MS,
  );

  it(
    "runs the CLI while the server holds the embedded database, through an owner-only admin socket",
    async () => {
      expect(statSync(adminSocketPath(dataDir)).mode & 0o777).toBe(0o600);
      const created = await json("keys", "create", "--name", "portable");
      expect(created).toMatchObject({ name: "portable", key: expect.stringMatching(KEY_PATTERN) });
      expect(await statusWith(created.key)).toBe(200);

      const listed = (await json("keys", "list")) as { id: string; prefix: string }[];
      expect(listed.map((k) => k.id)).toContain(created.id);
      const table = await cli("keys", "list");
      expect(table.stdout).toContain(`tp_${created.prefix}_…`);
      // Every form keys list prints names the key: the id, and the prefix as shown.
      expect(await json("keys", "revoke", `tp_${created.prefix}_…`)).toMatchObject({ id: created.id });
      const other = await json("keys", "create", "--name", "by-id");
      expect(await json("keys", "revoke", other.id)).toMatchObject({ id: other.id, revoked_at: expect.any(String) });

      const catalog = (await json("catalog", "list")) as { slug: string }[];
      expect(catalog.map((p) => p.slug)).toContain("everything");
      expect(await cli("keys", "frobnicate")).toMatchObject({ code: 2 });
      expect(await cli("keys", "revoke", "key_nope")).toMatchObject({ code: 1, stderr: "No active key key_nope.\n" });
    },
    TIMEOUT_MS,
  );

  it(
    "names a failing migration and starts no server; with the server stopped the CLI opens the data itself",
    async () => {
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(0);
      expect(() => statSync(adminSocketPath(dataDir))).toThrow();

      const broken = join(dist, "migrations", "9999_broken.sql");
      writeFileSync(broken, "create table half (x int);\nselect nope;\n");
      const failed = startNode(join(dist, "main.mjs"), [], scratch, env);
      expect(await failed.exited).toBe(1);
      expect(failed.output()).toMatch(/toolplane: cannot start: migration 9999_broken\.sql failed: .*nope/);
      rmSync(broken);

      // Rolled back whole: the data is as it was, and the CLI (no server running) opens it directly.
      const keys = (await json("keys", "list")) as { name: string }[];
      expect(keys.map((k) => k.name).sort()).toEqual(["by-id", "first key", "portable"]);
    },
    TIMEOUT_MS,
  );
});
