// Start-up says what is wrong in one line and exits non-zero: each bad setting or unusable resource, against the
// built server (dist/main.mjs, what `pnpm start` and a service manager run).
import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "toolplane-startup-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
// A cold PGlite data directory (initdb) takes several seconds of CPU, many times that on a busy machine.
const PROCESS_TEST_TIMEOUT_MS = 180_000;

function run(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ["dist/main.mjs"], {
    cwd: root,
    env: { ...process.env, PORT: "0", LOG_LEVEL: "warn", DATABASE_URL: "", TOOLPLANE_DATA_DIR: scratch, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => {
    stdout += d;
  });
  child.stderr.on("data", (d) => {
    stderr += d;
  });
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

async function expectOneLine(env: Record<string, string>, expected: RegExp) {
  const { code, stdout, stderr } = await run(env);
  expect(code).toBe(1);
  expect(stderr.trimEnd().split("\n"), stderr).toHaveLength(1);
  expect(stderr).toMatch(/^toolplane: cannot start: /);
  expect(stderr).toMatch(expected);
  expect(stdout).not.toMatch(/listening/);
  return stderr;
}

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))("start-up errors", () => {
  beforeAll(async () => {
    await promisify(execFile)(process.execPath, ["scripts/build.mjs"], { cwd: root });
  }, PROCESS_TEST_TIMEOUT_MS);

  it(
    "names a bad DATABASE_URL, LOG_LEVEL, PORT, TOOLPLANE_PUBLIC_URL and TOOLPLANE_REGISTRY_URL",
    async () => {
      await Promise.all([
        expectOneLine({ DATABASE_URL: "notaurl" }, /DATABASE_URL must be a postgres:\/\/.* got "notaurl"/),
        expectOneLine({ DATABASE_URL: "mysql://db/x" }, /DATABASE_URL must start with postgres:\/\//),
        expectOneLine({ LOG_LEVEL: "verbose" }, /LOG_LEVEL must be one of .*info.* got "verbose"/),
        expectOneLine({ PORT: "http" }, /PORT must be an integer/),
        expectOneLine({ TOOLPLANE_PUBLIC_URL: "example.com" }, /TOOLPLANE_PUBLIC_URL must be an absolute http/),
        expectOneLine({ TOOLPLANE_REGISTRY_URL: "registry.example.com" }, /TOOLPLANE_REGISTRY_URL must be an absolute/),
      ]);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "names an unreachable database without printing its password",
    async () => {
      const line = await expectOneLine(
        {
          DATABASE_URL: "postgres://app:hunter2@127.0.0.1:1/toolplane",
          TOOLPLANE_SECRET_KEY: `k1:${randomBytes(32).toString("base64")}`,
        },
        /DATABASE_URL: cannot reach the database at postgres:\/\/\[redacted\]@127\.0\.0\.1:1\/toolplane \(ECONNREFUSED\)/,
      );
      expect(line).not.toContain("hunter2");
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "names a data directory it cannot write",
    async () => {
      const file = join(scratch, "a-file");
      writeFileSync(file, "");
      await expectOneLine(
        { TOOLPLANE_DATA_DIR: join(file, "data") },
        /TOOLPLANE_DATA_DIR: cannot write .*a-file.* \(ENOTDIR\)/,
      );
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    "exits when the port is in use instead of printing listening and serving nothing",
    async () => {
      const taken: Server = createServer();
      await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
      const { port } = taken.address() as { port: number };
      try {
        await expectOneLine(
          { PORT: String(port), TOOLPLANE_DATA_DIR: join(scratch, "port") },
          new RegExp(`PORT: 127\\.0\\.0\\.1:${port} is already in use`),
        );
      } finally {
        taken.close();
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
