// The build as an operator gets it: `scripts/build.mjs` into a scratch directory, copied to another one outside the
// checkout (so nothing can lean on where it was built), and its processes started from there with node.
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export const SERVER_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const REPO_ROOT = fileURLToPath(new URL("../../../..", import.meta.url));
export const KEY_PATTERN = /(tp_[a-z0-9]{12}_[A-Za-z0-9_-]{43})/;
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Builds once into `<scratch>/build`, copies it to `<scratch>/toolplane` and removes the original. */
export async function buildElsewhere(scratch: string): Promise<string> {
  const built = join(scratch, "build");
  await promisify(execFile)(process.execPath, ["scripts/build.mjs", "--outdir", built], { cwd: SERVER_ROOT });
  const copy = join(scratch, "toolplane");
  cpSync(built, copy, { recursive: true });
  rmSync(built, { recursive: true, force: true });
  return copy;
}

export const scratchDir = () => mkdtempSync(join(tmpdir(), "toolplane-deploy-"));

export interface Started {
  child: ChildProcess;
  output: () => string;
  /** Resolves with the exit code (or 1 after a signal). */
  exited: Promise<number>;
}

/** Starts `node <file>` in `cwd` with `env`, collecting its output. */
export function startNode(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Started {
  const child = spawn(process.execPath, [file, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (d) => {
    output += d;
  });
  child.stderr?.on("data", (d) => {
    output += d;
  });
  const exited = new Promise<number>((resolve) => child.once("exit", (code) => resolve(code ?? 1)));
  return { child, output: () => output, exited };
}

/** Waits until the output matches (or the process exits: then fails with its output). */
export async function waitFor(started: Started, pattern: RegExp): Promise<RegExpExecArray> {
  let exited = false;
  void started.exited.then(() => {
    exited = true;
  });
  for (;;) {
    const match = pattern.exec(started.output());
    if (match) return match;
    if (exited) throw new Error(`process exited before printing ${pattern}:\n${started.output()}`);
    await sleep(50);
  }
}

/** Runs `node <file> <args>` to completion: exit code, stdout and stderr apart (for --json). */
export async function runNode(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [file, ...args], { cwd, env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** nginx from Debian, installed when missing (as scripts/postgres-cluster.mjs does for PostgreSQL; needs root). */
export function ensureNginx(): void {
  if (existsSync("/usr/sbin/nginx")) return;
  if (process.getuid?.() !== 0)
    throw new Error("nginx is not installed and installing it needs root (apt-get install nginx)");
  execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit" });
  execFileSync("apt-get", ["install", "-y", "-qq", "nginx"], {
    stdio: "inherit",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
}
