import { randomBytes } from "node:crypto";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import type { CustomProviderSource, Runtime } from "../db/schema.ts";

type FunctionSource = Extract<CustomProviderSource, { type: "function" }>;

/**
 * Writes a function version's files to `<functionsDir>/<versionId>/` (through a temporary directory renamed into
 * place, so a crash never leaves half a tree) and returns the stdio runtime that starts it: this server's own
 * Node.js binary with the heap capped at `memory_mb`. The database keeps the files; the directory is a cache
 * that each deployment rewrites.
 */
export async function materializeFunction(
  functionsDir: string,
  versionId: string,
  source: FunctionSource,
): Promise<Runtime> {
  const root = resolve(functionsDir);
  const target = join(root, versionId);
  const staging = `${target}.tmp-${randomBytes(4).toString("hex")}`;
  await mkdir(staging, { recursive: true, mode: 0o700 });
  try {
    for (const file of source.files) {
      const path = resolve(staging, file.path);
      // The spec's path pattern already rules out `..` and absolute paths; this keeps it true whatever the input.
      if (!path.startsWith(`${staging}${sep}`)) throw new Error(`file path ${file.path} leaves the function directory`);
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      await writeFile(path, file.content, { mode: 0o600 });
    }
    await rm(target, { recursive: true, force: true });
    await rename(staging, target);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
  return {
    type: "stdio",
    command: process.execPath,
    args: [`--max-old-space-size=${source.memory_mb}`, "--import", EXIT_WITH_PARENT, join(target, source.entrypoint)],
    timeout_ms: source.timeout_ms,
  };
}

/**
 * Preloaded into every function (a `data:` module, so a relocated build needs no file for it): the process exits once
 * the server that started it is gone. A server that shuts down closes its children, but one killed outright
 * (`kill -9`, the OOM killer) cannot, and a function that does not exit when its stdin closes ran on as an orphan
 * (seen in CI: 15 minutes after its server). The parent's pid is compared with the one the child started with, not
 * with 1 (a server may itself be pid 1 in a container), and the timer does not keep the function alive. The
 * entrypoint stays the main module (`process.argv[1]`), as functions that check whether they are main expect.
 */
const EXIT_WITH_PARENT = `data:text/javascript,${encodeURIComponent(
  "const parent = process.ppid; setInterval(() => { if (process.ppid !== parent) process.exit(0); }, 1000).unref();",
)}`;
