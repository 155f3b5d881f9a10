import { maskUrlCredentials } from "@toolplane/server-stubs";
import type { Config } from "./config.ts";
import { ConfigError } from "./config.ts";
import { isDatabaseUnavailable } from "./lib/db-errors.ts";

/** File system failures on the data directory (or the secret key file in it). */
const FILE_ERRORS = new Set(["EACCES", "EPERM", "EROFS", "ENOTDIR", "ENOSPC", "EEXIST", "EISDIR"]);

/**
 * One line saying what is wrong at start-up and which setting or resource to fix, instead of a stack trace: main
 * prints it to stderr and exits with status 1.
 */
export function describeStartupError(err: unknown, config: Partial<Config> = {}): string {
  const e = (err ?? {}) as NodeJS.ErrnoException & { address?: string; port?: number };
  const where = `${config.host ?? e.address}:${config.port ?? e.port}`;
  if (err instanceof ConfigError) return err.message;
  if (e.syscall === "listen") {
    if (e.code === "EADDRINUSE")
      return `PORT: ${where} is already in use (another server running?); choose another PORT`;
    if (e.code === "EACCES") return `PORT: no permission to listen on ${where}; use a port above 1023`;
    if (e.code === "EADDRNOTAVAIL" || e.code === "ENOTFOUND")
      return `HOST: ${config.host} is not an address of this machine`;
    return `cannot listen on ${where}: ${e.code ?? e.message}`;
  }
  if (config.databaseUrl) {
    const url = maskUrlCredentials(config.databaseUrl);
    if (isDatabaseUnavailable(err)) {
      return `DATABASE_URL: cannot reach the database at ${url} (${e.code ?? firstLine(e.message)})`;
    }
    // SQLSTATE 28xxx (authentication), 3D000 (no such database): the server answered but refused.
    if (typeof e.code === "string" && /^(28...|3D000)$/.test(e.code)) {
      return `DATABASE_URL: the database at ${url} refused the connection: ${firstLine(e.message)}`;
    }
  }
  if (typeof e.code === "string" && FILE_ERRORS.has(e.code) && e.path) {
    return `TOOLPLANE_DATA_DIR: cannot write ${e.path} (${e.code}); it must be a writable directory`;
  }
  return firstLine(maskUrlCredentials(e instanceof Error ? e.message : String(err)));
}

const firstLine = (text: string) => text.split("\n", 1)[0] ?? text;
