// Starts target.ts in a child process and talks to it over IPC. The target runs as `pnpm start` runs the server:
// bundled into plain JavaScript by the server's own build (scripts/build.mjs, with target.ts as one more entry
// point), not under the tsx loader, whose output wraps every function in a `__name` call the build does not make.
import { type ChildProcess, execFile, fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { ParentMessage, Seeded, TargetMessage } from "./protocol.ts";
import { rssMb } from "./restart.ts";

const TARGET = fileURLToPath(new URL("./target.ts", import.meta.url));
const BENCH_DIR = fileURLToPath(new URL("..", import.meta.url));
const BUILD = fileURLToPath(new URL("../../apps/server/scripts/build.mjs", import.meta.url));

let built: Promise<string> | undefined;
/** The bundled target (built once per run, into a directory removed when the run exits). */
function bundledTarget(): Promise<string> {
  built ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "toolplane-bench-"));
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    const outdir = join(dir, "dist");
    await promisify(execFile)(process.execPath, [BUILD, "--outdir", outdir, "--entry", `target=${TARGET}`]);
    return join(outdir, "target.mjs");
  })();
  return built;
}

export type Ready = Extract<TargetMessage, { type: "ready" }>;

export interface TargetOptions {
  mode: "full" | "bare";
  databaseUrl?: string;
  dataDir?: string;
  payload?: unknown;
  logLevel?: string;
  /** A directory of extra catalog entries (full mode). */
  catalogDir?: string;
}

export class Target {
  private constructor(
    private readonly child: ChildProcess,
    readonly ready: Ready,
  ) {}

  get url(): string {
    return this.ready.url;
  }

  /**
   * Every target, bare or full, runs from the same bundle with the same node binary, flags (the young generation
   * size `pnpm start` gives the server) and environment; only BENCH_MODE and the database settings differ.
   */
  static async start(options: TargetOptions): Promise<Target> {
    const execArgv = ["--max-semi-space-size=32"];
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      BENCH_MODE: options.mode,
      DATABASE_URL: options.databaseUrl ?? "",
      BENCH_DATA_DIR: options.dataDir ?? "",
      BENCH_PAYLOAD: options.payload === undefined ? "" : JSON.stringify(options.payload),
      LOG_LEVEL: options.logLevel ?? "info",
      BENCH_CATALOG_DIR: options.catalogDir ?? "",
    };
    delete env.TEST_DATABASE_URL;
    // stdout (the request log) goes to /dev/null, as it would go to a log shipper; stderr stays visible, and its
    // first error line explains a target that dies before it is ready (a module that fails to load, say).
    const child = fork(await bundledTarget(), [], {
      cwd: BENCH_DIR,
      execArgv,
      env,
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => {
      process.stderr.write(d);
      if (stderr.length < 20_000) stderr += d.toString();
    });
    try {
      return new Target(child, await next(child, "ready"));
    } catch (err) {
      const exited = child.exitCode !== null || child.signalCode !== null;
      if (exited && child.stderr && !child.stderr.closed) await new Promise((r) => child.stderr?.once("close", r));
      const cause = /^\w*Error\b.*$/m.exec(stderr)?.[0];
      throw cause && err instanceof Error ? new Error(`${err.message}: ${cause}`) : err;
    }
  }

  async seed(rows: number): Promise<Seeded> {
    this.send({ type: "seed", rows });
    return next(this.child, "seeded");
  }

  async profileStart(): Promise<void> {
    this.send({ type: "profile-start" });
    await next(this.child, "profiling");
  }

  /** Stops the profiler and writes the .cpuprofile to `file`. */
  async profileStop(file: string): Promise<void> {
    this.send({ type: "profile-stop", file });
    await next(this.child, "profiled");
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.send({ type: "stop" });
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 30_000);
    await exited;
    clearTimeout(timer);
  }

  /** Resident memory of the target's process, in MB. */
  rssMb(): number {
    return rssMb(this.ready.pid);
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
  }

  private send(message: ParentMessage) {
    this.child.send(message);
  }
}

function next<T extends TargetMessage["type"]>(
  child: ChildProcess,
  type: T,
): Promise<Extract<TargetMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: TargetMessage) => {
      if (message.type === type) {
        cleanup();
        resolve(message as Extract<TargetMessage, { type: T }>);
      } else if (message.type === "error") {
        cleanup();
        reject(new Error(`target failed: ${message.message}`));
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`target exited with ${code} before "${type}"`));
    };
    const cleanup = () => {
      child.off("message", onMessage);
      child.off("exit", onExit);
    };
    child.on("message", onMessage);
    child.once("exit", onExit);
  });
}
