import { isAbsolute, join, resolve } from "node:path";
import { maskUrlCredentials } from "@toolplane/server-stubs";
import { BUILTIN_CATALOG_DIR } from "./catalog/loader.ts";

export interface Config {
  host: string;
  port: number;
  /** Where links to this server (session URLs, OAuth pages) point; defaults to http://host:port. */
  publicUrl: string;
  /** `postgres://…` for PostgreSQL; unset means embedded PGlite in `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Catalog directories loaded at start: the built-in one, then TOOLPLANE_CATALOG_DIRS (colon-separated). */
  catalogDirs: string[];
  bodyLimitBytes: number;
  logLevel: string;
  shutdownTimeoutMs: number;
  /** An MCP registry the server imports from at start and every `registryIntervalS` (TOOLPLANE_REGISTRY_URL). */
  registryUrl: string | undefined;
  registryIntervalS: number;
}

/** Reads the configuration from environment variables; every value has a default that works on a laptop. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = env.HOST ?? "127.0.0.1";
  const port = integer(env, "PORT", 8080, 0, 65535);
  // pnpm runs package scripts in the package folder; INIT_CWD is where the user typed the command.
  const base = env.INIT_CWD ?? process.cwd();
  const dataDir = env.TOOLPLANE_DATA_DIR ?? "./.data";
  return {
    host,
    port,
    publicUrl: env.TOOLPLANE_PUBLIC_URL ? publicUrl(env.TOOLPLANE_PUBLIC_URL) : `http://${host}:${port}`,
    databaseUrl: databaseUrl(env.DATABASE_URL),
    dataDir: isAbsolute(dataDir) ? dataDir : resolve(join(base, dataDir)),
    catalogDirs: [
      BUILTIN_CATALOG_DIR,
      ...(env.TOOLPLANE_CATALOG_DIRS ?? "")
        .split(":")
        .filter(Boolean)
        .map((d) => (isAbsolute(d) ? d : resolve(join(base, d)))),
    ],
    bodyLimitBytes: integer(env, "TOOLPLANE_BODY_LIMIT_BYTES", 1024 * 1024, 1024, 64 * 1024 * 1024),
    logLevel: logLevel(env.LOG_LEVEL),
    shutdownTimeoutMs: integer(env, "TOOLPLANE_SHUTDOWN_TIMEOUT_MS", 10_000, 0, 600_000),
    registryUrl: env.TOOLPLANE_REGISTRY_URL ? registryUrl(env.TOOLPLANE_REGISTRY_URL) : undefined,
    registryIntervalS: integer(env, "TOOLPLANE_REGISTRY_INTERVAL_S", 3600, 60, 7 * 24 * 3600),
  };
}

/** A configuration value that is wrong: main prints the message (which names the variable) and exits. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

function logLevel(raw: string | undefined): string {
  if (!raw) return "info";
  if (!LOG_LEVELS.includes(raw))
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${raw}"`);
  return raw;
}

function databaseUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const shown = maskUrlCredentials(raw);
  if (!URL.canParse(raw)) {
    throw new ConfigError(`DATABASE_URL must be a postgres://user:password@host:port/database URL, got "${shown}"`);
  }
  const { protocol } = new URL(raw);
  if (protocol !== "postgres:" && protocol !== "postgresql:") {
    throw new ConfigError(`DATABASE_URL must start with postgres:// or postgresql://, got "${shown}"`);
  }
  return raw;
}

function publicUrl(raw: string): string {
  if (!URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol)) {
    throw new ConfigError(`TOOLPLANE_PUBLIC_URL must be an absolute http or https URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, "");
}

function registryUrl(raw: string): string {
  if (!URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol)) {
    throw new ConfigError(
      `TOOLPLANE_REGISTRY_URL must be an absolute http or https URL, got "${maskUrlCredentials(raw)}"`,
    );
  }
  return raw;
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}
