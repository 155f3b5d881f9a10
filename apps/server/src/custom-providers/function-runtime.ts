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
    args: [`--max-old-space-size=${source.memory_mb}`, join(target, source.entrypoint)],
    timeout_ms: source.timeout_ms,
  };
}
