// Figure 6, the developer loop, in a temporary clone of HEAD (the working tree is neither touched nor measured): a
// one-line spec edit → `pnpm generate` → `pnpm typecheck`; a no-op `pnpm generate`; `pnpm test:contract`.
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";

export interface CommandRun {
  command: string;
  seconds: number;
  /**
   * CPU time (user + system) of the command's whole process tree: what it costs whatever else runs (the wall
   * time stretches with the load of a shared machine; on an idle one it is at most this, at least this / cores).
   */
  cpuSeconds: number;
  exitCode: number | null;
  timedOut: boolean;
  /** The last lines of the output, for the JSON (and for a failure's note). */
  tail: string;
  /** The first distinct TypeScript errors in the output (the reason a typecheck failed). */
  errors: string[];
}

export interface DevLoop {
  /** The commit measured (HEAD when the run started). */
  commit: string;
  /** The warm-up `pnpm generate` right after cloning (it fills the clone's empty turbo cache). */
  warmup: CommandRun;
  /**
   * The warm-up `pnpm typecheck` after it: a developer's loop starts from a checkout that has been type-checked
   * before (tsc's incremental state in each package's gitignored .tsbuild/, which a clone does not have).
   */
  warmupTypecheck: CommandRun;
  noop: CommandRun[];
  editGenerate: CommandRun;
  editTypecheck: CommandRun;
  contract: CommandRun | { notMeasured: string };
}

const SPEC_FILE = "spec/paths/provider-groups/collection.yaml";
const EDIT_FROM = "Returns a page of the instance's provider groups";

/**
 * CPU time of this process's finished children and everything they waited for (cutime + cstime from /proc): one
 * command runs at a time, so the difference across a command is that command's tree.
 */
function childrenCpuSeconds(): number {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]?.split(" ") ?? [];
  // cutime and cstime are fields 16 and 17 of the whole line, 14 and 15 after "pid (comm) "; ticks of 10 ms.
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

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
  const cpuBefore = childrenCpuSeconds();
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
        cpuSeconds: childrenCpuSeconds() - cpuBefore,
        exitCode: code,
        timedOut,
        tail: output.trim().split("\n").slice(-15).join("\n"),
        errors: [...new Set(output.match(/\S+\(\d+,\d+\): error TS\d+: .*/g) ?? [])].slice(0, 5),
      });
    });
  });
}

/**
 * A clone of the last commit (HEAD), so uncommitted work in the checkout never changes what is measured, that
 * shares the installed packages: every package's node_modules is copied with its links as they are (relative
 * ones resolve inside the clone), and the clone's node_modules/.pnpm is a link to the real store (read-only use).
 */
function cloneHead(root: string): { dir: string; commit: string; cleanup: () => void } {
  const parent = mkdtempSync(join(tmpdir(), "toolplane-bench-devloop-"));
  const dir = join(parent, "repo");
  const cleanup = () => rmSync(parent, { recursive: true, force: true });
  try {
    const git = (...args: string[]) =>
      execFileSync("git", ["-C", root, ...args], { encoding: "utf8", maxBuffer: 64 * 2 ** 20 }).trim();
    const commit = git("rev-parse", "HEAD");
    const archive = join(parent, "head.tar");
    git("archive", "--format=tar", "-o", archive, commit);
    mkdirSync(dir);
    execFileSync("tar", ["-xf", archive, "-C", dir]);
    rmSync(archive);
    const packageDirs = git("ls-tree", "-r", "--name-only", commit)
      .split("\n")
      .filter((file) => file === "package.json" || file.endsWith("/package.json"))
      .map((file) => dirname(file));
    for (const pkg of packageDirs) {
      const modules = join(root, pkg, "node_modules");
      if (!existsSync(modules)) continue;
      cpSync(modules, join(dir, pkg, "node_modules"), {
        recursive: true,
        verbatimSymlinks: true,
        filter: (source) => relative(root, source) !== "node_modules/.pnpm",
      });
    }
    symlinkSync(join(root, "node_modules/.pnpm"), join(dir, "node_modules/.pnpm"));
    return { dir, commit, cleanup };
  } catch (err) {
    cleanup();
    throw err;
  }
}

export async function measureDevLoop(root: string, log: (line: string) => void): Promise<DevLoop> {
  const { dir, commit, cleanup } = cloneHead(root);
  try {
    log(`  clone of HEAD (${commit.slice(0, 7)}) in ${dir}`);
    const warmup = await runCommand(dir, "pnpm", ["generate"], 180_000);
    log(`  warm-up pnpm generate: ${warmup.seconds.toFixed(1)} s (exit ${warmup.exitCode})`);
    const warmupTypecheck = await runCommand(dir, "pnpm", ["typecheck"], 300_000);
    log(`  warm-up pnpm typecheck: ${warmupTypecheck.seconds.toFixed(1)} s (exit ${warmupTypecheck.exitCode})`);
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
    return { commit, warmup, warmupTypecheck, noop, editGenerate, editTypecheck, contract };
  } finally {
    cleanup();
  }
}
