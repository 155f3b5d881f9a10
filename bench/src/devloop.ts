// Figure 6, the developer loop, in a temporary copy of the repository (the working tree is never touched): a
// one-line spec edit → `pnpm generate` → `pnpm typecheck`; a no-op `pnpm generate`; `pnpm test:contract`.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

export interface CommandRun {
  command: string;
  seconds: number;
  exitCode: number | null;
  timedOut: boolean;
  /** The last lines of the output, for the JSON (and for a failure's note). */
  tail: string;
}

export interface DevLoop {
  /** The warm-up `pnpm generate` right after copying (turbo cache as in the working tree). */
  warmup: CommandRun;
  noop: CommandRun[];
  editGenerate: CommandRun;
  editTypecheck: CommandRun;
  contract: CommandRun | { notMeasured: string };
}

const SPEC_FILE = "spec/paths/provider-groups/collection.yaml";
const EDIT_FROM = "Returns a page of the instance's provider groups";

function runCommand(cwd: string, command: string, args: string[], timeoutMs: number): Promise<CommandRun> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TURBO_TELEMETRY_DISABLED: "1",
    REDOCLY_TELEMETRY: "off",
    NO_UPDATE_NOTIFIER: "1",
    FORCE_COLOR: "0",
  };
  // The developer's default: the embedded database, whatever the benchmark itself runs under.
  delete env.TEST_DATABASE_URL;
  delete env.DATABASE_URL;
  // pnpm sets these for the `bench` script; inside the copy they would point back at the working tree.
  for (const key of Object.keys(env))
    if (key.startsWith("npm_") || key === "INIT_CWD" || key === "PNPM_SCRIPT_SRC_DIR") delete env[key];
  const started = performance.now();
  return new Promise((resolve) => {
    // Its own process group, so a timeout can stop the whole tree (turbo, tsc, Prism) it started.
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let output = "";
    const collect = (d: Buffer) => {
      output = (output + d.toString()).slice(-20_000);
    };
    child.stdout?.on("data", collect);
    child.stderr?.on("data", collect);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    }, timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({
        command: [command, ...args].join(" "),
        seconds: (performance.now() - started) / 1000,
        exitCode: code,
        timedOut,
        tail: output.trim().split("\n").slice(-15).join("\n"),
      });
    });
  });
}

/**
 * A copy of the working tree that shares the installed packages: the per-package node_modules links are
 * relative and resolve into the copy's node_modules/.pnpm, which is a link to the real one (read-only use).
 */
function copyRepository(root: string): { dir: string; cleanup: () => void } {
  const parent = mkdtempSync(join(tmpdir(), "toolplane-bench-devloop-"));
  const dir = join(parent, "repo");
  const skip = new Set(["node_modules/.pnpm", ".data", "bench/results", "contract-report.json"]);
  cpSync(root, dir, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (source) => {
      const rel = relative(root, source);
      return !skip.has(rel) && !rel.endsWith("/.data");
    },
  });
  symlinkSync(join(root, "node_modules/.pnpm"), join(dir, "node_modules/.pnpm"));
  return { dir, cleanup: () => rmSync(parent, { recursive: true, force: true }) };
}

export async function measureDevLoop(root: string, log: (line: string) => void): Promise<DevLoop> {
  const { dir, cleanup } = copyRepository(root);
  try {
    log(`  copy of the working tree in ${dir}`);
    const warmup = await runCommand(dir, "pnpm", ["generate"], 180_000);
    log(`  warm-up pnpm generate: ${warmup.seconds.toFixed(1)} s (exit ${warmup.exitCode})`);
    const noop: CommandRun[] = [];
    for (let i = 0; i < 3; i++) noop.push(await runCommand(dir, "pnpm", ["generate"], 60_000));
    log(`  no-op pnpm generate: ${noop.map((r) => r.seconds.toFixed(2)).join(", ")} s`);

    const specPath = join(dir, SPEC_FILE);
    const original = readFileSync(specPath, "utf8");
    if (!original.includes(EDIT_FROM)) throw new Error(`${SPEC_FILE} no longer contains "${EDIT_FROM}"`);
    writeFileSync(specPath, original.replace(EDIT_FROM, `${EDIT_FROM} (benchmark edit ${Date.now()})`));
    const editGenerate = await runCommand(dir, "pnpm", ["generate"], 180_000);
    const editTypecheck = await runCommand(dir, "pnpm", ["typecheck"], 300_000);
    log(
      `  edit → generate ${editGenerate.seconds.toFixed(1)} s (exit ${editGenerate.exitCode}) → typecheck ${editTypecheck.seconds.toFixed(1)} s (exit ${editTypecheck.exitCode})`,
    );
    // The contract suite runs on the unedited spec, as it would in CI.
    writeFileSync(specPath, original);

    let contract: DevLoop["contract"];
    if (!existsSync(join(dir, "packages/contract-tests/src/cli.ts"))) {
      contract = { notMeasured: "packages/contract-tests/src/cli.ts does not exist yet" };
    } else {
      contract = await runCommand(dir, "pnpm", ["test:contract"], 180_000);
      log(`  pnpm test:contract: ${contract.seconds.toFixed(1)} s (exit ${contract.exitCode})`);
    }
    return { warmup, noop, editGenerate, editTypecheck, contract };
  } finally {
    cleanup();
  }
}
