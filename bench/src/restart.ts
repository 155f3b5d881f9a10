// Figure 7: the server as `pnpm start` runs it (`node --max-semi-space-size=32 apps/server/dist/main.mjs`, built once
// before the restarts by apps/server/scripts/build.mjs) restarting on an existing PGlite data directory (and, for
// comparison, on an existing PostgreSQL database): spawn → first 200 from /health, and the resident memory of the
// idle server.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface StartRun {
  /** Spawn → the "listening on" line on stdout. */
  listeningMs: number;
  /** Spawn → the first 200 from GET /health. */
  firstOkMs: number;
  /** What the server itself logs as startupMs (from its first line of code to listening). */
  serverStartupMs: number | null;
  /**
   * CPU time the launcher and the server had used at the first 200: what the start costs whatever else the
   * machine runs (the wall time above stretches with the load of a shared machine).
   */
  cpuMs: number;
}

export interface Restart {
  firstStartMs: number;
  restarts: StartRun[];
  /** RSS of the server process, idle, a few seconds after start. */
  idleRssMb: number;
}

export const rssMb = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
};

/** CPU time (user + system) a live process has used so far, in ms (from /proc; clock ticks of 10 ms). */
export const cpuMs = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after "pid (comm) ".
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

/** Builds dist/main.mjs as `pnpm start` does first; returns how long it took (ms). */
export function buildServer(root: string): number {
  const started = performance.now();
  execFileSync(process.execPath, ["apps/server/scripts/build.mjs"], { cwd: root, stdio: "ignore" });
  return performance.now() - started;
}

/** Where the restarted server keeps its data: a PGlite data directory, or a PostgreSQL database (with its key). */
type Storage =
  | { dataDir: string; databaseUrl?: undefined }
  | { dataDir: string; databaseUrl: string; secretKey: string };

async function start(
  root: string,
  storage: Storage,
  cpuProfileDir?: string,
): Promise<{ child: ChildProcess; run: StartRun }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TOOLPLANE_DATA_DIR: storage.dataDir,
    PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: storage.databaseUrl ?? "",
    LOG_LEVEL: "info",
  };
  delete env.TEST_DATABASE_URL;
  delete env.TOOLPLANE_SECRET_KEY;
  if (storage.databaseUrl) env.TOOLPLANE_SECRET_KEY = storage.secretKey;
  const started = performance.now();
  // Under the profiler, node writes the .cpuprofile when the server exits.
  const profile = cpuProfileDir ? ["--cpu-prof", `--cpu-prof-dir=${cpuProfileDir}`] : [];
  const child = spawn(process.execPath, [...profile, "--max-semi-space-size=32", "apps/server/dist/main.mjs"], {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match?.[1]) {
        child.stdout?.off("data", onData);
        resolve(match[1]);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (d: Buffer) => {
      output += d.toString();
    });
    child.once("exit", (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
  });
  const listeningMs = performance.now() - started;
  for (;;) {
    const ok = await fetch(`${url}/health`)
      .then((r) => r.status === 200)
      .catch(() => false);
    if (ok) break;
    if (performance.now() - started > 60_000) throw new Error("no 200 from /health within 60 s");
    await new Promise((r) => setTimeout(r, 5));
  }
  const firstOkMs = performance.now() - started;
  const cpu = child.pid ? cpuMs(child.pid) : Number.NaN;
  const logged = /"startupMs":(\d+)/.exec(output)?.[1];
  // Keep draining the log so the server never blocks on a full pipe.
  child.stdout?.resume();
  child.stderr?.resume();
  return { child, run: { listeningMs, firstOkMs, serverStartupMs: logged ? Number(logged) : null, cpuMs: cpu } };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  await exited;
  clearTimeout(timer);
}

/**
 * The first start creates the data directory (or fills the empty PostgreSQL database at `databaseUrl`); then
 * `restarts` restarts on it, the RSS measured after the last. With `cpuProfileDir`, the last restart runs under
 * the CPU profiler (its times are then not figures to report). dist/main.mjs must have been built (buildServer).
 */
export async function measureRestart(
  root: string,
  restarts: number,
  idleSeconds: number,
  options: { cpuProfileDir?: string; databaseUrl?: string } = {},
): Promise<Restart> {
  const { cpuProfileDir, databaseUrl } = options;
  const parent = mkdtempSync(join(tmpdir(), "toolplane-bench-restart-"));
  const dataDir = join(parent, "data");
  const storage: Storage = databaseUrl
    ? { dataDir, databaseUrl, secretKey: `bench:${randomBytes(32).toString("base64")}` }
    : { dataDir };
  const running: ChildProcess[] = [];
  try {
    // The first start creates the data directory (initdb, migrations, catalog, first key).
    const first = await start(root, storage);
    running.push(first.child);
    await stop(first.child);
    const runs: StartRun[] = [];
    let idleRssMb = Number.NaN;
    for (let i = 0; i < restarts; i++) {
      const { child, run } = await start(root, storage, i === restarts - 1 ? cpuProfileDir : undefined);
      running.push(child);
      runs.push(run);
      if (i === restarts - 1 && child.pid) {
        await new Promise((r) => setTimeout(r, idleSeconds * 1000));
        idleRssMb = rssMb(child.pid);
      }
      await stop(child);
    }
    return { firstStartMs: first.run.firstOkMs, restarts: runs, idleRssMb };
  } finally {
    for (const child of running) if (child.exitCode === null) child.kill("SIGKILL");
    rmSync(parent, { recursive: true, force: true });
  }
}
