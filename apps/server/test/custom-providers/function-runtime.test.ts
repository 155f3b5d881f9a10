// A function's process ends with the server that started it, even when the server is killed outright.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { materializeFunction } from "../../src/custom-providers/function-runtime.ts";

const dir = mkdtempSync(join(tmpdir(), "toolplane-function-runtime-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it("runs the entrypoint as the main module, and exits once its server is killed with SIGKILL", async () => {
  const out = join(dir, "started.json");
  const runtime = await materializeFunction(join(dir, "functions"), "cpv_test", {
    type: "function",
    runtime: "node20",
    entrypoint: "index.mjs",
    // A function that never exits by itself (a referenced timer) and reports how it was started.
    files: [
      {
        path: "index.mjs",
        content: `import { writeFileSync } from "node:fs";
writeFileSync(${JSON.stringify(out)}, JSON.stringify({ pid: process.pid, main: process.argv[1] }));
setInterval(() => {}, 1000);`,
      },
    ],
    timeout_ms: 30_000,
    memory_mb: 64,
  });
  if (runtime.type !== "stdio") throw new Error("a function runs over stdio");
  // A stand-in for the server: starts the function as the gateway's pool does (pipes for stdio), then waits.
  const server = spawn(
    process.execPath,
    [
      "-e",
      `const { spawn } = require("node:child_process");
spawn(${JSON.stringify(runtime.command)}, ${JSON.stringify(runtime.args)}, { stdio: "pipe" });
setInterval(() => {}, 1000);`,
    ],
    { stdio: "ignore" },
  );
  let started: { pid: number; main: string } | undefined;
  for (let i = 0; i < 200 && !started; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    try {
      started = JSON.parse(readFileSync(out, "utf8"));
    } catch {
      // not written yet
    }
  }
  if (!started) throw new Error("the function did not start");
  expect(started.main).toBe(join(dir, "functions", "cpv_test", "index.mjs"));
  expect(alive(started.pid)).toBe(true);
  server.kill("SIGKILL");
  // It notices within about a second (the watch interval); 10 s bounds a loaded machine.
  for (let i = 0; i < 100 && alive(started.pid); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  expect(alive(started.pid)).toBe(false);
});
