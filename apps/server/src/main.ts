import type { Server } from "node:http";
import { join } from "node:path";
import { sql } from "kysely";
import { createApp } from "./app.ts";
import { ensureFirstInstance, openMigratedDatabase } from "./bootstrap.ts";
import { scheduleImports } from "./catalog/registry/import.ts";
import { adminSocketPath, serveAdminSocket } from "./cli/admin-socket.ts";
import { type Config, loadConfig } from "./config.ts";
import { DeployJobRunner } from "./custom-providers/job-runner.ts";
import { createLogger } from "./http/logging.ts";
import { createHttpServer } from "./http/server.ts";
import { answeredRecords } from "./mcp/answered-records.ts";
import { callLeaseMs, callsInFlight, failExpiredCalls } from "./mcp/gateway.ts";
import { tasksFollowed } from "./mcp/task-follower.ts";
import { observeDatabasePool } from "./observability/metrics.ts";
import { startTracing, stopTracing } from "./observability/tracing.ts";
import { endSessionsOfExpiredSignIns } from "./resources/sessions/service.ts";
import { upstreams } from "./runtimes/pool.ts";
import { loadSecretKeys, SecretBox } from "./secrets/secret-box.ts";
import { bundledSpec } from "./spec.ts";
import { describeStartupError } from "./startup-error.ts";

/** Start-up failures end here: one line on stderr naming what to fix, exit status 1, no stack trace. */
function exitOnStartupError(err: unknown, settings?: Config): never {
  process.stderr.write(`toolplane: cannot start: ${describeStartupError(err, settings)}\n`);
  process.exit(1);
}

const config = (() => {
  try {
    return loadConfig();
  } catch (err) {
    return exitOnStartupError(err);
  }
})();
const startupFailed = (err: unknown): never => exitOnStartupError(err, config);
const logger = createLogger(config.logLevel);
const startedAt = performance.now();

const secrets = (() => {
  try {
    return new SecretBox(
      loadSecretKeys(process.env.TOOLPLANE_SECRET_KEY, config.databaseUrl ? undefined : config.dataDir),
    );
  } catch (err) {
    return startupFailed(err);
  }
})();
// OpenTelemetry (off unless OTEL_TRACES_EXPORTER or an OTLP endpoint is set); a bad OTEL_* value stops the start.
if (await startTracing().catch(startupFailed)) logger.info("OpenTelemetry tracing started");
const database = await openMigratedDatabase(config, logger).catch(startupFailed);
observeDatabasePool(database.pool);
const firstKey = await ensureFirstInstance(database).catch(startupFailed);

const app = createApp({
  db: database.db,
  spec: bundledSpec,
  logger,
  publicUrl: config.publicUrl,
  bodyLimitBytes: config.bodyLimitBytes,
  secrets,
  changes: database.changes,
  isReady: async () => {
    await sql`select 1`.execute(database.db);
    return true;
  },
});

// Custom provider deployments (issue 6): the durable job runner lives as long as the server.
const deployJobs = new DeployJobRunner({
  db: database.db,
  secrets,
  functionsDir: join(config.dataDir, "functions"),
  dockerHost: process.env.DOCKER_HOST || undefined,
  logger,
});
await deployJobs.start().catch(startupFailed);

// The embedded database is this process's alone: the CLI runs its commands here, through a socket in the data dir.
const adminSocket =
  database.kind === "pglite"
    ? await serveAdminSocket(
        adminSocketPath(config.dataDir),
        { db: database.db, catalogDirs: config.catalogDirs, secrets: () => secrets },
        logger,
      ).catch((err: unknown) => {
        logger.warn({ err }, "admin socket unavailable: the CLI cannot run while this server holds the data dir");
        return undefined;
      })
    : undefined;

// Tool calls left waiting by a process that died (this one before a crash, or another replica) fail once their
// lease runs out: now, and every third of a lease from here on.
const expiredCallsSweep = async () => {
  const failed = await failExpiredCalls(database.db).catch(() => 0);
  if (failed > 0) logger.warn({ failed }, "failed tool calls whose server process stopped");
  // Portal connections end with the sign-in they were made in (the gateway also ends one it is asked to serve).
  await endSessionsOfExpiredSignIns(database.db).catch(() => []);
};
await expiredCallsSweep();
const expiredCallsSweeper = setInterval(() => void expiredCallsSweep(), Math.max(1_000, callLeaseMs() / 3));
expiredCallsSweeper.unref();

// MCP Registry sync (optional): an incremental import now and every interval, off the request path.
const registrySync = config.registryUrl
  ? scheduleImports(database.db, config.registryUrl, config.registryIntervalS * 1000, logger)
  : null;

const server: Server = createHttpServer(app);
// A port in use used to print "listening" and leave a process that served nothing.
await new Promise<void>((resolve, reject) => {
  server.once("error", reject);
  server.listen(config.port, config.host, () => {
    server.off("error", reject);
    resolve();
  });
}).catch(async (err: unknown) => {
  await deployJobs.stop();
  await database.close();
  startupFailed(err);
});
// Once listening, a server error (running out of file descriptors, say) is logged; it must not end the process.
server.on("error", (err) => logger.error({ err }, "HTTP server error"));

const address = server.address();
const port = typeof address === "object" && address ? address.port : config.port;
const where = database.kind === "pglite" ? `embedded PGlite in ${config.dataDir}` : "PostgreSQL (DATABASE_URL)";
logger.info({ port, database: database.kind, startupMs: Math.round(performance.now() - startedAt) }, "listening");
const lines = [
  "",
  `  Toolplane API listening on http://${config.host}:${port}`,
  `  API reference:          http://${config.host}:${port}/docs`,
  `  Database:               ${where}`,
  "  Catalog providers:      `pnpm catalog list` shows their ids",
  firstKey
    ? `  API key (shown once):   ${firstKey}`
    : "  API key:                created on first start; make another with `pnpm keys create`",
  "",
];
process.stdout.write(`${lines.join("\n")}\n`);

/** How long failed calls get to write their records and answers before connections are cut. */
const FAIL_CALLS_GRACE_MS = 2_000;
let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, "shutting down");
  const force = setTimeout(async () => {
    // Tool calls still running are failed (`shutdown`): their records are completed and their clients answered
    // before the connections close, so no call is left `waiting_for_response`.
    logger.warn({ calls: callsInFlight.size }, "in-flight requests did not finish in time; failing calls and closing");
    await Promise.race([callsInFlight.stopAll(), new Promise((resolve) => setTimeout(resolve, FAIL_CALLS_GRACE_MS))]);
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), FAIL_CALLS_GRACE_MS).unref();
  }, config.shutdownTimeoutMs);
  force.unref();
  server.closeIdleConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  // Calls answered before their records were written (see Gateway.call): their writes end before the database.
  await Promise.race([answeredRecords.written(), new Promise((resolve) => setTimeout(resolve, FAIL_CALLS_GRACE_MS))]);
  // Upstream MCP connections end with the server: stdio children are stopped, not orphaned (and tasks no longer
  // followed: their records keep the status last seen).
  tasksFollowed.stopAll();
  await upstreams.closeAll();
  adminSocket?.close();
  clearInterval(expiredCallsSweeper);
  await registrySync?.stop();
  await deployJobs.stop();
  await database.close();
  await stopTracing().catch((err: unknown) => logger.warn({ err }, "could not export the last spans"));
  logger.info("stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
