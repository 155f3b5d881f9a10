// What other packages (contract tests, benchmarks) use to run the real server in-process.
export { type AppDeps, createApp } from "./app.ts";
export { createApiKey, createInstance } from "./auth/api-keys.ts";
export { ensureFirstInstance, openMigratedDatabase } from "./bootstrap.ts";
export { loadCatalog } from "./catalog/loader.ts";
export { type Config, loadConfig } from "./config.ts";
export type { RequestContext } from "./context.ts";
export { type DatabaseHandle, type Db, openDatabase } from "./db/database.ts";
export { migrate } from "./db/migrate.ts";
export { claimIdempotencyKey, hashRequest } from "./http/idempotency.ts";
export { createLogger } from "./http/logging.ts";
export { createHttpServer } from "./http/server.ts";
export { newId } from "./lib/ids.ts";
export { loadSecretKeys, SecretBox } from "./secrets/secret-box.ts";
export { bundledSpec } from "./spec.ts";
